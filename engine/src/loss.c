/*
** loss.c -- the least-squares loss over target times and outputs: its
** configuration, its evaluation with the gradient and residual Jacobian
** from forward sensitivities (the predictions from a planned run, blended
** across event boundaries from the run's event records; event windows
** moving with the records' times), and the entry of the discrete adjoint.
** What is compared, and how, is targets.h's.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "errors.h"
#include "loss_impl.h"
#include "params.h"
#include "salta.h"
#include "sens.h"
#include "sim_plan.h"
#include "tol.h"

int salta_loss_create(salta_loss **out, salta_model *model, const double *times, int nt,
                      const int *outputs, int nout, const double *data, const double *weights) {
  salta_loss *l;
  const salta_model_def *d;
  int st;
  if (!out) return SALTA_EINPUT;
  *out = l = calloc(1, sizeof *l);
  if (!l) return SALTA_EMEM;
  l->model = model;
  d = l->d = salta_model_def_get(model);
  if ((st = salta__targets_init(&l->tg, model ? d : NULL, times, nt, outputs, nout, data, weights, l->err)))
    return st;
  if (!(l->coef = calloc((size_t)l->tg.nt * l->tg.nout + 1, sizeof(double))) || !(l->last_p = malloc(sizeof(double) * (salta__params_len(d) + 1))) ||
      !(l->last_x0 = malloc(sizeof(double) * (d->nx + 1))) || salta_sim_create(&l->sim, model) ||
      salta_sim_create(&l->vsim, model))
    return salta__fail(l->err, SALTA_EMEM, "out of memory");
  salta_sim_options_init(&l->opts, nt > 0 && times[0] < 0 ? times[0] : 0.0,
                         nt > 0 && times[nt - 1] > 0 ? times[nt - 1] : 1.0);
  return SALTA_OK;
}

void salta_loss_free(salta_loss **loss) {
  salta_loss *l;
  if (!loss || !*loss) return;
  l = *loss;
  salta_sim_free(&l->sim);
  salta_sim_free(&l->vsim);
  salta__adj_work_free(&l->adj);
  salta__cadj_work_free(&l->cadj);
  salta__targets_free(&l->tg);
  free(l->coef); free(l->dirs); free(l->last_p); free(l->last_x0);
  free(l);
  *loss = NULL;
}

const char *salta_loss_errmsg(const salta_loss *l) { return l ? l->err : "no loss"; }
int salta_loss_nresid(const salta_loss *l) { return l ? l->tg.nres : 0; }

void salta_loss_stats_get(const salta_loss *l, salta_sim_stats *stats) {
  if (l && l->last) salta_sim_stats_get(l->last, stats);
  else if (stats) memset(stats, 0, sizeof *stats), stats->terminal_event = -1;
}

/* A planned run leaves outputs out: the same run again, in full. */
salta_sim *salta_loss_sim(salta_loss *l) {
  int st;
  if (!l) return NULL;
  if (l->pending) {
    salta__out_plan plan = {NULL, 0, 1, NULL, 0, 0};
    l->pending = 0;
    salta__targets_plan_stop(&l->tg, &plan);   /* the evaluation's run, in full */
    st = salta__sim_run_planned(l->last, &l->last_opts, l->last_p, l->last_has_x0 ? l->last_x0 : NULL, l->tg.times,
                                l->tg.nt, &plan);
    if (st) salta__fail(l->err, st, "%s", salta_sim_errmsg(l->last));
  }
  return l->last;
}

int salta_loss_set_options(salta_loss *l, const salta_sim_options *o) {
  int st;
  if (!l) return SALTA_EINPUT;
  if (!o) return salta__fail(l->err, SALTA_EINPUT, "loss: salta_loss_set_options needs options");
  if ((st = salta__sim_check_options(o, l->d, l->err))) return st;
  if (o->atol_vec)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': a loss takes a scalar atol (atol_vec is borrowed)", l->d->name);
  if (l->tg.nt > 0 && (o->t0 > l->tg.times[0] || o->tf < l->tg.times[l->tg.nt - 1]))
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': target times [%g, %g] lie outside [t0, tf] = [%g, %g]",
                       l->d->name, l->tg.times[0], l->tg.times[l->tg.nt - 1], o->t0, o->tf);
  l->opts = *o;
  return SALTA_OK;
}

