/*
** jump.c -- the jump of the sensitivities through an event group (see
** jump.h): each step forward for the ns columns of S, its transpose for
** one adjoint beside it, and the two compositions of the members.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "jump.h"
#include "sens_impl.h"

/* ---- a member's event time ---------------------------------------------------- */

/* Member j's guard row at the left limit (sn->ew, sn->ep) and its rate
** there, or an error for a grazing crossing. */
static int member_guard(salta__sens *sn, int j, double tau, const salta__left_limit *lm, double *rate) {
  salta__dae *a = sn->dae;
  const salta_model_def *d = a->d;
  *rate = lm->rate[j];
  if (salta__dae_grazing(*rate, lm->rscale[j]))
    return salta__fail(a->err, SALTA_ENODIFF,
                       "model '%s': grazing event '%s' at t = %.17g: the guard's rate along the trajectory is %g, "
                       "so the event time and the gradient are undefined", d->name, d->e_names[j], tau, *rate);
  salta__dae_guard_row(a, j, tau, lm->w, lm->ejac, sn->ew, sn->ep);
  return SALTA_OK;
}

/* Member j's guard row at w0 (sn->ew, sn->ep) and its rate along the flow
** f0 = [x'; z'] there. */
static double guard_along(salta__sens *sn, int j, double tau, const double *w0, const double *f0) {
  double rate = salta__dae_guard_row(sn->dae, j, tau, w0, NULL, sn->ew, sn->ep);
  int i;
  for (i = 0; i < sn->dae->n; ++i) rate += sn->ew[i] * f0[i];
  return rate;
}

/* tau_p (ns) = -(e_w s + e_p) / rate of every column s of S, from the
** guard row in sn->ew, sn->ep. */
static void times_of(salta__sens *sn, double rate, const double *S, double *tau_p, size_t stride) {
  int k, i, n = sn->dae->n;
  for (k = 0; k < sn->ns; ++k) {
    const double *col = S + (size_t)k * n;
    double de = 0;
    for (i = 0; i < n; ++i) de += sn->ew[i] * col[i];
    if (salta__sens_pcol(sn, k) >= 0) de += sn->ep[salta__sens_pcol(sn, k)];
    tau_p[(size_t)k * stride] = -de / rate;
  }
}

/* The transpose of one tau_p = -(e_w s + e_p) / rate: v (n) and grad_p
** (np) take its adjoint tb through the guard row in sn->ew, sn->ep. */
static void times_of_t(salta__sens *sn, double rate, double tb, double *v, double *grad_p) {
  int i;
  double c = -tb / rate;
  if (tb == 0) return;
  for (i = 0; i < sn->dae->n; ++i) v[i] += c * sn->ew[i];
  for (i = 0; i < sn->dae->np; ++i) grad_p[i] += c * sn->ep[i];
}

/* Each member's tau_p from its guard row at the left limit. */
static int event_times(salta__sens *sn, double tau, const salta__left_limit *lm, const int *ev, int nev,
                       double *tau_p) {
  int q, st;
  double rate;
  for (q = 0; q < nev; ++q) {
    if ((st = member_guard(sn, ev[q], tau, lm, &rate))) return st;
    times_of(sn, rate, sn->S_minus, tau_p + (size_t)q * sn->ns, 1);
  }
  return SALTA_OK;
}

/* ---- a member's reset ---------------------------------------------------------------- */

/* Member j's reset Jacobians at the group's left limit wm (into
** sn->jac[0]) and jump_v = r_t + r_x x'0 + r_z z'0 along the flow there
** (xdot0, zdot0). */
static void reset_blocks(salta__sens *sn, int j, double tau, const double *wm, const double *xdot0,
                         const double *zdot0) {
  const salta_function_def *r = &sn->dae->d->r[j];
  double *const *v = sn->jac[0];
  int e;
  salta__sens_eval_blocks(sn, r, 4, tau, wm, v);
  memset(sn->jump_v, 0, sizeof(double) * (size_t)sn->dae->nx);
  for (e = 0; e < r->d[SALTA_WRT_T].nnz; ++e) sn->jump_v[r->d[SALTA_WRT_T].row[e]] = v[SALTA_WRT_T][e];
  for (e = 0; e < r->d[SALTA_WRT_X].nnz; ++e)
    sn->jump_v[r->d[SALTA_WRT_X].row[e]] += v[SALTA_WRT_X][e] * xdot0[r->d[SALTA_WRT_X].col[e]];
  for (e = 0; e < r->d[SALTA_WRT_Z].nnz; ++e)
    sn->jump_v[r->d[SALTA_WRT_Z].row[e]] += v[SALTA_WRT_Z][e] * zdot0[r->d[SALTA_WRT_Z].col[e]];
}

