/*
** sens.c -- forward sensitivity algebra on the sparse Jacobian kernels (see
** sens.h); the jump through an event group is jump.c's.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "errors.h"
#include "sens_impl.h"
#include "start.h"
#include "tol.h"

const char *salta__dir_text(const salta_model_def *d, int dir, char *buf, size_t cap) {
  if (dir >= 0) snprintf(buf, cap, "parameter '%s'", d->p_names[dir]);
  else snprintf(buf, cap, "the start value of '%s'", d->x_names[-dir - 1]);
  return buf;
}

/* The arrays of sn (lengths from its sizes, for the allocation). */
#define SENS_ARRAYS 21
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
    SALTA__ARRAY(sn->seq_rows, nx), SALTA__ARRAY(sn->adj_out, n), SALTA__ARRAY(sn->adj_tb, ne)};
  memcpy(list, all, sizeof all);
  return SENS_ARRAYS;
}

/* The same for the int arrays: the members of a group composed in
** sequence, and the directions' parameter columns. */
#define INT_ARRAYS 3
static size_t int_arrays(salta__sens *sn, salta__array *list) {
  salta__array all[INT_ARRAYS] = {SALTA__ARRAY(sn->seq_events, (size_t)sn->dae->d->ne),
                                  SALTA__ARRAY(sn->fp_at, (size_t)sn->ns), SALTA__ARRAY(sn->gp_at, (size_t)sn->ns)};
  memcpy(list, all, sizeof all);
  return INT_ARRAYS;
}

int salta__sens_init(salta__sens *sn, salta__dae *dae, const int *dirs, int ns) {
  salta__array list[SENS_ARRAYS], ints[INT_ARRAYS];
  int k;
  memset(sn, 0, sizeof *sn);
  sn->dae = dae;
  sn->dirs = dirs;
  sn->ns = ns;
  if (salta__arrays_alloc(list, sens_arrays(sn, list)) || salta__arrays_alloc(ints, int_arrays(sn, ints))) {
    salta__sens_free(sn);
    return salta__fail(dae->err, SALTA_EMEM, "out of memory");
  }
  sn->zdot_p = sn->flow_p + dae->nx;
  for (k = 0; k < ns; ++k) {   /* found once: each stage adds these columns */
    int j = salta__sens_pcol(sn, k);
    sn->fp_at[k] = j >= 0 ? salta__column_start(&dae->d->f.d[SALTA_WRT_P], j) : 0;
    sn->gp_at[k] = j >= 0 ? salta__column_start(&dae->d->g.d[SALTA_WRT_P], j) : 0;
  }
  return SALTA_OK;
}

void salta__sens_free(salta__sens *sn) {
  salta__array list[SENS_ARRAYS], ints[INT_ARRAYS];
  if (sn->dae) {
    salta__arrays_free(list, sens_arrays(sn, list));
    salta__arrays_free(ints, int_arrays(sn, ints));
  }
  free(sn->seq_pt);
  memset(sn, 0, sizeof *sn);
}

/* r[row0 ..] += scale (F_x s_x + F_z s_z + F_p[:, j]) along column col (x
** then z) of direction j (j < 0: no parameter), F_p's column j starting
** at entry `at` (< 0: found here). */
static void add_directional(const salta__sens *sn, const salta_function_def *fn, double *const *vals,
                            const double *col, int j, int at, double scale, double *r, int row0) {
  const salta_sparse_def *fp = &fn->d[SALTA_WRT_P];
  salta__spmv(&fn->d[SALTA_WRT_X], vals[SALTA_WRT_X], scale, col, 0, r, row0);
  salta__spmv(&fn->d[SALTA_WRT_Z], vals[SALTA_WRT_Z], scale, col, sn->dae->nx, r, row0);
  if (j >= 0) salta__add_column_at(fp, vals[SALTA_WRT_P], at >= 0 ? at : salta__column_start(fp, j), j, scale, r, row0);
}