int salta_loss_set_blend(salta_loss *l, double beta) {
  return l ? salta__targets_set_blend(&l->tg, beta, l->err) : SALTA_EINPUT;
}

int salta_loss_set_datum_weights(salta_loss *l, const double *w) {
  return l ? salta__targets_set_datum_weights(&l->tg, w, l->err) : SALTA_EINPUT;
}

int salta_loss_set_event_data(salta_loss *l, const int *event, const double *time, const double *weight, int n) {
  return l ? salta__targets_set_event_data(&l->tg, event, time, weight, n, l->err) : SALTA_EINPUT;
}

int salta_loss_set_robust(salta_loss *l, int kind, double scale) {
  return l ? salta__targets_set_robust(&l->tg, kind, scale, l->err) : SALTA_EINPUT;
}

int salta_loss_set_event_windows(salta_loss *l, double width, double ramp, const unsigned char *jumps) {
  return l ? salta__targets_set_windows(&l->tg, width, ramp, jumps, l->err) : SALTA_EINPUT;
}

int salta_loss_set_drop_after_end(salta_loss *l, int drop) {
  if (!l) return SALTA_EINPUT;
  l->tg.drop_after_end = drop != 0;
  return SALTA_OK;
}

int salta_loss_set_free(salta_loss *l, const int *dirs, int ns) {
  int st, *copy;
  if (!l) return SALTA_EINPUT;
  copy = ns > 0 ? malloc(sizeof(int) * (size_t)ns) : NULL;
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

/* ---- the predictions of the forward run ------------------------------------------- */

/* What a target's predictions need from the run: the boundaries of its
** segments (t0, the event groups, where it ended) with their event
** records, the blending weights at the target, and room. */
typedef struct predict {
  int nb;                       /* boundaries */
  double *b;                    /* nb */
  int *rec;                     /* nb: the first event record of the boundary's group, or -1 */
  salta__blend bl;              /* nb - 1 segments */
  double *v, *dv, *dpb;         /* per segment: a value, its derivatives (ns); d pred / d boundary (nb) */
  double *yv;                   /* ny: an output vector */
} predict;

static int predict_init(salta_loss *l, predict *pr) {
  int nev = salta_sim_nevents(l->last), k;
  size_t nb = (size_t)nev + 2, ns = (size_t)l->ns;
  salta_sim_stats st;
  salta__array list[] = {SALTA__ARRAY(pr->b, nb), SALTA__ARRAY(pr->rec, nb), SALTA__ARRAY(pr->bl.w, nb),
                         SALTA__ARRAY(pr->bl.dw_a, nb), SALTA__ARRAY(pr->bl.dw_b, nb), SALTA__ARRAY(pr->v, nb),
                         SALTA__ARRAY(pr->dv, nb * ns), SALTA__ARRAY(pr->dpb, nb),
                         SALTA__ARRAY(pr->yv, (size_t)l->d->ny)};
  if (salta__arrays_alloc(list, SALTA__COUNT(list))) return salta__fail(l->err, SALTA_EMEM, "out of memory");
  pr->nb = 0;
  pr->b[pr->nb] = l->opts.t0, pr->rec[pr->nb++] = -1;
  for (k = 0; k < nev; ++k) {
    salta_event_record r;
    salta_sim_event(l->last, k, &r);
    if (r.group == k) pr->b[pr->nb] = r.t, pr->rec[pr->nb++] = k;
  }
  salta_sim_stats_get(l->last, &st);
  pr->b[pr->nb] = st.t_end, pr->rec[pr->nb++] = -1;   /* tf, or where a terminal event ended the run */
  pr->bl.nseg = pr->nb - 1;
  return SALTA_OK;
}

static void predict_free(predict *pr) {
  salta__array list[] = {SALTA__ARRAY(pr->b, 0), SALTA__ARRAY(pr->rec, 0), SALTA__ARRAY(pr->bl.w, 0),
                         SALTA__ARRAY(pr->bl.dw_a, 0), SALTA__ARRAY(pr->bl.dw_b, 0), SALTA__ARRAY(pr->v, 0),
                         SALTA__ARRAY(pr->dv, 0), SALTA__ARRAY(pr->dpb, 0), SALTA__ARRAY(pr->yv, 0)};
  salta__arrays_free(list, SALTA__COUNT(list));
}

/* Segment seg's value of output yi at T clipped into it (dv: its
** derivatives, unless NULL), where the run gives yq (dyq) at T: at an end
** clipped to, an event's limit. */
static double segment_value(salta_loss *l, predict *pr, int seg, double T, int yi, double yq, const double *dyq,
                            double *dv) {
  salta_sim *sim = l->last;
  int ns = l->ns, ny = l->d->ny, i;
  const double *src = dyq;
  size_t stride = 1;
  double v;
  salta_event_record r;
  salta_event_sens es;
  if (T < pr->b[seg]) {                          /* clipped to the segment's start */
    salta_event_record last;                     /* the group's last record has x+ */
    salta_sim_event(sim, pr->rec[seg], &r);
    salta_sim_event(sim, r.group + r.group_size - 1, &last);
    l->d->h.eval(last.t, last.x_plus, last.z_plus, l->last_p, pr->yv);
    if (dv && salta_sim_event_sens(sim, pr->rec[seg], &es) == SALTA_OK) src = es.dy_plus + yi, stride = (size_t)ny;
  } else if (T >= pr->b[seg + 1] && seg + 2 < pr->nb) {   /* clipped to its end */
    salta_sim_event(sim, pr->rec[seg + 1], &r);
    l->d->h.eval(r.t, r.x_minus, r.z_minus, l->last_p, pr->yv);
    if (dv && salta_sim_event_sens(sim, pr->rec[seg + 1], &es) == SALTA_OK) src = es.dy_minus + yi, stride = (size_t)ny;
  } else {
    for (i = 0; dv && i < ns; ++i) dv[i] = dyq[i];
    return yq;
  }
  v = pr->yv[yi];
  for (i = 0; dv && i < ns; ++i) dv[i] = src[(size_t)i * stride];
  return v;
}

/* The moving time of boundary s by direction i: an event group's, the
** end's (a terminal event's, or none at tf), none at t0. */
static double boundary_rate(salta_loss *l, const predict *pr, int s, int i) {
  salta_event_sens es;
  const double *t_end_p;
  if (s == pr->nb - 1) return salta_sim_t_end_sens(l->last, &t_end_p) == SALTA_OK ? t_end_p[i] : 0;
  if (pr->rec[s] < 0 || salta_sim_event_sens(l->last, pr->rec[s], &es) != SALTA_OK) return 0;
  return es.tau_p[i];
}

/* The blended prediction of output j at target time T (pr->bl at T),
** and its derivatives (ns, into dyh unless NULL). */
static double blended(salta_loss *l, predict *pr, double T, int j, double yq, const double *dyq, double *dyh) {
  int ns = l->ns, nseg = pr->bl.nseg, s, i;
  double yhat;
  for (s = 0; s < nseg; ++s)
    pr->v[s] = segment_value(l, pr, s, T, l->tg.outputs[j], yq, dyq, dyh ? pr->dv + (size_t)s * ns : NULL);
  yhat = salta__blend_value(&pr->bl, pr->v, 1);
  if (!dyh) return yhat;
  memset(pr->dpb, 0, sizeof(double) * (size_t)pr->nb);
  salta__blend_boundaries(&pr->bl, pr->v, 1, yhat, 1.0, pr->dpb);
  for (i = 0; i < ns; ++i) {
    double d = 0;
    for (s = 0; s < pr->nb; ++s)
      if (pr->dpb[s] != 0) d += pr->dpb[s] * boundary_rate(l, pr, s, i);
    for (s = 0; s < nseg; ++s) d += pr->bl.w[s] / pr->bl.B * pr->dv[(size_t)s * ns + i];
    dyh[i] = d;
  }
  return yhat;
}

/* The predictions of target k (nout) and their derivatives (nout x ns,
** into *dyk): the planned outputs themselves, or blended into yh and dyh
** (dyk NULL: the values alone). */
static const double *predictions(salta_loss *l, predict *pr, int k, double *yh, double *dyh, const double **dyk) {
  const double *y, *dy = NULL;
  int j, ns = l->ns;
  salta__sim_planned_out(l->last, k, &y, dyk ? &dy : NULL);
  if (!dyk) dyh = NULL;
  if (!(l->tg.beta > 0)) {
    if (dyk) *dyk = dy;
    return y;
  }
  salta__blend_at(&pr->bl, l->tg.beta, l->tg.times[k], pr->b);
  for (j = 0; j < l->tg.nout; ++j)
    yh[j] = blended(l, pr, l->tg.times[k], j, y[j], dy ? dy + (size_t)j * ns : NULL, dyh ? dyh + (size_t)j * ns : NULL);
  if (dyk) *dyk = dyh;
  return yh;
}

/* ---- event windows over the run's records ----------------------------------------- */

/* The windows of an evaluation: every event record of the run (its time
** and event), with the records' tau_p in a run with sensitivities, and
** dL/dtau per record for the gradient. */
typedef struct windows {
  salta__windows w;
  double *tau, *dLdtau;
  int *ev;
  const double **tau_p;         /* NULL without sensitivities */
} windows;

static int windows_init(salta_loss *l, windows *win, int need_sens) {
  int n = salta_sim_nevents(l->last), q, st;
  memset(win, 0, sizeof *win);
  win->tau = malloc(sizeof(double) * ((size_t)n + 1));
  win->ev = malloc(sizeof(int) * ((size_t)n + 1));
  win->dLdtau = calloc((size_t)n + 1, sizeof(double));
  win->tau_p = need_sens ? malloc(sizeof(double *) * ((size_t)n + 1)) : NULL;
  if (!win->tau || !win->ev || !win->dLdtau || (need_sens && !win->tau_p))
    return salta__fail(l->err, SALTA_EMEM, "out of memory");
  for (q = 0; q < n; ++q) {
    salta_event_record r;
    salta_event_sens es;
    salta_sim_event(l->last, q, &r);
    win->tau[q] = r.t, win->ev[q] = r.event;
    if (need_sens) win->tau_p[q] = salta_sim_event_sens(l->last, q, &es) == SALTA_OK ? es.tau_p : NULL;
  }
  if ((st = salta__windows_alloc(&win->w, &l->tg, n, win->tau, win->ev, l->err))) return st;
  return SALTA_OK;
}

static void windows_free(windows *win) {
  salta__windows_free(&win->w);
  free(win->tau); free(win->ev); free(win->dLdtau); free((void *)win->tau_p);
}

/* sum_q dv_j/dtau_q tau_p[q][i] at the last target the windows were set at. */
static double window_rate(const windows *win, int j, int i) {
  const salta__windows *w = &win->w;
  const double *dv = w->dv + (size_t)j * w->n;
  double d = 0;
  int q;
  for (q = 0; q < w->nq; ++q)
    if (dv[q] != 0 && win->tau_p[w->q0 + q]) d += dv[q] * win->tau_p[w->q0 + q][i];
  return d;
}

/* ---- evaluation -------------------------------------------------------------------- */

/* Per-target room: predictions, residuals (r, dr, s; dL is the loss's
** coef row), and the predictions' derivatives (nout x ns). */
typedef struct rows { double *yh, *r, *dr, *s, *dyh; } rows;

/* The sum of squares over the reached targets with coef; with resid, jac
** or a blended gradient, those too (m rows over the finite data); with
** windows, their factors, and in a run with sensitivities the loss's
** derivative by each record's time through them (win->dLdtau). */
static double residual_sums(salta_loss *l, predict *pr, rows *w, int need_dyh, double *grad, double *resid,
                            double *jac, windows *win, int *nrows) {
  const salta__targets *tg = &l->tg;
  double L = 0;
  int k, j, i, q, m = 0, ns = l->ns, rows_too = resid || jac || grad;
  for (k = 0; k < tg->nk; ++k) {
    const double *dyk = NULL, *yk = predictions(l, pr, k, w->yh, w->dyh, need_dyh ? &dyk : NULL);
    salta__resid res = {w->r, w->dr, l->coef + (size_t)k * tg->nout, w->s};
    if (win) salta__windows_at(&win->w, tg, k);
    L = salta__targets_residuals(tg, k, yk, win ? win->w.v : NULL, &res, L);
    for (j = 0; win && win->tau_p && j < tg->nout; ++j)   /* dL/dv = 2 r s */
      for (q = 0; q < win->w.nq; ++q)
        win->dLdtau[win->w.q0 + q] += 2 * w->r[j] * w->s[j] * win->w.dv[(size_t)j * win->w.n + q];
    for (j = 0; j < tg->nout && rows_too; ++j) {
      size_t kj = (size_t)k * tg->nout + j;
      const double *dyh = dyk + (size_t)j * ns;
      if (salta__targets_missing(tg, kj)) continue;
      if (resid) resid[m] = w->r[j];
      for (i = 0; jac && i < ns; ++i) {   /* dr/dv = s */
        double moving = win && win->tau_p && w->s[j] != 0 ? w->s[j] * window_rate(win, j, i) : 0;
        jac[(size_t)m * ns + i] = w->dr[j] * dyh[i] + moving;
      }
      for (i = 0; grad && i < ns; ++i) grad[i] += l->coef[kj] * dyh[i];
      ++m;
    }
  }
  memset(l->coef + (size_t)k * tg->nout, 0, sizeof(double) * (size_t)(tg->nt - k) * tg->nout);
  for (; k < tg->nt; ++k)   /* targets past a terminal event: zero residuals */
    for (j = 0; j < tg->nout; ++j) {
      if (salta__targets_missing(tg, (size_t)k * tg->nout + j)) continue;
      if (resid) resid[m] = 0;
      if (jac) memset(jac + (size_t)m * ns, 0, sizeof(double) * (size_t)ns);
      ++m;
    }
  *nrows = m;
  return L;
}

/* The event data's share after the outputs' m0 rows: each firing's time
** from the run's event log (the run's end for one it did not reach) and
** its tau_p (d t_end / dp). */
static double event_sums(salta_loss *l, double L, int m0, double *grad, double *resid, double *jac) {
  const salta__targets *tg = &l->tg;
  int i, q, m = m0, ns = l->ns;
  for (i = 0; i < tg->ned; ++i) {
    const salta__event_datum *e = &tg->ed[i];
    const double *tau_p = NULL;
    double tau, r, dLdtau;
    salta_sim_stats st;
    if (isnan(e->time)) continue;
    if (e->rec >= 0) {
      salta_event_record rec;
      salta_sim_event(l->last, e->rec, &rec);
      tau = rec.t;
      if (ns > 0) tau_p = salta__sim_event_tau_p(l->last, e->rec);
    } else {
      salta_sim_stats_get(l->last, &st);
      tau = st.t_end;
      if (ns > 0 && salta_sim_t_end_sens(l->last, &tau_p)) tau_p = NULL;
    }
    r = salta__targets_event_residual(tg, i, tau, &dLdtau);
    L += r * r;
    if (resid) resid[m] = r;
    for (q = 0; jac && q < ns; ++q) jac[(size_t)m * ns + q] = tau_p ? e->w * tg->scale * tau_p[q] : 0;
    for (q = 0; grad && tau_p && q < ns; ++q) grad[q] += dLdtau * tau_p[q];
    ++m;
  }
  return L;
}

/* A prediction or one of its derivatives came out non-finite: the first
** one, by output, time and direction. */
static int nonfinite_error(salta_loss *l, predict *pr, rows *w, int need_dyh) {
  const salta_model_def *d = l->d;
  const salta__targets *tg = &l->tg;
  int k, j, i;
  for (k = 0; k < tg->nk; ++k) {
    const double *dyk = NULL, *yk = predictions(l, pr, k, w->yh, w->dyh, need_dyh ? &dyk : NULL);
    for (j = 0; j < tg->nout; ++j) {
      int yi = tg->outputs[j];
      if (salta__targets_missing(tg, (size_t)k * tg->nout + j)) continue;
      if (!isfinite(yk[j]))
        return salta__fail(l->err, SALTA_ESOLVER, "model '%s': output '%s' is %g at t = %g", d->name, d->y_names[yi],
                           yk[j], tg->times[k]);
      for (i = 0; i < l->ns && need_dyh; ++i) {
        char cause[512], dir[160];
        double dr = tg->weights[(size_t)k * tg->nout + j] * tg->scale * dyk[(size_t)j * l->ns + i];
        if (isfinite(dr)) continue;
        salta__sim_bad_text(l->sim, cause, sizeof cause);
        return salta__fail(l->err, SALTA_ESOLVER, "model '%s': the derivative of output '%s' at t = %g by %s is %g%s%s",
                           d->name, d->y_names[yi], tg->times[k], salta__dir_text(d, l->dirs[i], dir, sizeof dir), dr,
                           cause[0] ? ": " : "", cause);
      }
    }
  }
  return salta__fail(l->err, SALTA_ESOLVER, "model '%s': the loss is not finite (a weight or datum too large)",
                     d->name);
}

/* The planned run of an evaluation at (p, x0), kept for salta_loss_sim;
** grad_only: its derivatives serve the gradient alone. */
static int planned_run(salta_loss *l, int need_sens, int grad_only, const double *p, const double *x0) {
  salta__out_plan plan;
  salta_sim_stats st;
  int status;
  l->last = need_sens ? l->sim : l->vsim;
  salta__params_fill(l->d, p, l->last_p);   /* the outputs' kernels read it */
  if ((l->last_has_x0 = x0 != NULL)) memcpy(l->last_x0, x0, sizeof(double) * (size_t)l->d->nx);
  l->last_opts = l->opts;
  l->pending = 1;
  plan.y = l->tg.outputs, plan.ny = l->tg.nout;
  plan.event_outputs = l->tg.beta > 0 || salta__targets_windowed(&l->tg);   /* their tau_p */
  plan.grad_only = grad_only;
  salta__targets_plan_stop(&l->tg, &plan);
  if ((status = salta__sim_run_planned(l->last, &l->opts, p, x0, l->tg.times, l->tg.nt, &plan)))
    return salta__fail(l->err, status, "%s", salta_sim_errmsg(l->last));
  salta_sim_stats_get(l->last, &st);
  if ((status = salta__targets_match_events(&l->tg, l->last, &l->opts, l->err))) return status;
  return salta__targets_reach(&l->tg, salta__sim_planned_count(l->last), &st, l->err);
}

static int evaluate(salta_loss *l, predict *pr, rows *w, windows *win, double *value, double *grad,
                    double *resid, double *jac) {
  int blend = l->tg.beta > 0, need_dyh = jac || (grad && blend), ns = l->ns, q, i, m;
  double L;
  if (grad) memset(grad, 0, sizeof(double) * (size_t)ns);
  L = residual_sums(l, pr, w, need_dyh, blend ? grad : NULL, resid, jac, win, &m);
  if (grad && !blend && l->tg.nk > 0 && salta__sim_planned_grad(l->last, l->coef, l->tg.data, l->tg.nk, grad))
    return salta__fail(l->err, SALTA_EMEM, "out of memory");
  for (q = 0; grad && win && q < win->w.n; ++q)   /* the windows move with the events */
    for (i = 0; win->dLdtau[q] != 0 && win->tau_p[q] && i < ns; ++i) grad[i] += win->dLdtau[q] * win->tau_p[q][i];
  L = event_sums(l, L, m, grad, resid, jac);
  /* a NaN or infinity anywhere reaches L or the gradient (or the Jacobian) */
  if (!isfinite(L) || (grad && !salta__all_finite(grad, (size_t)ns)) ||
      (jac && !grad && !salta__all_finite(jac, (size_t)l->tg.nres * ns)))
    return nonfinite_error(l, pr, w, grad || jac);
  if (value) *value = L;
  return SALTA_OK;
}

/* An evaluation reads the model's kernels once, at its start: a swap
** (salta_model_swap_def) lands between evaluations. */
static void bind(salta_loss *l) {
  const salta_model_def *d = salta_model_def_get(l->model);
  if (d == l->d) return;
  l->d = l->tg.d = d;
  salta__sim_bind(l->sim, d);
  salta__sim_bind(l->vsim, d);
  if (l->adj) salta__adj_work_bind(l->adj, d);
  if (l->cadj) salta__cadj_work_bind(l->cadj, d);
}

int salta_loss_eval(salta_loss *l, const double *p, const double *x0, double *value,
                    double *grad, double *resid, double *jac) {
  int need_sens = grad || jac, st;
  size_t nout, ns;
  predict pr;
  rows w;
  windows win;
  if (!l) return SALTA_EINPUT;
  bind(l);
  if (!p) return salta__fail(l->err, SALTA_EINPUT, "model '%s': salta_loss_eval needs parameters", l->d->name);
  if (need_sens && l->ns == 0)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': no free parameters for a gradient", l->d->name);
  if ((st = salta__targets_check_any(&l->tg, l->err))) return st;
  if (grad && !jac && !resid && salta_loss_route(l) == SALTA_ROUTE_ADJOINT_CONT)
    return salta_loss_eval_adjoint_cont(l, p, x0, value, grad);
  if ((st = planned_run(l, need_sens, grad && !jac && !(l->tg.beta > 0), p, x0))) return st;
  nout = (size_t)l->tg.nout, ns = (size_t)l->ns;
  {
    int windowed = salta__targets_windowed(&l->tg);
    salta__array list[] = {SALTA__ARRAY(w.yh, nout), SALTA__ARRAY(w.r, nout), SALTA__ARRAY(w.dr, nout),
                           SALTA__ARRAY(w.s, nout), SALTA__ARRAY(w.dyh, nout * ns)};
    memset(&pr, 0, sizeof pr);
    memset(&win, 0, sizeof win);
    if (salta__arrays_alloc(list, SALTA__COUNT(list))) return salta__fail(l->err, SALTA_EMEM, "out of memory");
    if ((!(l->tg.beta > 0) || (st = predict_init(l, &pr)) == SALTA_OK) &&
        (!windowed || (st = windows_init(l, &win, need_sens)) == SALTA_OK))
      st = evaluate(l, &pr, &w, windowed ? &win : NULL, value, grad, resid, jac);
    predict_free(&pr);
    windows_free(&win);
    salta__arrays_free(list, SALTA__COUNT(list));
  }
  if (st == SALTA_OK) l->err[0] = '\0';
  return st;
}

int salta_loss_eval_adjoint(salta_loss *l, const double *p, const double *x0, int mesh_k,
                            int consistent, double *value, double *grad) {
  return salta_loss_eval_adjoint_residuals(l, p, x0, mesh_k, consistent, value, grad, NULL);
}

int salta_loss_eval_adjoint_residuals(salta_loss *l, const double *p, const double *x0, int mesh_k,
                                      int consistent, double *value, double *grad, double *resid) {
  int st;
  if (!l) return SALTA_EINPUT;
  bind(l);
  if (!p) return salta__fail(l->err, SALTA_EINPUT, "model '%s': salta_loss_eval_adjoint needs parameters", l->d->name);
  if (mesh_k < 0 || mesh_k > SALTA_MESH_MAX)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': adjoint: mesh_k (salta.lsq: option 'mesh') must be 0 (the "
                       "integrator's steps) or 1 to %d nodes per segment, got %d", l->d->name, SALTA_MESH_MAX, mesh_k);
  if (grad && l->ns == 0)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': no free parameters for a gradient", l->d->name);
  if ((st = salta__targets_check_any(&l->tg, l->err))) return st;
  if (!l->adj && (st = salta__adj_work_new(&l->adj, l->d, l->err))) return st;
  l->last = l->vsim;
  l->pending = 0;   /* its forward run is complete */
  st = salta__adj_eval(l->adj, &l->tg, l->vsim, &l->opts, p, x0, mesh_k, consistent, l->dirs, l->ns, value, grad,
                       resid, l->err);
  if (st == SALTA_OK) l->err[0] = '\0';   /* what a recovered failure wrote (a coarse mesh's) */
  return st;
}

