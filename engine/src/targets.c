/*
** targets.c -- the targets, data and weights of a least-squares loss, its
** robust loss and event windows, and the blending of predictions across
** event boundaries (see targets.h).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "targets.h"
#include "wide.h"

static int check_data(salta__targets *tg, const double *weights, char *err) {
  const salta_model_def *d = tg->d;
  int k, j;
  for (j = 0; j < tg->nout; ++j) {
    if (tg->outputs[j] < 0 || tg->outputs[j] >= d->ny)
      return salta__fail(err, SALTA_EINPUT, "model '%s': loss output %d is not an output (model has %d)", d->name,
                         tg->outputs[j], d->ny);
    if (weights && !isfinite(weights[j]))
      return salta__fail(err, SALTA_EINPUT, "model '%s': weight of output '%s' is %g", d->name,
                         d->y_names[tg->outputs[j]], weights[j]);
    for (k = 0; k < tg->nt; ++k) tg->weights[(size_t)k * tg->nout + j] = weights ? weights[j] : 1.0;
  }
  for (k = 0; k < tg->nt; ++k) {
    if (!isfinite(tg->times[k]) || (k > 0 && tg->times[k] < tg->times[k - 1]))
      return salta__fail(err, SALTA_EINPUT, "model '%s': target time %d (%g) is not finite and sorted", d->name, k + 1,
                         tg->times[k]);
    for (j = 0; j < tg->nout; ++j) {
      double v = tg->data[(size_t)k * tg->nout + j];
      if (isfinite(v)) tg->nres++;
      else if (!isnan(v))
        return salta__fail(err, SALTA_EINPUT, "model '%s': datum for '%s' at t = %g is %g (use NaN for missing)",
                           d->name, d->y_names[tg->outputs[j]], tg->times[k], v);
    }
  }
  if (tg->nt > 0 && tg->nres == 0) return salta__fail(err, SALTA_EINPUT, "model '%s': the loss has no data", d->name);
  tg->nres_out = tg->nres;
  tg->scale = tg->nres > 0 ? 1.0 / sqrt((double)tg->nres) : 1.0;
  return SALTA_OK;
}

int salta__targets_init(salta__targets *tg, const salta_model_def *d, const double *times, int nt,
                        const int *outputs, int nout, const double *data, const double *weights, char *err) {
  size_t cells = (size_t)nt * (size_t)nout;
  memset(tg, 0, sizeof *tg);
  tg->d = d;
  /* nt = 0: no targets, the data are event times (salta_loss_set_event_data) */
  if (!d || nt < 0 || (nt > 0 && (nout <= 0 || !times || !outputs || !data)))
    return salta__fail(err, SALTA_EINPUT, "loss: needs a model, target times, outputs and data");
  if (nt == 0) nout = 0, cells = 0;
  tg->nt = nt;
  tg->nout = nout;
  tg->times = malloc(sizeof(double) * ((size_t)nt + 1));
  tg->outputs = malloc(sizeof(int) * ((size_t)nout + 1));
  tg->data = malloc(sizeof(double) * (cells + 1));
  tg->weights = malloc(sizeof(double) * (cells + 1));
  if (!tg->times || !tg->outputs || !tg->data || !tg->weights) return salta__fail(err, SALTA_EMEM, "out of memory");
  if (nt == 0) return check_data(tg, NULL, err);
  memcpy(tg->times, times, sizeof(double) * (size_t)nt);
  memcpy(tg->outputs, outputs, sizeof(int) * (size_t)nout);
  memcpy(tg->data, data, sizeof(double) * cells);
  return check_data(tg, weights, err);
}

void salta__targets_free(salta__targets *tg) {
  free(tg->ed);
  free(tg->fires);
  free(tg->times);
  free(tg->outputs);
  free(tg->data);
  free(tg->weights);
  free(tg->win_jumps);
  memset(tg, 0, sizeof *tg);
}