/* The transpose of rows = r_x s_x + r_z s_z + r_p[:, j] (the blocks in
** sn->jac[0]): v (n) and grad_p (np) take rho (nx). */
static void reset_rows_t(salta__sens *sn, int j, const double *rho, double *v, double *grad_p) {
  const salta_function_def *r = &sn->dae->d->r[j];
  double *const *b = sn->jac[0];
  salta__spmv_t(&r->d[SALTA_WRT_X], b[SALTA_WRT_X], 1.0, rho, 0, v, 0);
  salta__spmv_t(&r->d[SALTA_WRT_Z], b[SALTA_WRT_Z], 1.0, rho, 0, v, sn->dae->nx);
  salta__spmv_t(&r->d[SALTA_WRT_P], b[SALTA_WRT_P], 1.0, rho, 0, grad_p, 0);
}

/* The rows member q resets: S+ from its reset's Jacobians at the left
** limit, the flow after the group in sn->flow_p. */
static void member_rows(salta__sens *sn, int q, int j, double tau, const salta__left_limit *lm,
                        const double *tau_p, double *S) {
  salta__dae *a = sn->dae;
  const salta_function_def *r = &a->d->r[j];
  double *const *v = sn->jac[0];
  const int *writer = a->writer;
  int k, e, i, n = a->n, nx = a->nx;
  reset_blocks(sn, j, tau, lm->w, lm->xdot, lm->zdot);
  for (k = 0; k < sn->ns; ++k) {
    const double *col = sn->S_minus + (size_t)k * n;
    double *out = S + (size_t)k * n;
    int pj = salta__sens_pcol(sn, k);
    for (i = 0; i < nx; ++i) if (writer[i] == q) out[i] = 0;
    for (e = 0; e < r->d[SALTA_WRT_X].nnz; ++e)
      if (writer[r->d[SALTA_WRT_X].row[e]] == q) out[r->d[SALTA_WRT_X].row[e]] += v[SALTA_WRT_X][e] * col[r->d[SALTA_WRT_X].col[e]];
    for (e = 0; e < r->d[SALTA_WRT_Z].nnz; ++e)
      if (writer[r->d[SALTA_WRT_Z].row[e]] == q) out[r->d[SALTA_WRT_Z].row[e]] += v[SALTA_WRT_Z][e] * col[nx + r->d[SALTA_WRT_Z].col[e]];
    for (i = 0; i < nx; ++i) sn->rp_col[i] = 0;
    if (pj >= 0) salta__add_column(&r->d[SALTA_WRT_P], v[SALTA_WRT_P], pj, 1.0, sn->rp_col, 0);
    for (i = 0; i < nx; ++i)
      if (writer[i] == q) out[i] += sn->rp_col[i] + (sn->jump_v[i] - sn->flow_p[i]) * tau_p[k];
  }
}

/* The transpose of member_rows: the adjoint v (n) of S+ on the rows member
** q resets passes to out (n) and grad_p; *tb takes its tau_p's share. */
static void member_rows_t(salta__sens *sn, int q, int j, double tau, const salta__left_limit *lm, const double *v,
                          double *out, double *grad_p, double *tb) {
  const int *writer = sn->dae->writer;
  double *rho = sn->seq_rows;
  int i;
  reset_blocks(sn, j, tau, lm->w, lm->xdot, lm->zdot);
  for (i = 0; i < sn->dae->nx; ++i) {
    rho[i] = writer[i] == q ? v[i] : 0;
    *tb += (sn->jump_v[i] - sn->flow_p[i]) * rho[i];
  }
  reset_rows_t(sn, j, rho, out, grad_p);
}

/* ---- the group together ------------------------------------------------------------- */

