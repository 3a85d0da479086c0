/*
** sens.c -- forward sensitivity algebra on the sparse Jacobian kernels (see
** sens.h).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "errors.h"
#include "sens.h"
#include "start.h"
#include "tol.h"

const char *salta__dir_text(const salta_model_def *d, int dir, char *buf, size_t cap) {
  if (dir >= 0) snprintf(buf, cap, "parameter '%s'", d->p_names[dir]);
  else snprintf(buf, cap, "the start value of '%s'", d->x_names[-dir - 1]);
  return buf;
}

/* The arrays of sn (lengths from its sizes, for the allocation). */
#define SENS_ARRAYS 19
static size_t sens_arrays(salta__sens *sn, salta__array *list) {
  const salta__dae *a = sn->dae;
  size_t n = (size_t)a->n, ns = (size_t)sn->ns, m = (size_t)a->maxnnz, nx = (size_t)a->nx, ne = (size_t)a->d->ne;
  salta__array all[SENS_ARRAYS] = {
    SALTA__ARRAY(sn->jac[0][0], m), SALTA__ARRAY(sn->jac[0][1], m), SALTA__ARRAY(sn->jac[0][2], m),
    SALTA__ARRAY(sn->jac[0][3], m), SALTA__ARRAY(sn->jac[1][0], m), SALTA__ARRAY(sn->jac[1][1], m),
    SALTA__ARRAY(sn->jac[1][2], m), SALTA__ARRAY(sn->jac[1][3], m), SALTA__ARRAY(sn->zrhs, (size_t)a->nz * ns),
    SALTA__ARRAY(sn->flow_p, n), SALTA__ARRAY(sn->ew, n), SALTA__ARRAY(sn->ep, (size_t)a->np),
    SALTA__ARRAY(sn->jump_v, nx), SALTA__ARRAY(sn->rp_col, nx), SALTA__ARRAY(sn->moved, n),
    SALTA__ARRAY(sn->S_minus, n * ns), SALTA__ARRAY(sn->seq_S, n * ns), SALTA__ARRAY(sn->seq_tau, ne * ns),
    SALTA__ARRAY(sn->seq_rows, nx)};
  memcpy(list, all, sizeof all);
  return SENS_ARRAYS;
}

/* The same for the per-member arrays of a group composed in sequence. */
#define SEQ_ARRAYS 5
static size_t seq_arrays(salta__sens *sn, salta__array *list) {
  size_t n = (size_t)sn->dae->n;
  salta__array all[SEQ_ARRAYS] = {SALTA__ARRAY(sn->seq_w[0], n), SALTA__ARRAY(sn->seq_w[1], n),
                                  SALTA__ARRAY(sn->seq_flow[0], n), SALTA__ARRAY(sn->seq_flow[1], n),
                                  SALTA__ARRAY(sn->seq_events, (size_t)sn->dae->d->ne)};
  memcpy(list, all, sizeof all);
  return SEQ_ARRAYS;
}

int salta__sens_init(salta__sens *sn, salta__dae *dae, const int *dirs, int ns) {
  salta__array list[SENS_ARRAYS], seq[SEQ_ARRAYS];
  memset(sn, 0, sizeof *sn);
  sn->dae = dae;
  sn->dirs = dirs;
  sn->ns = ns;
  if (salta__arrays_alloc(list, sens_arrays(sn, list)) || salta__arrays_alloc(seq, seq_arrays(sn, seq))) {
    salta__sens_free(sn);
    return salta__fail(dae->err, SALTA_EMEM, "out of memory");
  }
  sn->zdot_p = sn->flow_p + dae->nx;
  return SALTA_OK;
}

void salta__sens_free(salta__sens *sn) {
  salta__array list[SENS_ARRAYS], seq[SEQ_ARRAYS];
  if (sn->dae) {
    salta__arrays_free(list, sens_arrays(sn, list));
    salta__arrays_free(seq, seq_arrays(sn, seq));
  }
  memset(sn, 0, sizeof *sn);
}

/* The parameter column of direction k, or -1. */
static int pcol(const salta__sens *sn, int k) { return sn->dirs[k] >= 0 ? sn->dirs[k] : -1; }