int salta__targets_set_datum_weights(salta__targets *tg, const double *w, char *err) {
  size_t kj, n = (size_t)tg->nt * tg->nout;
  for (kj = 0; w && kj < n; ++kj)
    if (!(w[kj] >= 0) || !isfinite(w[kj]))
      return salta__fail(err, SALTA_EINPUT, "model '%s': the weight of the datum of '%s' at t = %g is %g", tg->d->name,
                         tg->d->y_names[tg->outputs[kj % tg->nout]], tg->times[kj / tg->nout], w[kj]);
  for (kj = 0; w && kj < n; ++kj) tg->weights[kj] *= w[kj];
  return SALTA_OK;
}

int salta__targets_set_event_data(salta__targets *tg, const int *event, const double *time, const double *w, int n,
                                  char *err) {
  const salta_model_def *d = tg->d;
  salta__event_datum *ed;
  int i, q, nfinite = 0;
  if (n < 0 || (n > 0 && (!event || !time)))
    return salta__fail(err, SALTA_EINPUT, "model '%s': event data need n >= 0 events and times, got n = %d", d->name, n);
  for (i = 0; i < n; ++i) {
    if (event[i] < 0 || event[i] >= d->ne)
      return salta__fail(err, SALTA_EINPUT, "model '%s': event datum %d names event %d, but the model has %d events",
                         d->name, i + 1, event[i], d->ne);
    if (!isfinite(time[i]) && !isnan(time[i]))
      return salta__fail(err, SALTA_EINPUT, "model '%s': the time of event '%s' in datum %d is %g (use NaN for a "
                         "firing not measured)", d->name, d->e_names[event[i]], i + 1, time[i]);
    if (w && (!(w[i] >= 0) || !isfinite(w[i])))
      return salta__fail(err, SALTA_EINPUT, "model '%s': the weight of event '%s' at t = %g (datum %d) is %g",
                         d->name, d->e_names[event[i]], time[i], i + 1, w[i]);
    for (q = i - 1; q >= 0 && !isnan(time[i]); --q)   /* the k-th datum of an event is its k-th firing */
      if (event[q] == event[i] && !isnan(time[q])) {
        if (time[q] > time[i])
          return salta__fail(err, SALTA_EINPUT, "model '%s': the times of event '%s' must increase (the k-th is "
                             "matched with its k-th firing), but %g (datum %d) follows %g (datum %d)", d->name,
                             d->e_names[event[i]], time[i], i + 1, time[q], q + 1);
        break;
      }
    nfinite += !isnan(time[i]);
  }
  if (!tg->fires && !(tg->fires = malloc(sizeof(int) * ((size_t)d->ne + 1))))
    return salta__fail(err, SALTA_EMEM, "out of memory");
  if (!(ed = malloc(sizeof *ed * ((size_t)n + 1)))) return salta__fail(err, SALTA_EMEM, "out of memory");
  memset(tg->fires, 0, sizeof(int) * (size_t)d->ne);
  for (i = 0; i < n; ++i) {
    ed[i].event = event[i], ed[i].time = time[i], ed[i].w = w ? w[i] : 1.0, ed[i].rec = -1;
    ed[i].nth = tg->fires[event[i]]++;
  }
  free(tg->ed);
  tg->ed = ed, tg->ned = n;
  tg->nres = tg->nres_out + nfinite;
  tg->scale = tg->nres > 0 ? 1.0 / sqrt((double)tg->nres) : 1.0;
  return SALTA_OK;
}

void salta__targets_plan_stop(const salta__targets *tg, salta__out_plan *plan) {
  int use = tg->ned > 0 && !(tg->beta > 0) && !salta__targets_windowed(tg);
  plan->stop_counts = use ? tg->fires : NULL;
  plan->stop_after = tg->nt > 0 ? tg->times[tg->nt - 1] : -INFINITY;
}

int salta__targets_check_any(const salta__targets *tg, char *err) {
  if (tg->nres > 0) return SALTA_OK;
  return salta__fail(err, SALTA_EINPUT, "model '%s': the loss has no data (no finite datum and no measured event "
                     "time)", tg->d->name);
}