static int singular_after(salta__sens *sn, double tau, const char *event) {
  const salta_model_def *d = sn->dae->d;
  return salta__fail(sn->dae->err, SALTA_ESOLVER, "model '%s': g_z is singular after %s%s%s at t = %.17g", d->name,
                     event ? "the event '" : "the events", event ? event : "", event ? "'" : "", tau);
}

/* S (in place, S- in sn->S_minus) through the group together, each
** member with tau_p (nev x ns); g_z's factors and the flow at wp in place. */
static int together(salta__sens *sn, double tau, const salta__left_limit *lm, const double *wp, const int *ev,
                    int nev, const double *tau_p, double *S) {
  salta__dae *a = sn->dae;
  int q, k, i, st, n = a->n, nx = a->nx;
  if ((st = salta__dae_group(a, ev, nev, tau))) return st;
  for (k = 0; k < sn->ns; ++k)   /* rows no member resets: continuous, with x' jumping */
    for (i = 0; i < nx; ++i)
      if (a->writer[i] < 0)
        S[(size_t)k * n + i] = sn->S_minus[(size_t)k * n + i] + (lm->xdot[i] - sn->flow_p[i]) * tau_p[k];
  for (q = 0; q < nev; ++q) member_rows(sn, q, ev[q], tau, lm, tau_p + (size_t)q * sn->ns, S);
  if (salta__sens_fill_z(sn, tau, wp, S)) return singular_after(sn, tau, NULL);
  return SALTA_OK;
}

/* The transpose of together for the adjoint adj->v; with fixed, the
** members' tau_p are the located group's. */
static int together_t(salta__sens *sn, double tau, const salta__left_limit *lm, const double *wp, const int *ev,
                      int nev, int fixed, salta__jump_adj *adj) {
  salta__dae *a = sn->dae;
  double *v = adj->v, *out = sn->adj_out, *tb = sn->adj_tb, rate;
  int q, i, st, n = a->n, nx = a->nx;
  if (salta__dae_flow(a, tau, wp, sn->flow_p, sn->zdot_p) || salta__dae_fold_z(a, tau, wp, v, adj->grad_p))
    return singular_after(sn, tau, NULL);
  if ((st = salta__dae_group(a, ev, nev, tau))) return st;
  memset(out, 0, sizeof(double) * (size_t)n);
  for (q = 0; q < nev; ++q) tb[q] = adj->tau_bar ? adj->tau_bar[q] : 0;
  for (i = 0; i < nx; ++i)
    if (a->writer[i] < 0) out[i] += v[i], tb[0] += (lm->xdot[i] - sn->flow_p[i]) * v[i];
  for (q = 0; q < nev; ++q) member_rows_t(sn, q, ev[q], tau, lm, v, out, adj->grad_p, &tb[q]);
  for (q = 0; q < nev; ++q) {
    if (fixed) {
      adj->tau_fixed_bar += tb[q];
      continue;
    }
    if ((st = member_guard(sn, ev[q], tau, lm, &rate))) return st;
    times_of_t(sn, rate, tb[q], out, adj->grad_p);
  }
  memcpy(v, out, sizeof(double) * (size_t)n);
  return SALTA_OK;
}

/* ---- the group in sequence -------------------------------------------------------- */

/* The states a composition in the given order passes through, into
** sn->seq_pt: point q (0 .. nev) is the state after the first q members
** fired (each reading the left limit; z re-solved) and its flow,
** [x; z; x'; z'] (2n). */
static int sequence_points(salta__sens *sn, double tau, const salta__left_limit *lm, const int *ev, int nev,
                           const int *order) {
  salta__dae *a = sn->dae;
  size_t n = (size_t)a->n, need = ((size_t)nev + 1) * 2 * n;
  int q, st;
  if (need > sn->seq_cap) {
    double *grown = realloc(sn->seq_pt, sizeof(double) * need);
    if (!grown) return salta__fail(a->err, SALTA_EMEM, "out of memory");
    sn->seq_pt = grown, sn->seq_cap = need;
  }
  memcpy(sn->seq_pt, lm->w, sizeof(double) * n);
  memcpy(sn->seq_pt + n, lm->xdot, sizeof(double) * (size_t)a->nx);
  memcpy(sn->seq_pt + n + a->nx, lm->zdot, sizeof(double) * (size_t)a->nz);
  for (q = 0; q < nev; ++q) {
    double *w1 = sn->seq_pt + (size_t)(q + 1) * 2 * n;
    sn->seq_events[q] = ev[order[q]];
    if ((st = salta__dae_reset(a, sn->seq_events, q + 1, tau, lm->w, w1))) return st;
    if (salta__dae_flow(a, tau, w1, w1 + n, w1 + n + a->nx)) return singular_after(sn, tau, a->d->e_names[ev[order[q]]]);
  }
  return SALTA_OK;
}