int salta__sens_check(salta__sens *sn, const double *S, int rows, int ld, double t, const double *w) {
  salta__dae *a = sn->dae;
  const salta_model_def *d = a->d;
  char cause[512], dir[160];
  int k, i, ok = 1;
  for (k = 0; k < sn->ns && ok; ++k) ok = salta__all_finite(S + (size_t)k * ld, (size_t)rows);
  if (ok) return SALTA_OK;
  /* the directional kernels record nothing: the Jacobian kernels at w do */
  for (k = SALTA_WRT_X; w && k <= SALTA_WRT_P; ++k) {
    salta__dae_eval_jac(a, &d->f.d[k], t, w, sn->jac[0][k]);
    salta__dae_eval_jac(a, &d->g.d[k], t, w, sn->jac[1][k]);
  }
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

/* R (rows per column, at R + k ldr) += the Jacobian block w of fn times
** V's columns (at V + k ldv): by the directional kernel where the model
** has one, else by the Jacobian kernel's values (into vals). */
static void add_product(salta__sens *sn, const salta_function_def *fn, int w, double t, const double *x,
                        const double *V, int ldv, double *R, int ldr, double *vals) {
  salta__dae *a = sn->dae;
  salta_dirs_fn dirs = w == SALTA_WRT_X ? fn->dirs_x : fn->dirs_z;
  if (fn->d[w].nnz == 0) return;
  if (dirs) {
    dirs(t, x, x + a->nx, a->p, V, ldv, sn->ns, R, ldr);
    return;
  }
  salta__dae_eval_jac(a, &fn->d[w], t, x, vals);
  salta__spmv_dirs(&fn->d[w], vals, V, (size_t)ldv, 0, R, (size_t)ldr, 0, sn->ns);
}

/* R's column k (at R + k ldr) += the column of fn's Jacobian by p that
** direction k moves (none for a start value's), by the directional kernel
** where the model has one; at[k]: where that column starts in d[p]. */
static void add_p_columns(salta__sens *sn, const salta_function_def *fn, double t, const double *x, double *R,
                          int ldr, const int *at) {
  const salta_sparse_def *sp = &fn->d[SALTA_WRT_P];
  double *vals = sn->jac[0][SALTA_WRT_P];
  int k;
  if (sp->nnz == 0) return;
  if (fn->dirs_p) {
    fn->dirs_p(t, x, x + sn->dae->nx, sn->dae->p, sn->dirs, sn->ns, R, ldr);
    return;
  }
  salta__dae_eval_jac(sn->dae, sp, t, x, vals);
  for (k = 0; k < sn->ns; ++k)
    if (salta__sens_pcol(sn, k) >= 0)
      salta__add_column_at(sp, vals, at[k], salta__sens_pcol(sn, k), 1.0, R + (size_t)k * ldr, 0);
}

/* S's z rows from its x rows; by g_z's inverse where one is formed when
** by_inverse (the stages), else by its factorisation. */
static int z_from_x(salta__sens *sn, double t, const double *w, const double *Sx, int ldx, double *Sz, int ldz,
                    int by_inverse) {
  salta__dae *a = sn->dae;
  const salta_function_def *g = &a->d->g;
  int k, i, nz = a->nz, st;
  size_t q;
  double *b = ldz == nz ? Sz : sn->zrhs;   /* solved in place where Sz is packed */
  if (nz == 0) return SALTA_OK;
  if ((st = salta__dae_factor_gz(a, t, w))) return st;
  memset(b, 0, sizeof(double) * (size_t)nz * sn->ns);
  add_product(sn, g, SALTA_WRT_X, t, w, Sx, ldx, b, nz, sn->jac[0][SALTA_WRT_X]);
  add_p_columns(sn, g, t, w, b, nz, sn->gp_at);
  if (by_inverse) salta__dae_gz_apply(a, b, sn->ns);
  else salta__dae_gz_solve(a, b, sn->ns, 0);
  if (b == Sz)
    for (q = 0; q < (size_t)nz * sn->ns; ++q) Sz[q] = -Sz[q];
  else
    for (k = 0; k < sn->ns; ++k)
      for (i = 0; i < nz; ++i) Sz[(size_t)k * ldz + i] = -b[(size_t)k * nz + i];
  return SALTA_OK;
}

int salta__sens_fill_z(salta__sens *sn, double t, const double *w, double *S) {
  return z_from_x(sn, t, w, S, sn->dae->n, S + sn->dae->nx, sn->dae->n, 0);
}

/* Sp = f_x s_x + f_z s_z + f_p (nx rows), column k's at Sx + k ldx, Sz + k
** ldz and Sp + k ldp. */
static void prime_at(salta__sens *sn, double t, const double *w, const double *Sx, int ldx, const double *Sz, int ldz,
                     double *Sp, int ldp) {
  const salta_function_def *f = &sn->dae->d->f;
  int k, nx = sn->dae->nx;
  if (ldp == nx) memset(Sp, 0, sizeof(double) * (size_t)nx * sn->ns);
  else for (k = 0; k < sn->ns; ++k) memset(Sp + (size_t)k * ldp, 0, sizeof(double) * (size_t)nx);
  add_product(sn, f, SALTA_WRT_X, t, w, Sx, ldx, Sp, ldp, sn->jac[0][SALTA_WRT_X]);
  add_product(sn, f, SALTA_WRT_Z, t, w, Sz, ldz, Sp, ldp, sn->jac[0][SALTA_WRT_Z]);
  add_p_columns(sn, f, t, w, Sp, ldp, sn->fp_at);
}

int salta__sens_stage_prime(salta__sens *sn, double t, const double *w, const double *Sx, int ldx, double *Sz,
                            int ldz, double *Sp, int ldp) {
  const salta__dae *a = sn->dae;
  const salta_model_def *d = a->d;
  int k, st;
  if (!d->reduced_dx) {
    if ((st = z_from_x(sn, t, w, Sx, ldx, Sz, ldz, 1))) return st;
    prime_at(sn, t, w, Sx, ldx, Sz, ldz, Sp, ldp);
    return SALTA_OK;
  }
  for (k = 0; k < sn->ns; ++k) memset(Sp + (size_t)k * ldp, 0, sizeof(double) * (size_t)a->nx);
  d->reduced_dx(t, w, w + a->nx, a->p, Sx, ldx, sn->ns, Sp, ldp);
  d->reduced_dp(t, w, w + a->nx, a->p, sn->dirs, sn->ns, Sp, ldp);
  return SALTA_OK;
}

void salta__sens_prime(salta__sens *sn, double t, const double *w, const double *S, double *Sp) {
  int k, n = sn->dae->n, nx = sn->dae->nx;
  prime_at(sn, t, w, S, n, S + nx, n, Sp, n);   /* clears the x rows */
  for (k = 0; k < sn->ns; ++k) memset(Sp + (size_t)k * n + nx, 0, sizeof(double) * (size_t)(n - nx));
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
  salta__sens_eval_blocks(sn, &d->f, 3, t, w, sn->jac[0]);
  salta__sens_eval_blocks(sn, &d->g, 3, t, w, sn->jac[1]);
  for (k = 0; k < sn->ns; ++k) {
    double *r = R[k];
    int j = salta__sens_pcol(sn, k);
    for (i = 0; i < nx; ++i) r[i] = Sp[k][i];
    for (i = nx; i < n; ++i) r[i] = 0;
    add_directional(sn, &d->f, sn->jac[0], S[k], j, sn->fp_at[k], -1.0, r, 0);
    add_directional(sn, &d->g, sn->jac[1], S[k], j, sn->gp_at[k], 1.0, r, nx);
  }
}

/* dy (ny x ns) = h_x s_x + h_z s_z + h_p, plus (h_x x' + h_z z' + h_t) tau_p
** along a moving event time when tau_p is given. */
void salta__sens_output_along(salta__sens *sn, double t, const double *w, const double *S, const double *xdot,
                              const double *zdot, const double *tau_p, double *dy) {
  const salta_function_def *h = &sn->dae->d->h;
  int k, i, n = sn->dae->n, nx = sn->dae->nx, ny = sn->dae->d->ny;
  salta__sens_eval_blocks(sn, h, 4, t, w, sn->jac[0]);
  for (k = 0; k < sn->ns; ++k) {
    double *out = dy + (size_t)k * ny;
    memset(out, 0, sizeof(double) * (size_t)ny);
    add_directional(sn, h, sn->jac[0], S + (size_t)k * n, salta__sens_pcol(sn, k), -1, 1.0, out, 0);
    if (tau_p) {
      for (i = 0; i < nx; ++i) sn->moved[i] = xdot[i] * tau_p[k];
      for (i = 0; i < sn->dae->nz; ++i) sn->moved[nx + i] = zdot[i] * tau_p[k];
      add_directional(sn, h, sn->jac[0], sn->moved, -1, -1, 1.0, out, 0);
      for (i = 0; i < h->d[SALTA_WRT_T].nnz; ++i)
        out[h->d[SALTA_WRT_T].row[i]] += sn->jac[0][SALTA_WRT_T][i] * tau_p[k];
    }
  }
}

void salta__sens_output(salta__sens *sn, double t, const double *w, const double *S, double *dy) {
  salta__sens_output_along(sn, t, w, S, NULL, NULL, NULL, dy);
}