/* Evaluates the first nb Jacobian kernels of fn (x, z, p, t) at (t, w) into
** the value set vals. */
static void eval_blocks(salta__sens *sn, const salta_function_def *fn, int nb, double t, const double *w,
                        double *const *vals) {
  int b;
  for (b = 0; b < nb; ++b) salta__dae_eval_jac(sn->dae, &fn->d[b], t, w, vals[b]);
}

/* r[row0 ..] += scale K s[col0 ..] for a sparse kernel K with values v. */
static void spmv(const salta_sparse_def *sp, const double *v, double scale, const double *s, int col0,
                 double *r, int row0) {
  int k;
  for (k = 0; k < sp->nnz; ++k) r[row0 + sp->row[k]] += scale * v[k] * s[col0 + sp->col[k]];
}

/* The first entry of column j or beyond in a column-major kernel. */
static int column_start(const salta_sparse_def *sp, int j) {
  int lo = 0, hi = sp->nnz;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (sp->col[mid] < j) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* r[row0 + i] += scale K[i, j]: column j of a parameter Jacobian. */
static void add_column(const salta_sparse_def *sp, const double *v, int j, double scale, double *r,
                       int row0) {
  int k;
  for (k = column_start(sp, j); k < sp->nnz && sp->col[k] == j; ++k) r[row0 + sp->row[k]] += scale * v[k];
}

/* r[row0 ..] += scale (F_x s_x + F_z s_z + F_p[:, j]) along column col (x
** then z) of direction j (j < 0: no parameter). */
static void add_directional(const salta__sens *sn, const salta_function_def *fn, double *const *vals,
                            const double *col, int j, double scale, double *r, int row0) {
  spmv(&fn->d[SALTA_WRT_X], vals[SALTA_WRT_X], scale, col, 0, r, row0);
  spmv(&fn->d[SALTA_WRT_Z], vals[SALTA_WRT_Z], scale, col, sn->dae->nx, r, row0);
  if (j >= 0) add_column(&fn->d[SALTA_WRT_P], vals[SALTA_WRT_P], j, scale, r, row0);
}

int salta__sens_check(salta__sens *sn, const double *S, int rows, int ld, double t) {
  const salta__dae *a = sn->dae;
  const salta_model_def *d = a->d;
  char cause[512], dir[160];
  int k, i, ok = 1;
  for (k = 0; k < sn->ns && ok; ++k) ok = salta__all_finite(S + (size_t)k * ld, (size_t)rows);
  if (ok) return SALTA_OK;
  for (k = 0; k < sn->ns; ++k)
    for (i = 0; i < rows; ++i) {
      double v = S[(size_t)k * ld + i];
      if (isfinite(v)) continue;
      salta__dir_text(d, sn->dirs[k], dir, sizeof dir);
      salta__dae_bad_text(a, cause, sizeof cause);
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': the derivative of '%s' by %s is %g at t = %.17g%s%s",
                         d->name, i < a->nx ? d->x_names[i] : d->z_names[i - a->nx], dir, v, t,
                         cause[0] ? ": " : "", cause);
    }
  return SALTA_OK;
}

int salta__sens_fill_z(salta__sens *sn, double t, const double *w, double *S) {
  salta__dae *a = sn->dae;
  const salta_function_def *g = &a->d->g;
  int k, i, n = a->n, nx = a->nx, nz = a->nz, st;
  if (nz == 0) return SALTA_OK;
  if ((st = salta__dae_factor_gz(a, t, w))) return st;
  salta__dae_eval_jac(a, &g->d[SALTA_WRT_X], t, w, sn->jac[0][SALTA_WRT_X]);
  salta__dae_eval_jac(a, &g->d[SALTA_WRT_P], t, w, sn->jac[0][SALTA_WRT_P]);
  memset(sn->zrhs, 0, sizeof(double) * (size_t)nz * sn->ns);
  for (k = 0; k < sn->ns; ++k) {
    double *r = sn->zrhs + (size_t)k * nz;
    spmv(&g->d[SALTA_WRT_X], sn->jac[0][SALTA_WRT_X], 1.0, S + (size_t)k * n, 0, r, 0);
    if (pcol(sn, k) >= 0) add_column(&g->d[SALTA_WRT_P], sn->jac[0][SALTA_WRT_P], pcol(sn, k), 1.0, r, 0);
  }
  salta__dae_gz_solve(a, sn->zrhs, sn->ns, 0);
  for (k = 0; k < sn->ns; ++k)
    for (i = 0; i < nz; ++i) S[(size_t)k * n + nx + i] = -sn->zrhs[(size_t)k * nz + i];
  return SALTA_OK;
}

