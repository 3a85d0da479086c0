/*
** loss.c -- the least-squares loss over target times and outputs, its
** gradient and residual Jacobian from forward sensitivities, with optional
** sigmoid blending across event boundaries (blend.h).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "blend.h"
#include "errors.h"
#include "loss_impl.h"
#include "start.h"
#include "salta.h"
#include "sim_impl.h"
#include "tol.h"


int salta_loss_create(salta_loss **out, salta_model *model, const double *times, int nt,
                      const int *outputs, int nout, const double *data, const double *weights) {
  salta_loss *l;
  int k, j;
  if (!out) return SALTA_EINPUT;
  *out = l = calloc(1, sizeof *l);
  if (!l) return SALTA_EMEM;
  l->model = model;
  l->d = salta_model_def_get(model);
  if (!model || nt <= 0 || nout <= 0 || !times || !outputs || !data)
    return salta__fail(l->err, SALTA_EINPUT, "loss: needs a model, target times, outputs and data");
  l->nt = nt;
  l->nout = nout;
  l->times = malloc(sizeof(double) * (size_t)nt);
  l->data = malloc(sizeof(double) * (size_t)nt * nout);
  l->weights = malloc(sizeof(double) * (size_t)nt * nout);
  l->outputs = malloc(sizeof(int) * (size_t)nout);
  l->coef = malloc(sizeof(double) * (size_t)nt * nout);
  if (!l->times || !l->data || !l->weights || !l->outputs || !l->coef || salta_sim_create(&l->sim, model) ||
      salta_sim_create(&l->vsim, model) || salta__dae_init(&l->dae, l->d, l->err))
    return salta__fail(l->err, SALTA_EMEM, "out of memory");
  memcpy(l->times, times, sizeof(double) * (size_t)nt);
  memcpy(l->data, data, sizeof(double) * (size_t)nt * nout);
  for (j = 0; j < nout; ++j) {
    if (outputs[j] < 0 || outputs[j] >= l->d->ny)
      return salta__fail(l->err, SALTA_EINPUT, "model '%s': loss output %d is not an output (model has %d)",
                         l->d->name, outputs[j], l->d->ny);
    l->outputs[j] = outputs[j];
    if (weights && !isfinite(weights[j]))
      return salta__fail(l->err, SALTA_EINPUT, "model '%s': weight of output '%s' is %g",
                         l->d->name, l->d->y_names[outputs[j]], weights[j]);
    for (k = 0; k < nt; ++k) l->weights[(size_t)k * nout + j] = weights ? weights[j] : 1.0;
  }
  for (k = 0; k < nt; ++k) {
    if (!isfinite(times[k]) || (k > 0 && times[k] < times[k - 1]))
      return salta__fail(l->err, SALTA_EINPUT, "model '%s': target time %d (%g) is not finite and sorted",
                         l->d->name, k + 1, times[k]);
    for (j = 0; j < nout; ++j)
      if (isfinite(data[(size_t)k * nout + j])) l->nres++;
      else if (!isnan(data[(size_t)k * nout + j]))
        return salta__fail(l->err, SALTA_EINPUT, "model '%s': datum for '%s' at t = %g is %g (use NaN for missing)",
                           l->d->name, l->d->y_names[outputs[j]], times[k], data[(size_t)k * nout + j]);
  }
  if (l->nres == 0) return salta__fail(l->err, SALTA_EINPUT, "model '%s': the loss has no data", l->d->name);
  salta_sim_options_init(&l->opts, times[0] < 0 ? times[0] : 0.0, times[nt - 1] > 0 ? times[nt - 1] : 1.0);
  return SALTA_OK;
}

void salta_loss_free(salta_loss **loss) {
  salta_loss *l;
  if (!loss || !*loss) return;
  l = *loss;
  salta_sim_free(&l->sim);
  salta_sim_free(&l->vsim);
  if (l->dae.d) salta__dae_free(&l->dae);
  free(l->times); free(l->data); free(l->weights); free(l->outputs); free(l->coef); free(l->dirs);
  free(l);
  *loss = NULL;
}

const char *salta_loss_errmsg(const salta_loss *l) { return l ? l->err : "no loss"; }
int salta_loss_nresid(const salta_loss *l) { return l ? l->nres : 0; }
salta_sim *salta_loss_sim(salta_loss *l) { return l ? l->last : NULL; }

int salta_loss_set_options(salta_loss *l, const salta_sim_options *o) {
  int st;
  if (!l) return SALTA_EINPUT;
  if (!o) return salta__fail(l->err, SALTA_EINPUT, "loss: salta_loss_set_options needs options");
  if ((st = salta__sim_check_options(o, l->d, l->err))) return st;
  if (o->atol_vec)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': a loss takes a scalar atol (atol_vec is borrowed)", l->d->name);
  if (o->t0 > l->times[0] || o->tf < l->times[l->nt - 1])
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': target times [%g, %g] lie outside [t0, tf] = [%g, %g]",
                       l->d->name, l->times[0], l->times[l->nt - 1], o->t0, o->tf);
  l->opts = *o;
  return SALTA_OK;
}

int salta_loss_set_blend(salta_loss *l, double beta) {
  if (!l) return SALTA_EINPUT;
  if (!(beta >= 0) || !isfinite(beta))
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': blend (the sigmoid sharpness) must be a finite number >= 0, got %g",
                       l->d->name, beta);
  l->beta = beta;
  return SALTA_OK;
}

int salta_loss_set_free(salta_loss *l, const int *dirs, int ns) {
  int st;
  if (!l) return SALTA_EINPUT;
  int *copy = ns > 0 ? malloc(sizeof(int) * (size_t)ns) : NULL;
  if (ns > 0 && !copy) return salta__fail(l->err, SALTA_EMEM, "out of memory");
  if ((st = salta_sim_set_sens(l->sim, dirs, ns))) {
    free(copy);
    return salta__fail(l->err, st, "%s", salta_sim_errmsg(l->sim));
  }
  if (ns > 0) memcpy(copy, dirs, sizeof(int) * (size_t)ns);
  free(l->dirs);
  l->dirs = copy;   /* the loss and its simulation agree on the directions */
  l->ns = ns;
  return SALTA_OK;
}

