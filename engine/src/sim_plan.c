/*
** sim_plan.c -- a planned run's outputs (see sim_plan.h): at the target
** times only the outputs a loss compares, those that are states straight
** from the integrator's interpolant; and where it may stop (a loss that
** has seen its targets and every firing its event data ask for).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dopri.h"
#include "integrator.h"
#include "sim_impl.h"
#include "wide.h"

/* Room for the step form's per-output arrays (cap outputs). */
static int step_form_room(salta__results *r, size_t cap) {
  if (cap <= (size_t)r->picap) return SALTA_OK;
  free(r->pstep), free(r->pth), free(r->prec);
  r->pstep = malloc(sizeof(int) * cap);
  r->pth = malloc(sizeof(double) * cap);
  r->prec = malloc(sizeof(size_t) * (cap + 1));
  if (!r->pstep || !r->pth || !r->prec) return r->picap = 0, SALTA_EMEM;
  r->picap = (int)cap;
  return SALTA_OK;
}

/* A plan's results, and its states when every planned output is one. */
int salta__plan_start(salta_sim *s, const salta__out_plan *plan, int nt) {
  salta__results *r = &s->res;
  const int *y_state = s->d->y_state, *plan_y = plan->y;
  const int nplan = plan->ny;
  size_t cap = (size_t)nt + 1, ns = (size_t)s->ns, need = cap * (size_t)nplan * (ns + 1) + (size_t)nplan * ns + 1;
  int q;
  r->pform = 0, r->nrec = 0, r->pcoef.n = 0;
  if (!plan_y) return SALTA_OK;
  for (q = 0; q < nplan; ++q)
    if (plan_y[q] < 0 || plan_y[q] >= s->d->ny) return SALTA_EINPUT;
  if (need > (size_t)r->pcap) {   /* + 1: room even for a plan of no outputs */
    free(r->py);
    r->py = malloc(sizeof(double) * need);
    if (!r->py) return r->pcap = 0, SALTA_EMEM;
    r->pcap = (int)need;
  }
  r->pdy = r->py + cap * (size_t)nplan;
  r->prow = r->pdy + cap * (size_t)nplan * ns;
  r->pn = nplan;
  s->run.plan_y = plan_y;
  s->run.nplan = nplan;
  s->run.grad_only = plan->grad_only && s->ns > 0;
  if (s->run.grad_only && step_form_room(r, cap)) return SALTA_EMEM;
  if (!y_state) return SALTA_OK;
  for (q = 0; q < nplan; ++q)
    if (y_state[plan_y[q]] < 0) return SALTA_OK;
  if (!(s->run.plan_x = malloc(sizeof(int) * (size_t)nplan))) return SALTA_EMEM;
  for (q = 0; q < nplan; ++q) s->run.plan_x[q] = y_state[plan_y[q]];
  return SALTA_OK;
}

/* The step form when the plan allows it and the integrator (it, just
** created) has an interpolant's coefficients; the run starts with no
** records. */
void salta__plan_form(salta_sim *s, const salta__integrator *it) {
  salta__results *r = &s->res;
  r->pform = s->run.grad_only && s->run.plan_x && it->ops->sens_coef;
  r->nrec = 0, r->pcoef.n = 0;
}

/* A planned run's outputs at target k from the full ones there. */
void salta__plan_record(salta_sim *s, int k) {
  salta__results *r = &s->res;
  const salta__run *run = &s->run;
  int q, i, ny = s->d->ny, ns = s->ns;
  if (r->pform) r->pstep[k] = -1, r->pth[k] = 0;
  for (q = 0; q < run->nplan; ++q) {
    int yi = run->plan_y[q];
    r->py[(size_t)k * run->nplan + q] = r->y[(size_t)k * ny + yi];
    for (i = 0; i < ns; ++i)
      r->pdy[((size_t)k * run->nplan + q) * ns + i] = r->dy[((size_t)k * ns + i) * ny + yi];
  }
}

/* The step's record of the step form: the interpolant of the planned
** outputs' derivatives over the integrator's last step [*t_old, *t_old + *h]. */
static int open_record(salta_sim *s, const salta__integrator *it, double *t_old, double *h) {
  salta__results *r = &s->res;
  const salta__run *run = &s->run;
  size_t at = r->pcoef.n;
  double *coef = salta__dbuf_extend(&r->pcoef, (size_t)run->nplan * s->ns * 5, s->err);
  if (!coef) return SALTA_EMEM;
  r->prec[r->nrec] = at;
  r->prec[++r->nrec] = r->pcoef.n;
  return it->ops->sens_coef(it->self, run->plan_x, run->nplan, coef, t_old, h);
}

/* A planned run's outputs at t inside a step: the states they are, from
** the interpolant alone (no algebraic solve, no output Jacobians); in the
** step form, their derivatives as the step's record (opened by the step's
** first output) and t's fraction of it. */
int salta__plan_store(salta_sim *s, const salta__integrator *it, double t, int first) {
  salta__results *r = &s->res;
  const salta__run *run = &s->run;
  int k = r->nout++, st;
  double *y = r->py + (size_t)k * run->nplan;
  r->t[k] = t;
  if (!r->pform)
    return it->ops->states_at(it->self, t, run->plan_x, run->nplan, y,
                              s->ns > 0 ? r->pdy + (size_t)k * run->nplan * s->ns : NULL);
  if (first && (st = open_record(s, it, &r->rec_t, &r->rec_h))) return st;
  r->pstep[k] = r->nrec - 1;
  r->pth[k] = (t - r->rec_t) / r->rec_h;
  return it->ops->states_at(it->self, t, run->plan_x, run->nplan, y, NULL);
}