void salta__sens_prime(salta__sens *sn, double t, const double *w, const double *S, double *Sp) {
  const salta_function_def *f = &sn->dae->d->f;
  int k, n = sn->dae->n;
  eval_blocks(sn, f, 3, t, w, sn->jac[0]);
  for (k = 0; k < sn->ns; ++k) {
    double *out = Sp + (size_t)k * n;
    memset(out, 0, sizeof(double) * (size_t)n);
    add_directional(sn, f, sn->jac[0], S + (size_t)k * n, pcol(sn, k), 1.0, out, 0);
  }
}

int salta__sens_initial(salta__sens *sn, double t0, const double *w, int start_follows_p, double *S) {
  salta__dae *a = sn->dae;
  int k, n = a->n, st;
  memset(S, 0, sizeof(double) * (size_t)n * sn->ns);
  for (k = 0; k < sn->ns; ++k)
    if (sn->dirs[k] < 0) S[(size_t)k * n + (-sn->dirs[k] - 1)] = 1.0;
  if (start_follows_p && (st = salta__start_seed(a->d, t0, a->p, sn->dirs, sn->ns, n, S, a->err))) return st;
  if (salta__sens_fill_z(sn, t0, w, S))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': g_z is singular at t = %g (initial sensitivities)",
                       a->d->name, t0);
  return SALTA_OK;
}

void salta__sens_residual(salta__sens *sn, double t, const double *w, double *const *S,
                          double *const *Sp, double *const *R) {
  const salta_model_def *d = sn->dae->d;
  int k, i, nx = sn->dae->nx, n = sn->dae->n;
  eval_blocks(sn, &d->f, 3, t, w, sn->jac[0]);
  eval_blocks(sn, &d->g, 3, t, w, sn->jac[1]);
  for (k = 0; k < sn->ns; ++k) {
    double *r = R[k];
    int j = pcol(sn, k);
    for (i = 0; i < nx; ++i) r[i] = Sp[k][i];
    for (i = nx; i < n; ++i) r[i] = 0;
    add_directional(sn, &d->f, sn->jac[0], S[k], j, -1.0, r, 0);
    add_directional(sn, &d->g, sn->jac[1], S[k], j, 1.0, r, nx);
  }
}

/* dy (ny x ns) = h_x s_x + h_z s_z + h_p, plus (h_x x' + h_z z' + h_t) tau_p
** along a moving event time when tau_p is given. */
static void output_along(salta__sens *sn, double t, const double *w, const double *S, const double *xdot,
                         const double *zdot, const double *tau_p, double *dy) {
  const salta_function_def *h = &sn->dae->d->h;
  int k, i, n = sn->dae->n, nx = sn->dae->nx, ny = sn->dae->d->ny;
  eval_blocks(sn, h, 4, t, w, sn->jac[0]);
  for (k = 0; k < sn->ns; ++k) {
    double *out = dy + (size_t)k * ny;
    memset(out, 0, sizeof(double) * (size_t)ny);
    add_directional(sn, h, sn->jac[0], S + (size_t)k * n, pcol(sn, k), 1.0, out, 0);
    if (tau_p) {
      for (i = 0; i < nx; ++i) sn->moved[i] = xdot[i] * tau_p[k];
      for (i = 0; i < sn->dae->nz; ++i) sn->moved[nx + i] = zdot[i] * tau_p[k];
      add_directional(sn, h, sn->jac[0], sn->moved, -1, 1.0, out, 0);
      for (i = 0; i < h->d[SALTA_WRT_T].nnz; ++i)
        out[h->d[SALTA_WRT_T].row[i]] += sn->jac[0][SALTA_WRT_T][i] * tau_p[k];
    }
  }
}