int salta__targets_match_events(salta__targets *tg, salta_sim *sim, const salta_sim_options *o, char *err) {
  int i, k, nev = salta_sim_nevents(sim);
  for (i = 0; i < tg->ned; ++i) {
    salta__event_datum *e = &tg->ed[i];
    int seen = 0;
    if (!isnan(e->time) && !(e->time >= o->t0 && e->time <= o->tf))
      return salta__fail(err, SALTA_EINPUT, "model '%s': measured time %g of event '%s' (its firing %d) lies outside "
                         "the run's [t0, tf] = [%g, %g]: extend tf past it", tg->d->name, e->time,
                         tg->d->e_names[e->event], e->nth + 1, o->t0, o->tf);
    e->rec = -1;
    for (k = 0; k < nev && e->rec < 0; ++k) {
      salta_event_record r;
      salta_sim_event(sim, k, &r);
      if (r.event == e->event && seen++ == e->nth) e->rec = k;
    }
  }
  return SALTA_OK;
}

int salta__targets_set_blend(salta__targets *tg, double beta, char *err) {
  if (!(beta >= 0) || !isfinite(beta))
    return salta__fail(err, SALTA_EINPUT, "model '%s': blend (the sigmoid sharpness) must be a finite number >= 0, "
                       "got %g", tg->d->name, beta);
  tg->beta = beta;
  return SALTA_OK;
}

int salta__targets_set_robust(salta__targets *tg, int kind, double scale, char *err) {
  if (kind < SALTA_ROBUST_LINEAR || kind > SALTA_ROBUST_CAUCHY)
    return salta__fail(err, SALTA_EINPUT, "model '%s': robust loss %d is not one of SALTA_ROBUST_*", tg->d->name, kind);
  if (kind != SALTA_ROBUST_LINEAR && (!(scale > 0) || !isfinite(scale)))
    return salta__fail(err, SALTA_EINPUT, "model '%s': the robust loss's scale must be a finite number > 0, got %g",
                       tg->d->name, scale);
  tg->robust = kind;
  tg->robust_scale = scale;
  return SALTA_OK;
}

int salta__targets_set_windows(salta__targets *tg, double width, double ramp, const unsigned char *jumps,
                               char *err) {
  size_t n = (size_t)tg->d->ne * tg->nout;
  if (!(width >= 0) || !isfinite(width) || !(ramp >= 0) || !isfinite(ramp))
    return salta__fail(err, SALTA_EINPUT, "model '%s': an event window's width and ramp must be finite numbers >= 0, "
                       "got %g and %g", tg->d->name, width, ramp);
  free(tg->win_jumps);
  tg->win_jumps = NULL;
  tg->win_width = width, tg->win_ramp = ramp;
  if (!(width + ramp > 0) || n == 0) return SALTA_OK;
  if (!(tg->win_jumps = malloc(n))) return salta__fail(err, SALTA_EMEM, "out of memory");
  if (jumps) memcpy(tg->win_jumps, jumps, n);
  else memset(tg->win_jumps, 1, n);
  return SALTA_OK;
}

int salta__targets_reach(salta__targets *tg, int nreached, const salta_sim_stats *st, char *err) {
  const salta_model_def *d = tg->d;
  tg->nk = nreached < tg->nt ? nreached : tg->nt;
  if (tg->nk >= tg->nt || tg->drop_after_end) return SALTA_OK;
  return salta__fail(err, SALTA_EINPUT,
                     "model '%s': terminal event '%s' ended the run at t = %.17g, before target time %d (t = %g): "
                     "end the targets there, or drop the targets after the end (salta.lsq option after_end = "
                     "\"drop\"; C: salta_loss_set_drop_after_end)",
                     d->name, st->terminal_event >= 0 ? d->e_names[st->terminal_event] : "?", st->t_end, tg->nk + 1,
                     tg->times[tg->nk]);
}

/* ---- event windows ------------------------------------------------------------------ */

int salta__windows_alloc(salta__windows *w, const salta__targets *tg, int n, const double *tau, const int *ev,
                         char *err) {
  memset(w, 0, sizeof *w);
  w->n = n, w->tau = tau, w->ev = ev;
  w->v = malloc(sizeof(double) * (size_t)tg->nout);
  w->dv = malloc(sizeof(double) * ((size_t)tg->nout * (size_t)n + 1));
  if (!w->v || !w->dv) return salta__fail(err, SALTA_EMEM, "out of memory");
  return SALTA_OK;
}

void salta__windows_free(salta__windows *w) {
  free(w->v);
  free(w->dv);
  memset(w, 0, sizeof *w);
}