int salta__sim_planned_count(const salta_sim *s) { return s->res.nout; }

const char *salta__sim_bad_text(const salta_sim *s, char *buf, size_t cap) {
  return salta__dae_bad_text(&s->dae, buf, cap);
}

void salta__sim_planned_out(const salta_sim *s, int k, const double **y, const double **dy) {
  const salta__results *r = &s->res;
  size_t m = (size_t)r->pn * s->ns, i;
  *y = r->py + (size_t)k * r->pn;
  if (!dy) return;
  *dy = r->pdy + (size_t)k * m;
  if (!r->pform || r->pstep[k] < 0) return;
  {
    const double *c = r->pcoef.v + r->prec[r->pstep[k]], th = r->pth[k];
    for (i = 0; i < m; ++i) r->prow[i] = salta__dopri_eval(c + 5 * i, th, 1 - th);
    *dy = r->prow;
  }
}

/* grad += the planned derivatives of the rows [0 .. n) times coef (n; rows n x ns:
** four directions at a time in independent sums, each in the rows' order),
** a row with coef 0 and data NaN (a missing datum) left out. */
static void rows_gradient(const double *rows, const double *coef, const double *data, size_t n, size_t ns,
                          double *grad) {
  size_t kj, i0;
  for (i0 = 0; i0 < ns; i0 += 4) {
    double g0 = 0, g1 = 0, g2 = 0, g3 = 0;
    size_t width = ns - i0 < 4 ? ns - i0 : 4;
    for (kj = 0; kj < n; ++kj) {
      const double c = coef[kj], *d = rows + kj * ns + i0;
      if (c == 0 && isnan(data[kj])) continue;
      switch (width) {
        case 4: g3 += c * d[3]; /* fall through */
        case 3: g2 += c * d[2]; /* fall through */
        case 2: g1 += c * d[1]; /* fall through */
        default: g0 += c * d[0];
      }
    }
    grad[i0] += g0;
    if (width > 1) grad[i0 + 1] += g1;
    if (width > 2) grad[i0 + 2] += g2;
    if (width > 3) grad[i0 + 3] += g3;
  }
}

/* grad += record rec's derivatives against the weights W (5 x nplan: the
** interpolant's basis times the outputs' coef, summed over its targets);
** an output all of whose weights are 0 left out, so that a derivative
** that only missing data read stays out, as in rows_gradient. */
static void record_gradient(const salta__results *r, int rec, const double *W, size_t ns, double *grad) {
  const double *c = r->pcoef.v + r->prec[rec];
  const size_t np = (size_t)r->pn;
  size_t q, i;
  for (q = 0; q < np; ++q) {
    const double w0 = W[q], w1 = W[np + q], w2 = W[2 * np + q], w3 = W[3 * np + q], w4 = W[4 * np + q];
    if (w0 == 0 && w1 == 0 && w2 == 0 && w3 == 0 && w4 == 0) continue;
    for (i = 0; i < ns; ++i) {
      const double *cq = c + 5 * (q * ns + i);
      grad[i] += w0 * cq[0] + w1 * cq[1] + w2 * cq[2] + w3 * cq[3] + w4 * cq[4];
    }
  }
}

/* W[m][q] += b[m] coef[q]: a target's weights, on its record's basis. */
SALTA__WIDE static void add_weights(size_t np, const double *restrict coef, const double *b, double *restrict W) {
  size_t m, q;
  for (m = 0; m < 5; ++m)
    for (q = 0; q < np; ++q) W[m * np + q] += b[m] * coef[q];
}

int salta__sim_planned_grad(const salta_sim *s, const double *coef, const double *data, int nk, double *grad) {
  const salta__results *r = &s->res;
  const size_t np = (size_t)r->pn, ns = (size_t)s->ns;
  double *W;
  int k, rec = -1;
  memset(grad, 0, sizeof(double) * ns);
  if (!r->pform) {
    rows_gradient(r->pdy, coef, data, (size_t)nk * np, ns, grad);
    return SALTA_OK;
  }
  if (!(W = malloc(sizeof(double) * 5 * np + 1))) return SALTA_EMEM;
  for (k = 0; k < nk; ++k) {
    const double *ck = coef + (size_t)k * np;
    double b[5];
    if (r->pstep[k] < 0) {
      rows_gradient(r->pdy + (size_t)k * np * ns, ck, data + (size_t)k * np, np, ns, grad);
      continue;
    }
    if (r->pstep[k] != rec) {
      if (rec >= 0) record_gradient(r, rec, W, ns, grad);
      rec = r->pstep[k];
      memset(W, 0, sizeof(double) * 5 * np);
    }
    salta__dopri_basis(r->pth[k], b);
    add_weights(np, ck, b, W);   /* coef is 0 at a missing datum */
  }
  if (rec >= 0) record_gradient(r, rec, W, ns, grad);
  free(W);
  return SALTA_OK;
}

const double *salta__sim_start_state(const salta_sim *s) { return s->res.w_start; }

/* The plan's stop rule after the groups at tau (the records from first
** on): every event has fired as often as it asks, and tau is past
** stop_after. */
int salta__plan_stop_reached(salta_sim *s, double tau, int first) {
  salta__run *run = &s->run;
  int k, j;
  for (k = first; k < s->events.nlog; ++k) run->fired[s->events.log[k].event]++;
  if (tau < run->stop_after) return 0;
  for (j = 0; j < s->d->ne; ++j)
    if (run->fired[j] < run->stop_counts[j]) return 0;
  return run->stopped = 1;
}