/* Point q of the last sequence_points: its state, and its flow. */
static const double *seq_w(const salta__sens *sn, int q) { return sn->seq_pt + (size_t)q * 2 * sn->dae->n; }
static const double *seq_f(const salta__sens *sn, int q) { return seq_w(sn, q) + sn->dae->n; }

/* One member j fired in sequence: from point q (the state w0, its flow f0)
** with sensitivities S (in place) to point q + 1 (w1, f1), at time tau
** with its own tau_p (out, ns) from its guard at w0 along f0. Its reset is
** read at the group's left limit wm (every member reads it). */
static int sequence_step(salta__sens *sn, int j, int q, double tau, const double *wm, double *S, double *tau_p) {
  salta__dae *a = sn->dae;
  const salta_model_def *d = a->d;
  const salta_function_def *r = &d->r[j];
  const double *w0 = seq_w(sn, q), *f0 = seq_f(sn, q), *w1 = seq_w(sn, q + 1), *f1 = seq_f(sn, q + 1);
  double *const *v = sn->jac[0];
  int k, e, i, n = a->n, nx = a->nx, lo = d->r_assign_ptr[j], hi = d->r_assign_ptr[j + 1];
  times_of(sn, guard_along(sn, j, tau, w0, f0), S, tau_p, 1);
  reset_blocks(sn, j, tau, wm, f0, f0 + nx);
  for (k = 0; k < sn->ns; ++k) {
    double *col = S + (size_t)k * n, *rows = sn->seq_rows;
    for (i = 0; i < nx; ++i) rows[i] = 0;
    salta__spmv(&r->d[SALTA_WRT_X], v[SALTA_WRT_X], 1.0, col, 0, rows, 0);
    salta__spmv(&r->d[SALTA_WRT_Z], v[SALTA_WRT_Z], 1.0, col, nx, rows, 0);
    if (salta__sens_pcol(sn, k) >= 0)
      salta__add_column(&r->d[SALTA_WRT_P], v[SALTA_WRT_P], salta__sens_pcol(sn, k), 1.0, rows, 0);
    for (i = 0; i < nx; ++i) col[i] += (f0[i] - f1[i]) * tau_p[k];   /* every row: the flow jumps */
    for (e = lo; e < hi; ++e) {   /* the rows it resets */
      i = d->r_assign_rows[e];
      col[i] = rows[i] + (sn->jump_v[i] - f1[i]) * tau_p[k];
    }
  }
  if (salta__sens_fill_z(sn, tau, w1, S)) return singular_after(sn, tau, d->e_names[j]);
  return SALTA_OK;
}

/* The transpose of sequence_step for the adjoint v (n) of the state after
** it; tb is the member's tau_p's adjoint from outside the jump. */
static int sequence_step_t(salta__sens *sn, int j, int q, double tau, const double *wm, double *v, double *grad_p,
                           double tb) {
  salta__dae *a = sn->dae;
  const salta_model_def *d = a->d;
  const double *w0 = seq_w(sn, q), *f0 = seq_f(sn, q), *w1 = seq_w(sn, q + 1), *f1 = seq_f(sn, q + 1);
  double *rho = sn->seq_rows;
  int e, i, nx = a->nx, lo = d->r_assign_ptr[j], hi = d->r_assign_ptr[j + 1];
  if (salta__dae_fold_z(a, tau, w1, v, grad_p)) return singular_after(sn, tau, d->e_names[j]);
  reset_blocks(sn, j, tau, wm, f0, f0 + nx);
  memset(rho, 0, sizeof(double) * (size_t)nx);
  for (e = lo; e < hi; ++e) {   /* the rows it resets: overwritten */
    i = d->r_assign_rows[e];
    rho[i] = v[i];
    tb += (sn->jump_v[i] - f1[i]) * v[i];
    v[i] = 0;
  }
  for (i = 0; i < nx; ++i) tb += (f0[i] - f1[i]) * v[i];
  reset_rows_t(sn, j, rho, v, grad_p);
  times_of_t(sn, guard_along(sn, j, tau, w0, f0), tb, v, grad_p);
  return SALTA_OK;
}