void salta__sens_output(salta__sens *sn, double t, const double *w, const double *S, double *dy) {
  output_along(sn, t, w, S, NULL, NULL, NULL, dy);
}

/* ---- the jump ------------------------------------------------------------- */

/* Each member's tau_p from its guard row at the left limit. */
static int event_times(salta__sens *sn, double tau, const salta__left_limit *lm, const int *ev, int nev,
                       double *tau_p) {
  salta__dae *a = sn->dae;
  const salta_model_def *d = a->d;
  const double *wm = lm->w;
  int q, k, i, n = a->n;
  for (q = 0; q < nev; ++q) {
    int j = ev[q];
    double rate = lm->rate[j];
    if (salta__dae_grazing(rate, lm->rscale[j]))
      return salta__fail(a->err, SALTA_ENODIFF,
                         "model '%s': grazing event '%s' at t = %.17g: the guard's rate along the trajectory is %g, "
                         "so the event time and the gradient are undefined", d->name, d->e_names[j], tau, rate);
    salta__dae_guard_row(a, j, tau, wm, lm->ejac, sn->ew, sn->ep);
    for (k = 0; k < sn->ns; ++k) {
      const double *col = sn->S_minus + (size_t)k * n;
      double de = 0;
      for (i = 0; i < n; ++i) de += sn->ew[i] * col[i];
      if (pcol(sn, k) >= 0) de += sn->ep[pcol(sn, k)];
      tau_p[(size_t)q * sn->ns + k] = -de / rate;
    }
  }
  return SALTA_OK;
}

/* The rows member q resets: S+ from its reset's Jacobians at the left limit. */
static void member_rows(salta__sens *sn, int q, int j, double tau, const salta__left_limit *lm,
                        const double *tau_p, double *S) {
  salta__dae *a = sn->dae;
  const double *wm = lm->w;
  const salta_function_def *r = &a->d->r[j];
  double *const *v = sn->jac[0];
  const int *writer = a->writer;
  int k, e, i, n = a->n, nx = a->nx;
  eval_blocks(sn, r, 4, tau, wm, v);
  for (i = 0; i < nx; ++i) sn->jump_v[i] = 0;
  for (e = 0; e < r->d[SALTA_WRT_T].nnz; ++e) sn->jump_v[r->d[SALTA_WRT_T].row[e]] = v[SALTA_WRT_T][e];
  for (e = 0; e < r->d[SALTA_WRT_X].nnz; ++e)
    sn->jump_v[r->d[SALTA_WRT_X].row[e]] += v[SALTA_WRT_X][e] * lm->xdot[r->d[SALTA_WRT_X].col[e]];
  for (e = 0; e < r->d[SALTA_WRT_Z].nnz; ++e)
    sn->jump_v[r->d[SALTA_WRT_Z].row[e]] += v[SALTA_WRT_Z][e] * lm->zdot[r->d[SALTA_WRT_Z].col[e]];
  for (k = 0; k < sn->ns; ++k) {
    const double *col = sn->S_minus + (size_t)k * n;
    double *out = S + (size_t)k * n;
    int pj = pcol(sn, k);
    for (i = 0; i < nx; ++i) if (writer[i] == q) out[i] = 0;
    for (e = 0; e < r->d[SALTA_WRT_X].nnz; ++e)
      if (writer[r->d[SALTA_WRT_X].row[e]] == q) out[r->d[SALTA_WRT_X].row[e]] += v[SALTA_WRT_X][e] * col[r->d[SALTA_WRT_X].col[e]];
    for (e = 0; e < r->d[SALTA_WRT_Z].nnz; ++e)
      if (writer[r->d[SALTA_WRT_Z].row[e]] == q) out[r->d[SALTA_WRT_Z].row[e]] += v[SALTA_WRT_Z][e] * col[nx + r->d[SALTA_WRT_Z].col[e]];
    for (i = 0; i < nx; ++i) sn->rp_col[i] = 0;
    if (pj >= 0) add_column(&r->d[SALTA_WRT_P], v[SALTA_WRT_P], pj, 1.0, sn->rp_col, 0);
    for (i = 0; i < nx; ++i)
      if (writer[i] == q) out[i] += sn->rp_col[i] + (sn->jump_v[i] - sn->flow_p[i]) * tau_p[k];
  }
}