/* ---- blending -------------------------------------------------------------- */

/* Segment boundaries: b[0] = t0, one per event group, b[nb-1] = tf;
** rec[i] is the event record of boundary i (or -1). */
static int boundaries(salta_loss *l, double *b, int *rec) {
  salta_sim_stats st;
  int k, nb = 0, nev = salta_sim_nevents(l->last);
  b[nb] = l->opts.t0, rec[nb++] = -1;
  for (k = 0; k < nev; ++k) {
    salta_event_record r;
    salta_sim_event(l->last, k, &r);
    if (r.group == k) b[nb] = r.t, rec[nb++] = k;
  }
  salta_sim_stats_get(l->last, &st);
  b[nb] = st.t_end, rec[nb++] = -1;   /* tf, or where a terminal event ended the run */
  return nb;
}

/* Output yi at the state (t, x, z) of an event record side. */
static double output_at(salta_loss *l, int yi, double t, const double *x, const double *z, double *yv) {
  salta_model_eval(l->model, SALTA_FN_H, 0, t, x, z, l->p, yv);
  return yv[yi];
}

/* The blended prediction of the loss's output j at target k, where the
** run gives yq and (unless NULL) its derivatives dyq (ns), and its own
** derivative (ns values, when dyh != NULL). tmp: 2 ns + ny doubles. */
static double blended(salta_loss *l, int k, int j, double yq, const double *dyq, const double *b, const int *rec,
                      int nb, double *dyh, double *tmp) {
  salta_sim *sim = l->last;
  int ns = l->ns, seg, i, ny = l->d->ny, yi = l->outputs[j];
  double T = l->times[k], A = 0, B = 0;
  double *dA = tmp, *dB = tmp + ns, *yv = tmp + 2 * ns;
  if (dyh) memset(tmp, 0, sizeof(double) * 2 * (size_t)ns);
  for (seg = 0; seg + 1 < nb; ++seg) {
    double a = b[seg], e = b[seg + 1], dw_da, dw_de, v;
    double w = salta__blend_weight(l->beta, T, a, e, &dw_da, &dw_de);
    const double *dv = dyq, *ta = NULL, *te = NULL;
    size_t stride = 1;
    salta_event_sens ra, re;
    salta_event_record r;
    if (dyh && rec[seg] >= 0 && salta_sim_event_sens(sim, rec[seg], &ra) == SALTA_OK) ta = ra.tau_p;
    if (dyh && rec[seg + 1] >= 0 && salta_sim_event_sens(sim, rec[seg + 1], &re) == SALTA_OK) te = re.tau_p;
    if (T < a) {                          /* clipped to the segment's start */
      salta_sim_event(sim, rec[seg], &r);
      {
        salta_event_record last;         /* the group's last record has x+ */
        salta_sim_event(sim, r.group + r.group_size - 1, &last);
        v = output_at(l, yi, last.t, last.x_plus, last.z_plus, yv);
      }
      if (dyh) dv = ra.dy_plus + yi, stride = (size_t)ny;
    } else if (T >= e && seg + 2 < nb) {  /* clipped to its end */
      salta_sim_event(sim, rec[seg + 1], &r);
      v = output_at(l, yi, r.t, r.x_minus, r.z_minus, yv);
      if (dyh) dv = re.dy_minus + yi, stride = (size_t)ny;
    } else {
      v = yq;
    }
    A += w * v;
    B += w;
    if (dyh) {
      for (i = 0; i < ns; ++i) {
        double dw = 0;
        if (ta) dw += dw_da * ta[i];
        if (te) dw += dw_de * te[i];
        dA[i] += dw * v + w * dv[(size_t)i * stride];
        dB[i] += dw;
      }
    }
  }
  B += SALTA_BLEND_FLOOR;
  if (dyh)
    for (i = 0; i < ns; ++i) dyh[i] = (dA[i] - A / B * dB[i]) / B;
  return A / B;
}