/* The group's members fired in the order order[0 .. nev) from the left
** limit, S (in place) and each member's tau_p (nev x ns, by member). */
static int compose_in_order(salta__sens *sn, double tau, const salta__left_limit *lm, const int *ev, int nev,
                            const int *order, double *S, double *tau_p) {
  int q, st;
  if ((st = sequence_points(sn, tau, lm, ev, nev, order))) return st;
  for (q = 0; q < nev; ++q)
    if ((st = sequence_step(sn, ev[order[q]], q, tau, lm->w, S, tau_p + (size_t)order[q] * sn->ns))) return st;
  return SALTA_OK;
}

/* The transpose of compose_in_order for the adjoint adj->v. */
static int compose_in_order_t(salta__sens *sn, double tau, const salta__left_limit *lm, const int *ev, int nev,
                              const int *order, salta__jump_adj *adj) {
  int q, st;
  if ((st = sequence_points(sn, tau, lm, ev, nev, order))) return st;
  for (q = nev - 1; q >= 0; --q)
    if ((st = sequence_step_t(sn, ev[order[q]], q, tau, lm->w, adj->v, adj->grad_p,
                              adj->tau_bar ? adj->tau_bar[order[q]] : 0)))
      return st;
  return SALTA_OK;
}

/* ---- a group a direction splits --------------------------------------------------- */

/* Whether the members' tau_p (nev x ns) differ in some direction, beyond
** the rounding of the largest of them. */
static int group_splits(const salta__sens *sn, int nev, const double *tau_p) {
  int k, q, ns = sn->ns;
  for (k = 0; k < ns; ++k) {
    double lo = tau_p[k], hi = tau_p[k], big = 0;
    for (q = 0; q < nev; ++q) {
      double v = tau_p[(size_t)q * ns + k];
      lo = fmin(lo, v), hi = fmax(hi, v), big = fmax(big, fabs(v));
    }
    if (hi - lo > 1e-10 * big) return 1;
  }
  return 0;
}

/* A group a direction moves apart: an error when it cannot be
** differentiated (a member reads what another sets; or the two orders of
** firing give different first-order jumps), naming the members and the
** direction. */
static int not_differentiable(salta__sens *sn, double tau, const int *ev, int qa, int qb, int k, const char *why) {
  const salta_model_def *d = sn->dae->d;
  char dir[160];
  salta__dir_text(d, sn->dirs[k], dir, sizeof dir);
  return salta__fail(sn->dae->err, SALTA_ENODIFF,
                     "model '%s': events '%s' and '%s' fire together at t = %.17g, and %s moves them apart; %s, so "
                     "the loss is not differentiable there", d->name, d->e_names[ev[qa]], d->e_names[ev[qb]], tau, dir,
                     why);
}

/* The jump of S through a group whose members a direction moves apart:
** composed in sequence (declaration order), each member with its own tau_p
** and the flows between them, checked against the reverse order. */
static int group_jump(salta__sens *sn, double tau, const salta__left_limit *lm, const int *ev, int nev, double *S,
                      double *tau_p) {
  salta__dae *a = sn->dae;
  size_t nS = (size_t)a->n * sn->ns;
  int q, k, i, st, coupled, order[64] = {0};
  if (nev > 64) return salta__fail(a->err, SALTA_ESOLVER, "model '%s': a group of %d events at t = %.17g that a "
                                   "direction moves apart: at most 64 are composed in sequence", a->d->name, nev, tau);
  if ((st = salta__dae_group_coupled(a, ev, nev, tau, &coupled))) return st;
  for (k = 0; coupled && k < sn->ns; ++k)
    for (q = 1; q < nev; ++q)
      if (tau_p[(size_t)q * sn->ns + k] != tau_p[k])
        return not_differentiable(sn, tau, ev, 0, q, k, "a member's reset or guard reads a state another's reset "
                                  "sets, so the order of firing changes the state after them");
  for (q = 0; q < nev; ++q) order[q] = nev - 1 - q;
  memcpy(sn->seq_S, sn->S_minus, sizeof(double) * nS);
  if ((st = compose_in_order(sn, tau, lm, ev, nev, order, sn->seq_S, sn->seq_tau))) return st;
  for (q = 0; q < nev; ++q) order[q] = q;
  memcpy(S, sn->S_minus, sizeof(double) * nS);
  if ((st = compose_in_order(sn, tau, lm, ev, nev, order, S, tau_p))) return st;
  for (k = 0; k < sn->ns; ++k) {
    const double *x = S + (size_t)k * a->n, *y = sn->seq_S + (size_t)k * a->n;
    double big = 0, diff = 0;
    for (i = 0; i < a->n; ++i) big = fmax(big, fabs(x[i])), diff = fmax(diff, fabs(x[i] - y[i]));
    if (diff > 1e-8 * (1 + big))
      return not_differentiable(sn, tau, ev, 0, nev - 1, k, "their resets do not commute (firing them in either "
                                "order gives a different first-order jump)");
  }
  return salta__dae_group(a, ev, nev, tau);
}