/* phi at distance d = |T - tau| (a: dropped within, b: the ramp), and
** dphi/dd. */
static double window_phi(double a, double b, double d, double *dphi) {
  double s;
  *dphi = 0;
  if (d <= a) return 0;
  if (d >= a + b) return 1;
  s = (d - a) / b;
  *dphi = 30 * s * s * (1 - s) * (1 - s) / b;
  return s * s * s * (10 + s * (6 * s - 15));
}

void salta__windows_at(salta__windows *w, const salta__targets *tg, int k) {
  double T = tg->times[k], reach = tg->win_width + tg->win_ramp;
  int j, q, p, nout = tg->nout;
  if (k == 0) w->cursor = 0;   /* a new pass over the targets */
  while (w->cursor < w->n && w->tau[w->cursor] <= T - reach) ++w->cursor;
  w->q0 = w->cursor;
  for (q = w->q0; q < w->n && w->tau[q] < T + reach; ++q) {}
  w->nq = q - w->q0;
  for (j = 0; j < nout; ++j) {
    double *dv = w->dv + (size_t)j * w->n, v = 1;
    for (q = 0; q < w->nq; ++q) {
      int e = w->q0 + q;
      double dphi, phi, others = 1;
      dv[q] = 0;
      if (!tg->win_jumps[(size_t)w->ev[e] * nout + j]) continue;
      phi = window_phi(tg->win_width, tg->win_ramp, fabs(T - w->tau[e]), &dphi);
      v *= phi;
      if (dphi == 0) continue;
      /* the product of the other factors: no division by a small phi */
      for (p = 0; p < w->nq; ++p) {
        double unused;
        if (p == q || !tg->win_jumps[(size_t)w->ev[w->q0 + p] * nout + j]) continue;
        others *= window_phi(tg->win_width, tg->win_ramp, fabs(T - w->tau[w->q0 + p]), &unused);
      }
      dv[q] = others * dphi * (T > w->tau[e] ? -1 : 1);   /* d|T - tau| / dtau */
    }
    w->v[j] = v;
  }
}

/* ---- blending ---------------------------------------------------------------------- */

static double sigmoid(double u) { return 1.0 / (1.0 + exp(-u)); }

void salta__blend_at(salta__blend *bl, double beta, double T, const double *b) {
  int s;
  double B = 0;
  for (s = 0; s < bl->nseg; ++s) {
    double sa = sigmoid(beta * (T - b[s])), sb = sigmoid(beta * (T - b[s + 1]));
    bl->dw_a[s] = -beta * sa * (1 - sa);
    bl->dw_b[s] = beta * sb * (1 - sb);
    /* the product form: no cancellation where both sigmoids are near 1 */
    bl->w[s] = sa * sigmoid(beta * (b[s + 1] - T)) * -expm1(-beta * (b[s + 1] - b[s]));
    B += bl->w[s];
  }
  bl->B = B + SALTA__BLEND_FLOOR;
}

double salta__blend_value(const salta__blend *bl, const double *v, size_t stride) {
  double A = 0;
  int s;
  for (s = 0; s < bl->nseg; ++s) A += bl->w[s] * v[(size_t)s * stride];
  return A / bl->B;
}

void salta__blend_boundaries(const salta__blend *bl, const double *v, size_t stride, double yhat, double scale,
                             double *dpb) {
  int s;
  for (s = 0; s < bl->nseg; ++s) {
    double dw = scale * (v[(size_t)s * stride] - yhat) / bl->B;   /* d yhat / d w_s */
    dpb[s] += dw * bl->dw_a[s];
    dpb[s + 1] += dw * bl->dw_b[s];
  }
}

SALTA__WIDE void salta__plain_residuals(int n, const double *restrict data, const double *restrict weight, double scale,
                                        const double *restrict y, double *restrict r, double *restrict s,
                                        double *restrict dr, double *restrict dL) {
  int j;
  for (j = 0; j < n; ++j) {   /* every load first, then selects: no branch */
    double d = data[j], wj = weight[j] * scale, u = y[j] - d;
    double w = d == d ? wj : 0, sj = d == d ? w * u : 0;   /* d == d: not a missing datum */
    s[j] = r[j] = sj;
    dr[j] = w;
    dL[j] = 2 * sj * w;
  }
}