/* ---- evaluation -------------------------------------------------------------- */

/* The prediction of the loss's output j at target k, where the run gives
** y (its planned outputs) and dy (their derivatives, unless NULL), and its
** derivative (ns values into dyh, unless NULL). */
static double prediction(salta_loss *l, int k, int j, const double *y, const double *dy, const double *b,
                         const int *rec, int nb, double *dyh, double *tmp) {
  const double *dyq = dy ? dy + (size_t)j * l->ns : NULL;
  if (l->beta > 0) return blended(l, k, j, y[j], dyq, b, rec, nb, dyh, tmp);
  if (dyh) memcpy(dyh, dyq, sizeof(double) * (size_t)l->ns);
  return y[j];
}

/* The loss's outputs at target k of the last run, and their derivatives
** (NULL without need_sens). */
static void target_outputs(const salta_loss *l, int k, int need_sens, const double **y, const double **dy) {
  salta__sim_planned_out(l->last, k, y, dy);
  if (!need_sens) *dy = NULL;
}

/* A residual or one of its derivatives came out non-finite: the first one,
** by output, time and direction. */
static int nonfinite_error(salta_loss *l, const double *b, const int *rec, int nb, double *dyh, double *tmp,
                           double scale, int need_sens) {
  const salta_model_def *d = l->d;
  int k, j, i;
  for (k = 0; k < l->nk; ++k) {
    const double *y, *dy;
    target_outputs(l, k, need_sens, &y, &dy);
    for (j = 0; j < l->nout; ++j) {
      double pred;
      int yi = l->outputs[j];
      if (isnan(l->data[(size_t)k * l->nout + j])) continue;
      pred = prediction(l, k, j, y, dy, b, rec, nb, need_sens ? dyh : NULL, tmp);
      if (!isfinite(pred))
        return salta__fail(l->err, SALTA_ESOLVER, "model '%s': output '%s' is %g at t = %g", d->name,
                           d->y_names[yi], pred, l->times[k]);
      for (i = 0; i < l->ns && need_sens; ++i) {
        char cause[512];
        double dr = l->weights[(size_t)k * l->nout + j] * scale * dyh[i];
        if (isfinite(dr)) continue;
        salta__dae_bad_text(&l->sim->dae, cause, sizeof cause);
        return salta__fail(l->err, SALTA_ESOLVER,
                           "model '%s': the derivative of output '%s' at t = %g by %s '%s' is %g%s%s", d->name,
                           d->y_names[yi], l->times[k], l->dirs[i] >= 0 ? "parameter" : "the initial value of",
                           l->dirs[i] >= 0 ? d->p_names[l->dirs[i]] : d->x_names[-l->dirs[i] - 1], dr,
                           cause[0] ? ": " : "", cause);
      }
    }
  }
  return salta__fail(l->err, SALTA_ESOLVER, "model '%s': the loss is not finite (a weight or datum too large)",
                     d->name);
}