int salta_loss_eval_adjoint_cont(salta_loss *l, const double *p, const double *x0, double *value, double *grad) {
  int st;
  if (!l) return SALTA_EINPUT;
  bind(l);
  if (!p)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': salta_loss_eval_adjoint_cont needs parameters", l->d->name);
  if (grad && l->ns == 0)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': no free parameters for a gradient", l->d->name);
  if (!l->cadj && (st = salta__cadj_work_new(&l->cadj, l->d, l->err))) return st;
  l->last = l->vsim;
  l->pending = 0;   /* its forward run is complete */
  st = salta__cadj_eval(l->cadj, &l->tg, l->vsim, &l->opts, p, x0, l->dirs, l->ns, value, grad);
  if (st == SALTA_OK) l->err[0] = '\0';
  return st;
}

/* ---- the route chooser -------------------------------------------------------------- */

int salta_loss_set_route(salta_loss *l, salta_route route) {
  if (!l) return SALTA_EINPUT;
  if (route != SALTA_ROUTE_AUTO && route != SALTA_ROUTE_SENS && route != SALTA_ROUTE_ADJOINT_CONT)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': gradient route %d is not one of SALTA_ROUTE_AUTO, _SENS, "
                       "_ADJOINT_CONT", l->d->name, (int)route);
  l->route = route;
  return SALTA_OK;
}