/* ---- the forward jump and its transpose ------------------------------------------- */

/* The outputs at the right limit wp (with outputs), along the moving event
** time of the first member. */
static void group_outputs(salta__sens *sn, double tau, const double *wp, const double *S, salta__jump *out) {
  salta__dae *a = sn->dae;
  if (!out->outputs) return;
  a->d->h.eval(tau, wp, wp + a->nx, a->p, out->y_plus);
  salta__sens_output_along(sn, tau, wp, S, sn->flow_p, sn->zdot_p, out->tau_p, out->dy_plus);
}

int salta__sens_jump(salta__sens *sn, double tau, const salta__left_limit *lm, const double *wp, const int *ev,
                     int nev, const double *tau_p_fixed, double *S, salta__jump *out) {
  salta__dae *a = sn->dae;
  const double *wm = lm->w;
  int q, st;
  memcpy(sn->S_minus, S, sizeof(double) * (size_t)a->n * sn->ns);
  if (tau_p_fixed)   /* event iteration: the instant moves with the crossing that began it */
    for (q = 0; q < nev; ++q) memcpy(out->tau_p + (size_t)q * sn->ns, tau_p_fixed, sizeof(double) * (size_t)sn->ns);
  else if ((st = event_times(sn, tau, lm, ev, nev, out->tau_p)))
    return st;
  if (out->outputs) {
    a->d->h.eval(tau, wm, wm + a->nx, a->p, out->y_minus);
    salta__sens_output_along(sn, tau, wm, sn->S_minus, lm->xdot, lm->zdot, out->tau_p, out->dy_minus);
  }
  if (salta__dae_flow(a, tau, wp, sn->flow_p, sn->zdot_p)) return singular_after(sn, tau, NULL);
  if (!tau_p_fixed && nev > 1 && group_splits(sn, nev, out->tau_p))
    st = group_jump(sn, tau, lm, ev, nev, S, out->tau_p);
  else
    st = together(sn, tau, lm, wp, ev, nev, out->tau_p, S);
  if (st == SALTA_OK) group_outputs(sn, tau, wp, S, out);
  return st;
}

int salta__jump_transpose(salta__sens *sn, double tau, const salta__left_limit *lm, const double *wp, const int *ev,
                          int nev, salta__jump_form form, salta__jump_adj *adj) {
  salta__dae *a = sn->dae;
  double rate;
  int q, st, order[64] = {0};
  if (form == SALTA__JUMP_TOGETHER || form == SALTA__JUMP_FIXED)
    return together_t(sn, tau, lm, wp, ev, nev, form == SALTA__JUMP_FIXED, adj);
  if (nev > 64) return salta__fail(a->err, SALTA_ESOLVER, "model '%s': a group of %d events at t = %.17g: at most 64 "
                                   "are composed in sequence", a->d->name, nev, tau);
  for (q = 0; q < nev; ++q) {   /* the same rule as together's */
    if ((st = member_guard(sn, ev[q], tau, lm, &rate))) return st;
    order[q] = form == SALTA__JUMP_SEQUENCE ? q : nev - 1 - q;
  }
  if ((st = compose_in_order_t(sn, tau, lm, ev, nev, order, adj))) return st;
  return salta__dae_group(a, ev, nev, tau);
}