/* ---- a group a direction splits ------------------------------------------------ */

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

/* The text of direction k: "parameter 'p'" or "the start value of 'x'". */
/* One member j fired in sequence: from the state w0 with flow f0 (x' then
** z') and sensitivities S (in place) to w1 with flow f1, at time tau with
** its own tau_p (out, ns) from its guard at w0 along f0. Its reset is read
** at the group's left limit wm (every member reads it). */
static int sequence_step(salta__sens *sn, int j, double tau, const double *wm, const double *w0, const double *f0,
                         const double *w1, const double *f1, double *S, double *tau_p) {
  salta__dae *a = sn->dae;
  const salta_model_def *d = a->d;
  const salta_function_def *r = &d->r[j];
  double *const *v = sn->jac[0], rate;
  int k, e, i, n = a->n, nx = a->nx, lo = d->r_assign_ptr[j], hi = d->r_assign_ptr[j + 1];
  rate = salta__dae_guard_row(a, j, tau, w0, NULL, sn->ew, sn->ep);
  for (i = 0; i < n; ++i) rate += sn->ew[i] * f0[i];
  for (k = 0; k < sn->ns; ++k) {
    const double *col = S + (size_t)k * n;
    double de = pcol(sn, k) >= 0 ? sn->ep[pcol(sn, k)] : 0;
    for (i = 0; i < n; ++i) de += sn->ew[i] * col[i];
    tau_p[k] = -de / rate;
  }
  eval_blocks(sn, r, 4, tau, wm, v);
  for (i = 0; i < nx; ++i) sn->jump_v[i] = 0;
  for (e = 0; e < r->d[SALTA_WRT_T].nnz; ++e) sn->jump_v[r->d[SALTA_WRT_T].row[e]] = v[SALTA_WRT_T][e];
  for (e = 0; e < r->d[SALTA_WRT_X].nnz; ++e)
    sn->jump_v[r->d[SALTA_WRT_X].row[e]] += v[SALTA_WRT_X][e] * f0[r->d[SALTA_WRT_X].col[e]];
  for (e = 0; e < r->d[SALTA_WRT_Z].nnz; ++e)
    sn->jump_v[r->d[SALTA_WRT_Z].row[e]] += v[SALTA_WRT_Z][e] * f0[nx + r->d[SALTA_WRT_Z].col[e]];
  for (k = 0; k < sn->ns; ++k) {
    double *col = S + (size_t)k * n, *rows = sn->seq_rows;
    for (i = 0; i < nx; ++i) rows[i] = 0;
    spmv(&r->d[SALTA_WRT_X], v[SALTA_WRT_X], 1.0, col, 0, rows, 0);
    spmv(&r->d[SALTA_WRT_Z], v[SALTA_WRT_Z], 1.0, col, nx, rows, 0);
    if (pcol(sn, k) >= 0) add_column(&r->d[SALTA_WRT_P], v[SALTA_WRT_P], pcol(sn, k), 1.0, rows, 0);
    for (i = 0; i < nx; ++i) col[i] += (f0[i] - f1[i]) * tau_p[k];   /* every row: the flow jumps */
    for (e = lo; e < hi; ++e) {   /* the rows it resets */
      i = d->r_assign_rows[e];
      col[i] = rows[i] + (sn->jump_v[i] - f1[i]) * tau_p[k];
    }
  }
  if (salta__sens_fill_z(sn, tau, w1, S))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': g_z is singular after the event '%s' at t = %.17g",
                       d->name, d->e_names[j], tau);
  return SALTA_OK;
}