/* The free directions from which the continuous adjoint is the faster:
** salta_route_for's, times the targets per step of the last run where
** they outnumber its steps (the adjoint's backward problem stops at each
** target, the sensitivities' steps do not). */
static double crossover(const salta_loss *l) {
  salta_sim_stats st;
  if (!l->last) return SALTA_ROUTE_CROSSOVER;
  salta_sim_stats_get(l->last, &st);
  return st.steps > 0 && l->tg.nt > st.steps ? (double)SALTA_ROUTE_CROSSOVER * l->tg.nt / st.steps
                                              : SALTA_ROUTE_CROSSOVER;
}

salta_route salta_loss_route(const salta_loss *l) {
  if (!l) return SALTA_ROUTE_SENS;
  if (l->route != SALTA_ROUTE_AUTO) return l->route;
  /* the continuous adjoint neither blends nor follows event windows */
  if (l->tg.beta > 0 || salta__targets_windowed(&l->tg)) return SALTA_ROUTE_SENS;
  if (l->ns < crossover(l)) return SALTA_ROUTE_SENS;
  return salta_route_for(l->ns, l->d->nx + l->d->nz);
}

salta_route salta_route_for(int nfree, int n) {
  (void)n;
  return nfree >= SALTA_ROUTE_CROSSOVER ? SALTA_ROUTE_ADJOINT_CONT : SALTA_ROUTE_SENS;
}