/* The sum of squared residuals of an unblended loss, and coef. */
static double residual_sum(salta_loss *l, double scale) {
  double L = 0;
  int k, j;
  for (k = l->nk * l->nout; k < l->nt * l->nout; ++k) l->coef[k] = 0;
  for (k = 0; k < l->nk; ++k) {
    const double *y, *dy, *data = l->data + (size_t)k * l->nout;
    double *coef = l->coef + (size_t)k * l->nout;
    salta__sim_planned_out(l->last, k, &y, &dy);
    for (j = 0; j < l->nout; ++j) {
      double ws = l->weights[(size_t)k * l->nout + j] * scale, r;
      if (isnan(data[j])) {
        coef[j] = 0;
        continue;
      }
      r = ws * (y[j] - data[j]);
      L += r * r;
      coef[j] = 2 * r * ws;
    }
  }
  return L;
}

/* The same with blending, residuals or their Jacobian (m x ns, m the
** finite data); a blended loss's gradient is added up here too. */
static double residual_sum_full(salta_loss *l, double scale, int need_sens, double *grad, double *resid, double *jac,
                                const double *b, const int *rec, int nb, double *dyh, double *tmp) {
  double L = 0;
  int k, j, i, m = 0, ns = l->ns;
  for (k = 0; k < l->nk; ++k) {
    const double *y, *dy;
    target_outputs(l, k, need_sens, &y, &dy);
    for (j = 0; j < l->nout; ++j) {
      size_t kj = (size_t)k * l->nout + j;
      double datum = l->data[kj], ws = l->weights[kj] * scale, r;
      l->coef[kj] = 0;
      if (isnan(datum)) continue;
      r = ws * (prediction(l, k, j, y, dy, b, rec, nb, jac || (grad && l->beta > 0) ? dyh : NULL, tmp) - datum);
      L += r * r;
      l->coef[kj] = 2 * r * ws;
      if (resid) resid[m] = r;
      if (jac)
        for (i = 0; i < ns; ++i) jac[(size_t)m * ns + i] = ws * dyh[i];
      if (grad && l->beta > 0)
        for (i = 0; i < ns; ++i) grad[i] += l->coef[kj] * dyh[i];
      ++m;
    }
  }
  /* targets past a terminal event: zero residuals */
  for (; k < l->nt; ++k)
    for (j = 0; j < l->nout; ++j) {
      size_t kj = (size_t)k * l->nout + j;
      l->coef[kj] = 0;
      if (isnan(l->data[kj])) continue;
      if (resid) resid[m] = 0;
      if (jac) memset(jac + (size_t)m * ns, 0, sizeof(double) * (size_t)ns);
      ++m;
    }
  return L;
}

/* grad = sum over the data of coef times the prediction's derivative, over
** the run's planned derivatives, four directions at a time in independent
** sums (each in the data's order, as a running sum per residual adds them). */
static void gradient(const salta_loss *l, double *grad) {
  const double *y, *dy;
  size_t kj, n = (size_t)l->nk * l->nout, ns = (size_t)l->ns, i0;
  salta__sim_planned_out(l->last, 0, &y, &dy);   /* the rows of every target, contiguous */
  for (i0 = 0; i0 < ns; i0 += 4) {
    double g0 = 0, g1 = 0, g2 = 0, g3 = 0;
    size_t width = ns - i0 < 4 ? ns - i0 : 4;
    for (kj = 0; kj < n; ++kj) {
      const double c = l->coef[kj], *d = dy + kj * ns + i0;
      if (c == 0 && isnan(l->data[kj])) continue;
      switch (width) {
        case 4: g3 += c * d[3]; /* fall through */
        case 3: g2 += c * d[2]; /* fall through */
        case 2: g1 += c * d[1]; /* fall through */
        default: g0 += c * d[0];
      }
    }
    grad[i0] = g0;
    if (width > 1) grad[i0 + 1] = g1;
    if (width > 2) grad[i0 + 2] = g2;
    if (width > 3) grad[i0 + 3] = g3;
  }
}