/* The group's members fired in the order order[0 .. nev) from the left
** limit, S (in place) and each member's tau_p (nev x ns, by member). */
static int compose_in_order(salta__sens *sn, double tau, const salta__left_limit *lm, const int *ev, int nev,
                            const int *order, double *S, double *tau_p) {
  salta__dae *a = sn->dae;
  const double *w0 = lm->w;
  double *f0 = sn->seq_flow[0];
  int q, st, cur = 0;
  memcpy(f0, lm->xdot, sizeof(double) * (size_t)a->nx);
  memcpy(f0 + a->nx, lm->zdot, sizeof(double) * (size_t)a->nz);
  for (q = 0; q < nev; ++q) {
    double *w1 = sn->seq_w[1 - cur], *f1 = sn->seq_flow[1 - cur];
    sn->seq_events[q] = ev[order[q]];
    if ((st = salta__dae_reset(a, sn->seq_events, q + 1, tau, lm->w, w1))) return st;
    if (salta__dae_flow(a, tau, w1, f1, f1 + a->nx))
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': g_z is singular after the event '%s' at t = %.17g",
                         a->d->name, a->d->e_names[ev[order[q]]], tau);
    if ((st = sequence_step(sn, ev[order[q]], tau, lm->w, w0, f0, w1, f1, S, tau_p + (size_t)order[q] * sn->ns)))
      return st;
    w0 = w1, f0 = f1, cur = 1 - cur;
  }
  return SALTA_OK;
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

/* The outputs at the right limit wp (with outputs), along the moving event
** time of the first member. */
static int group_outputs(salta__sens *sn, double tau, const double *wp, const double *S, salta__jump *out) {
  salta__dae *a = sn->dae;
  if (out->outputs) {
    a->d->h.eval(tau, wp, wp + a->nx, a->p, out->y_plus);
    output_along(sn, tau, wp, S, sn->flow_p, sn->zdot_p, out->tau_p, out->dy_plus);
  }
  return SALTA_OK;
}

int salta__sens_jump(salta__sens *sn, double tau, const salta__left_limit *lm, const double *wp, const int *ev,
                     int nev, const double *tau_p_fixed, double *S, salta__jump *out) {
  salta__dae *a = sn->dae;
  const salta_model_def *d = a->d;
  const double *wm = lm->w;
  size_t nS = (size_t)a->n * sn->ns;
  int q, k, i, st, n = a->n, nx = a->nx;
  memcpy(sn->S_minus, S, sizeof(double) * nS);
  if (tau_p_fixed)   /* event iteration: the instant moves with the crossing that began it */
    for (q = 0; q < nev; ++q) memcpy(out->tau_p + (size_t)q * sn->ns, tau_p_fixed, sizeof(double) * (size_t)sn->ns);
  else if ((st = event_times(sn, tau, lm, ev, nev, out->tau_p)))
    return st;
  if (out->outputs) {
    d->h.eval(tau, wm, wm + nx, a->p, out->y_minus);
    output_along(sn, tau, wm, sn->S_minus, lm->xdot, lm->zdot, out->tau_p, out->dy_minus);
  }
  if (salta__dae_flow(a, tau, wp, sn->flow_p, sn->zdot_p))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': g_z is singular after the events at t = %.17g",
                       d->name, tau);
  if (!tau_p_fixed && nev > 1 && group_splits(sn, nev, out->tau_p)) {
    if ((st = group_jump(sn, tau, lm, ev, nev, S, out->tau_p))) return st;
    return group_outputs(sn, tau, wp, S, out);
  }
  if ((st = salta__dae_group(a, ev, nev, tau))) return st;
  for (k = 0; k < sn->ns; ++k)   /* rows no member resets: continuous, with x' jumping */
    for (i = 0; i < nx; ++i)
      if (a->writer[i] < 0)
        S[(size_t)k * n + i] = sn->S_minus[(size_t)k * n + i] + (lm->xdot[i] - sn->flow_p[i]) * out->tau_p[k];
  for (q = 0; q < nev; ++q) member_rows(sn, q, ev[q], tau, lm, out->tau_p + (size_t)q * sn->ns, S);
  if (salta__sens_fill_z(sn, tau, wp, S))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': g_z is singular after the events at t = %.17g",
                       d->name, tau);
  return group_outputs(sn, tau, wp, S, out);
}