/* The targets the last run reached: all, or those up to its terminal
** event when the loss drops the others; else an error naming the first
** one past the end. */
int salta__loss_check_reach(salta_loss *l) {
  salta_sim_stats st;
  l->nk = salta_sim_nout(l->last);
  if (l->nk >= l->nt || l->drop_after_end) return SALTA_OK;
  salta_sim_stats_get(l->last, &st);
  return salta__fail(l->err, SALTA_EINPUT,
                     "model '%s': terminal event '%s' ended the run at t = %.17g, before target time %d (t = %g): "
                     "end the targets there, or drop the targets after the end (salta.lsq option after_end = "
                     "\"drop\"; C: salta_loss_set_drop_after_end)",
                     l->d->name, st.terminal_event >= 0 ? l->d->e_names[st.terminal_event] : "?", st.t_end, l->nk + 1,
                     l->times[l->nk]);
}

int salta_loss_set_datum_weights(salta_loss *l, const double *w) {
  size_t kj, n;
  if (!l) return SALTA_EINPUT;
  n = (size_t)l->nt * l->nout;
  for (kj = 0; w && kj < n; ++kj)
    if (!(w[kj] >= 0) || !isfinite(w[kj]))
      return salta__fail(l->err, SALTA_EINPUT, "model '%s': the weight of the datum of '%s' at t = %g is %g",
                         l->d->name, l->d->y_names[l->outputs[kj % l->nout]], l->times[kj / l->nout], w[kj]);
  for (kj = 0; w && kj < n; ++kj) l->weights[kj] *= w[kj];
  return SALTA_OK;
}

int salta_loss_set_drop_after_end(salta_loss *l, int drop) {
  if (!l) return SALTA_EINPUT;
  l->drop_after_end = drop != 0;
  return SALTA_OK;
}

int salta_loss_eval(salta_loss *l, const double *p, const double *x0, double *value,
                    double *grad, double *resid, double *jac) {
  int need_sens = (grad || jac), st, nb = 0, ns;
  double scale, *dyh = NULL, *tmp, *b = NULL, L = 0;
  int *rec = NULL;
  salta__out_plan plan;
  if (!l) return SALTA_EINPUT;
  if (!p) return salta__fail(l->err, SALTA_EINPUT, "model '%s': salta_loss_eval needs parameters", l->d->name);
  ns = l->ns;
  if (need_sens && ns == 0)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': no free parameters for a gradient", l->d->name);
  l->last = need_sens ? l->sim : l->vsim;
  l->p = p;
  plan.y = l->outputs, plan.ny = l->nout, plan.event_outputs = l->beta > 0;
  if ((st = salta__sim_run_planned(l->last, &l->opts, p, x0, l->times, l->nt, &plan)))
    return salta__fail(l->err, st, "%s", salta_sim_errmsg(l->last));
  if ((st = salta__loss_check_reach(l))) return st;
  if (l->beta > 0) {
    int nev = salta_sim_nevents(l->last);
    b = malloc(sizeof(double) * (size_t)(nev + 2));
    rec = malloc(sizeof(int) * (size_t)(nev + 2));
    if (!b || !rec) { st = salta__fail(l->err, SALTA_EMEM, "out of memory"); goto done; }
    nb = boundaries(l, b, rec);
  }
  dyh = malloc(sizeof(double) * (size_t)(3 * ns + l->d->ny + 1));
  if (!dyh) { st = salta__fail(l->err, SALTA_EMEM, "out of memory"); goto done; }
  tmp = dyh + ns;
  if (grad) memset(grad, 0, sizeof(double) * (size_t)ns);
  scale = 1.0 / sqrt((double)l->nres);
  if (!(l->beta > 0) && !jac && !resid) L = residual_sum(l, scale);
  else L = residual_sum_full(l, scale, need_sens, grad, resid, jac, b, rec, nb, dyh, tmp);
  if (grad && !(l->beta > 0)) gradient(l, grad);
  /* a NaN or infinity anywhere reaches L or the gradient (or the Jacobian) */
  if (!isfinite(L) || (grad && !salta__all_finite(grad, (size_t)ns)) ||
      (jac && !grad && !salta__all_finite(jac, (size_t)l->nres * ns))) {
    st = nonfinite_error(l, b, rec, nb, dyh, tmp, scale, need_sens);
    goto done;
  }
  if (value) *value = L;
done:
  free(dyh);
  free(b);
  free(rec);
  l->p = NULL;
  return st;
}

/* The gradient by central differences of the value (the "fd" route, for
** checking): steps h (relative, scaled by max(1, |v|)) and 2h combined by
** one Richardson step, (4 D(h) - D(2h)) / 3. */
/* The Richardson central differences of direction k: (4 D(s) - D(2s)) / 3
** into *r1, and, unless r2 is NULL, (4 D(s/2) - D(s)) / 3 into *r2, with
** D(w) = (L(p + w e_k) - L(p - w e_k)) / 2w and the step s of
** salta_loss_grad_fd. pp and xx: scratch (np and nx). */
static int richardson(salta_loss *l, const double *p, const double *x0, int k, double h, double *pp, double *xx,
                      double *r1, double *r2) {
  static const double steps[6] = {1, -1, 2, -2, 0.5, -0.5};
  const salta_model_def *d = l->d;
  int dir = l->dirs[k], i, st, n = r2 ? 6 : 4;
  double base, step, v[6];
  /* a parameter moves the start with it when the start follows p; a
  ** start value moves alone */
  if (dir < 0 && (st = salta__start_values(d, l->opts.t0, p, x0, xx, l->err))) return st;
  base = dir >= 0 ? p[dir] : xx[-dir - 1];
  step = fmax(fabs(base), fabs(dir >= 0 ? d->p_nominal[dir] : d->x_start[-dir - 1]));   /* relative, nominal floor */
  step = h * (step > 0 ? step : 1);
  for (i = 0; i < n; ++i) {
    memcpy(pp, p, sizeof(double) * (size_t)d->np);
    if (dir >= 0) pp[dir] = base + steps[i] * step, st = salta_loss_eval(l, pp, x0, &v[i], NULL, NULL, NULL);
    else xx[-dir - 1] = base + steps[i] * step, st = salta_loss_eval(l, pp, xx, &v[i], NULL, NULL, NULL);
    if (st) return st;
  }
  *r1 = (4 * (v[0] - v[1]) / (2 * step) - (v[2] - v[3]) / (4 * step)) / 3;
  if (r2) *r2 = (4 * (v[4] - v[5]) / step - (v[0] - v[1]) / (2 * step)) / 3;
  return SALTA_OK;
}

/* The differences of every direction into r1 (and r2, err unless NULL). */
static int differences(salta_loss *l, const double *p, const double *x0, double h, double *r1, double *r2,
                       double *err) {
  const salta_model_def *d;
  double *pp;
  int k, st = SALTA_OK;
  if (!l) return SALTA_EINPUT;
  d = l->d;
  if (!p || !r1) return salta__fail(l->err, SALTA_EINPUT, "model '%s': a difference gradient needs parameters and room for it", d->name);
  if (!(h > 0) || !isfinite(h))
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': the difference step h must be a finite number > 0, got %g", d->name, h);
  if (l->ns == 0)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': no free parameters for a gradient", d->name);
  if (!(pp = malloc(sizeof(double) * (size_t)(d->np + d->nx + 1)))) return salta__fail(l->err, SALTA_EMEM, "out of memory");
  for (k = 0; k < l->ns && st == SALTA_OK; ++k) {
    st = richardson(l, p, x0, k, h, pp, pp + d->np, &r1[k], r2 ? &r2[k] : NULL);
    if (st == SALTA_OK && err) err[k] = fabs(r1[k] - r2[k]);
  }
  free(pp);
  return st;
}

int salta_loss_grad_fd(salta_loss *l, const double *p, const double *x0, double h, double *grad) {
  return differences(l, p, x0, h, grad, NULL, NULL);
}

int salta_loss_check_gradient(salta_loss *l, const double *p, const double *x0, double h, double *grad,
                              double *ref, double *err) {
  double *coarse;
  int st;
  if (!l) return SALTA_EINPUT;
  if (!grad || !ref || !err)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': salta_loss_check_gradient needs room for both gradients "
                       "and the error", l->d->name);
  if (!(coarse = malloc(sizeof(double) * ((size_t)l->ns + 1)))) return salta__fail(l->err, SALTA_EMEM, "out of memory");
  st = differences(l, p, x0, h, coarse, ref, err);
  free(coarse);
  if (st) return st;
  return salta_loss_eval(l, p, x0, NULL, grad, NULL, NULL);
}
