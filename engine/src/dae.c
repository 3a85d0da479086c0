/*
** dae.c -- the DAE at a point: one Newton on g, one iteration matrix, one
** guard rate and grazing rule, one composite reset (see dae.h).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "dae.h"
#include "errors.h"
#include "linsol.h"
#include "params.h"
#include "tol.h"

static int max_nnz(const salta_model_def *d) {
  const salta_function_def *fns[] = {&d->f, &d->g, &d->h, &d->e};
  int m = 1, k, w, j;
  for (k = 0; k < 4; ++k)
    for (w = 0; w < 4; ++w) if (fns[k]->d[w].nnz > m) m = fns[k]->d[w].nnz;
  for (j = 0; j < d->ne; ++j)
    for (w = 0; w < 4; ++w) if (d->r[j].d[w].nnz > m) m = d->r[j].d[w].nnz;
  return m;
}

/* The entries of each guard's row, per Jacobian of e, in kernel order. */
static int build_guard_rows(salta__dae *a) {
  int w, st;
  for (w = 0; w < 4; ++w) {
    const salta_sparse_def *sp = &a->d->e.d[w];
    if ((st = salta__group_by(sp->row, sp->nnz, a->ne, &a->guard_row_ptr[w], &a->guard_row_ent[w], a->err))) return st;
  }
  return SALTA_OK;
}

/* The scratch arrays of a (lengths for the allocation). */
#define DAE_ARRAYS 5
static size_t dae_arrays(salta__dae *a, salta__array *list) {
  salta__array all[DAE_ARRAYS] = {SALTA__ARRAY(a->jv, (size_t)a->maxnnz), SALTA__ARRAY(a->reset_out, (size_t)a->nx),
                                  SALTA__ARRAY(a->writer, (size_t)a->nx), SALTA__ARRAY(a->z_polish, (size_t)a->nz),
                                  SALTA__ARRAY(a->p_full, a->np_full)};
  memcpy(list, all, sizeof all);
  return DAE_ARRAYS;
}

void salta__dae_bind(salta__dae *a, const salta_model_def *d) { a->d = a->alg.d = d; }

int salta__dae_init(salta__dae *a, const salta_model_def *d, char *err) {
  salta__array list[DAE_ARRAYS];
  int st;
  memset(a, 0, sizeof *a);
  a->d = d;
  a->err = err;
  a->nx = d->nx, a->nz = d->nz, a->n = d->nx + d->nz, a->np = d->np, a->ne = d->ne;
  a->maxnnz = max_nnz(d);
  a->np_full = salta__params_len(d);
  a->gz_fixed = (d->g.d[SALTA_WRT_Z].indep & (SALTA_ARG_T | SALTA_ARG_X | SALTA_ARG_Z)) ==
                (SALTA_ARG_T | SALTA_ARG_X | SALTA_ARG_Z);
  if ((st = salta__arrays_alloc(list, dae_arrays(a, list)) ? salta__fail(err, SALTA_EMEM, "out of memory") : SALTA_OK) ||
      (st = build_guard_rows(a)) || (st = salta__alg_init(&a->alg, d, err)))
    salta__dae_free(a);
  return st;
}

void salta__dae_set_params(salta__dae *a, const double *p) {
  a->gz_ready = 0;
  if (!p || a->d->np_derived == 0) {
    a->p = p;
    return;
  }
  salta__params_fill(a->d, p, a->p_full);
  a->p = a->p_full;
}

void salta__dae_free(salta__dae *a) {
  salta__array list[DAE_ARRAYS];
  int w;
  salta__arrays_free(list, dae_arrays(a, list));
  salta__alg_free(&a->alg);
  for (w = 0; w < 4; ++w) { free(a->guard_row_ptr[w]); free(a->guard_row_ent[w]); }
  memset(a, 0, sizeof *a);
}

/* ---- kernels ------------------------------------------------------------- */

static void note_bad(salta__dae *a, const salta_sparse_def *sp, double t, const double *vals) {
  int k;
  if (salta__all_finite(vals, (size_t)sp->nnz)) return;
  for (k = 0; k < sp->nnz; ++k)
    if (!isfinite(vals[k])) {
      a->saw_bad = 1;
      if (!a->bad.sp) a->bad.sp = sp, a->bad.entry = k, a->bad.t = t, a->bad.v = vals[k];
      return;
    }
}

static const double *eval_kernel(salta__dae *a, const salta_sparse_def *sp, double t, const double *x,
                                 const double *z) {
  sp->eval(t, x, z, a->p, a->jv);
  note_bad(a, sp, t, a->jv);
  return a->jv;
}

void salta__dae_eval_jac(salta__dae *a, const salta_sparse_def *sp, double t, const double *w, double *vals) {
  if (sp->nnz == 0) return;
  sp->eval(t, w, w + a->nx, a->p, vals);
  note_bad(a, sp, t, vals);
}

/* The function and argument a Jacobian kernel belongs to, with the names
** of its rows and columns. */
static const char *describe_jac(const salta__dae *a, const salta_sparse_def *sp, int *wrt, int *event) {
  const salta_model_def *d = a->d;
  const salta_function_def *fns[4] = {&d->f, &d->g, &d->h, &d->e};
  static const char *const names[4] = {"f", "g", "h", "guard"};
  int f, w, j;
  *event = -1;
  for (w = 0; w < 4; ++w) {
    for (f = 0; f < 4; ++f)
      if (sp == &fns[f]->d[w]) return *wrt = w, names[f];
    for (j = 0; j < d->ne; ++j)
      if (sp == &d->r[j].d[w]) return *wrt = w, *event = j, "reset";
  }
  return *wrt = 0, "?";
}

static const char *row_name(const salta_model_def *d, const char *fn, int event, int row, char *buf, size_t cap) {
  if (!strcmp(fn, "f") || !strcmp(fn, "reset")) return d->x_names[row];
  if (!strcmp(fn, "h")) return d->y_names[row];
  if (!strcmp(fn, "guard")) return d->e_names[row];
  (void)event;
  snprintf(buf, cap, "g[%d]", row + 1);
  return buf;
}

static const char *col_name(const salta_model_def *d, int wrt, int col) {
  switch (wrt) {
    case SALTA_WRT_X: return d->x_names[col];
    case SALTA_WRT_Z: return d->z_names[col];
    case SALTA_WRT_P: return d->p_names[col];
    default: return "t";
  }
}

const char *salta__dae_bad_text(const salta__dae *a, char *buf, size_t cap) {
  static const char *const wrt_names[4] = {"x", "z", "p", "t"};
  const salta_sparse_def *sp = a->bad.sp;
  char rb[32];
  int wrt, event;
  const char *fn;
  if (!sp) return buf[0] = '\0', buf;
  fn = describe_jac(a, sp, &wrt, &event);
  snprintf(buf, cap, "the kernel d%s%s%s%s/d%s has entry ('%s', '%s') = %g at t = %.17g", fn,
           event >= 0 ? " of event '" : "", event >= 0 ? a->d->e_names[event] : "", event >= 0 ? "'" : "",
           wrt_names[wrt], row_name(a->d, fn, event, sp->row[a->bad.entry], rb, sizeof rb),
           col_name(a->d, wrt, sp->col[a->bad.entry]), a->bad.v, a->bad.t);
  return buf;
}

int salta__dae_residual(const salta__dae *a, double t, const double *w, const double *wp, double *r) {
  int i;
  if (a->d->f.eval(t, w, w + a->nx, a->p, r) || (a->nz && a->d->g.eval(t, w, w + a->nx, a->p, r + a->nx)))
    return -2;
  for (i = 0; i < a->nx; ++i) r[i] = wp[i] - r[i];
  for (i = 0; i < a->n; ++i)
    if (!isfinite(r[i])) return i;
  return -1;
}

void salta__dae_add_dense(salta__dae *a, const salta_sparse_def *sp, double t, const double *w,
                          double scale, double *M, int ld, int row0, int col0) {
  const double *v;
  int k;
  if (sp->nnz == 0) return;
  v = eval_kernel(a, sp, t, w, w + a->nx);
  for (k = 0; k < sp->nnz; ++k) M[(size_t)(col0 + sp->col[k]) * ld + row0 + sp->row[k]] += scale * v[k];
}

void salta__dae_add_transpose(salta__dae *a, const salta_sparse_def *sp, double t, const double *w,
                              double scale, const double *v, int row0, double *y) {
  const double *kv;
  int k;
  if (sp->nnz == 0) return;
  kv = eval_kernel(a, sp, t, w, w + a->nx);
  for (k = 0; k < sp->nnz; ++k) y[sp->col[k]] += scale * kv[k] * v[row0 + sp->row[k]];
}

/* A Jacobian kernel gave a non-finite value: the message names it. */
static int nonfinite_matrix(salta__dae *a, double t) {
  char cause[512];
  return salta__fail(a->err, SALTA_ESOLVER, "model '%s': the iteration matrix is not finite at t = %.17g: %s",
                     a->d->name, t, salta__dae_bad_text(a, cause, sizeof cause));
}

int salta__dae_iter_dense(salta__dae *a, double t, const double *w, double alpha, double beta, double *J) {
  const salta_model_def *d = a->d;
  int n = a->n, nx = a->nx, i;
  a->saw_bad = 0;
  memset(J, 0, sizeof(double) * (size_t)n * n);
  for (i = 0; i < nx; ++i) J[(size_t)i * n + i] = alpha;
  salta__dae_add_dense(a, &d->f.d[SALTA_WRT_X], t, w, -beta, J, n, 0, 0);
  salta__dae_add_dense(a, &d->f.d[SALTA_WRT_Z], t, w, -beta, J, n, 0, nx);
  salta__dae_add_dense(a, &d->g.d[SALTA_WRT_X], t, w, 1.0, J, n, nx, 0);
  salta__dae_add_dense(a, &d->g.d[SALTA_WRT_Z], t, w, 1.0, J, n, nx, nx);
  return a->saw_bad ? nonfinite_matrix(a, t) : SALTA_OK;
}

int salta__dae_iter_sparse(salta__dae *a, const salta__pattern *pat, double t, const double *w,
                           double alpha, double beta, double *vals) {
  const salta_model_def *d = a->d;
  const salta_sparse_def *blk[SALTA_NBLK] = {&d->f.d[SALTA_WRT_X], &d->f.d[SALTA_WRT_Z],
                                             &d->g.d[SALTA_WRT_X], &d->g.d[SALTA_WRT_Z]};
  const double scale[SALTA_NBLK] = {-beta, -beta, 1.0, 1.0};
  int b, k;
  a->saw_bad = 0;
  memset(vals, 0, sizeof(double) * (size_t)pat->nnz);
  for (k = 0; k < a->nx; ++k) vals[pat->diag[k]] = alpha;
  for (b = 0; b < SALTA_NBLK; ++b) {
    const double *v;
    if (blk[b]->nnz == 0) continue;
    v = eval_kernel(a, blk[b], t, w, w + a->nx);
    for (k = 0; k < blk[b]->nnz; ++k) vals[pat->map[b][k]] += scale[b] * v[k];
  }
  return a->saw_bad ? nonfinite_matrix(a, t) : SALTA_OK;
}

/* ---- Newton on g and implicit derivatives --------------------------------------- */

static int factor_gz_xz(salta__dae *a, double t, const double *x, const double *z) {
  const salta_sparse_def *sp = &a->d->g.d[SALTA_WRT_Z];
  if (a->gz_ready) return SALTA_OK;
  a->saw_bad = 0;
  if (sp->nnz == 0 || (eval_kernel(a, sp, t, x, z), a->saw_bad) || salta__alg_factor(&a->alg, a->jv, a->gz_fixed))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': g_z is singular or not finite at t = %.17g", a->d->name, t);
  a->gz_ready = a->gz_fixed;
  return SALTA_OK;
}

int salta__dae_factor_gz(salta__dae *a, double t, const double *w) {
  return a->nz == 0 ? SALTA_OK : factor_gz_xz(a, t, w, w + a->nx);
}

void salta__dae_gz_solve(const salta__dae *a, double *b, int nrhs, int trans) {
  salta__alg_gz_solve(&a->alg, b, nrhs, trans);
}

void salta__dae_gz_apply(const salta__dae *a, double *b, int nrhs) { salta__alg_gz_apply(&a->alg, b, nrhs); }

int salta__dae_solve_z(salta__dae *a, double t, const double *x, double *z, salta__zfail *why) {
  return salta__alg_solve(&a->alg, t, x, z, a->p, why);
}

void salta__dae_polish_z(salta__dae *a, double t, double *w) {
  memcpy(a->z_polish, w + a->nx, sizeof(double) * (size_t)a->nz);
  if (salta__alg_solve(&a->alg, t, w, a->z_polish, a->p, NULL) == 0)
    memcpy(w + a->nx, a->z_polish, sizeof(double) * (size_t)a->nz);
}

int salta__dae_flow(salta__dae *a, double t, const double *w, double *xdot, double *zdot) {
  const salta_model_def *d = a->d;
  int i, nz = a->nz, st;
  d->f.eval(t, w, w + a->nx, a->p, xdot);
  if (nz == 0) return SALTA_OK;
  if ((st = factor_gz_xz(a, t, w, w + a->nx))) return st;
  memset(zdot, 0, sizeof(double) * (size_t)nz);
  salta__dae_add_dense(a, &d->g.d[SALTA_WRT_T], t, w, 1.0, zdot, nz, 0, 0);
  if (d->g.d[SALTA_WRT_X].nnz) {
    const salta_sparse_def *sp = &d->g.d[SALTA_WRT_X];
    const double *v = eval_kernel(a, sp, t, w, w + a->nx);
    int k;
    for (k = 0; k < sp->nnz; ++k) zdot[sp->row[k]] += v[k] * xdot[sp->col[k]];
  }
  salta__alg_gz_solve(&a->alg, zdot, 1, 0);
  for (i = 0; i < nz; ++i) zdot[i] = -zdot[i];
  return SALTA_OK;
}

int salta__dae_fold_z(salta__dae *a, double t, const double *w, double *v, double *grad_p) {
  const salta_model_def *d = a->d;
  int nx = a->nx, st;
  if (a->nz == 0) return SALTA_OK;
  if ((st = factor_gz_xz(a, t, w, w + nx))) return st;
  salta__alg_gz_solve(&a->alg, v + nx, 1, 1);
  salta__dae_add_transpose(a, &d->g.d[SALTA_WRT_X], t, w, -1.0, v, nx, v);
  if (grad_p) salta__dae_add_transpose(a, &d->g.d[SALTA_WRT_P], t, w, -1.0, v, nx, grad_p);
  memset(v + nx, 0, sizeof(double) * (size_t)a->nz);
  return SALTA_OK;
}

/* ---- guards ---------------------------------------------------------------------------- */

double salta__dae_guard_row(salta__dae *a, int j, double t, const double *w, double *const *jac, double *ew,
                            double *ep) {
  const salta_function_def *e = &a->d->e;
  double *dst[3] = {ew, ew + a->nx, ep}, et = 0;
  const int lens[3] = {a->nx, a->nz, a->np};
  int b, q;
  for (b = 0; b < 4; ++b) {
    const int *ptr = a->guard_row_ptr[b], *ent = a->guard_row_ent[b];
    const double *v;
    if (b < 3 && dst[b]) memset(dst[b], 0, sizeof(double) * (size_t)lens[b]);
    if ((b < 3 && !dst[b]) || ptr[j + 1] == ptr[j]) continue;
    v = jac && b != SALTA_WRT_P ? jac[b] : eval_kernel(a, &e->d[b], t, w, w + a->nx);
    for (q = ptr[j]; q < ptr[j + 1]; ++q) {
      if (b == SALTA_WRT_T) et = v[ent[q]];
      else dst[b][e->d[b].col[ent[q]]] = v[ent[q]];
    }
  }
  return et;
}

/* rate[row[k]] += v[k] along[col[k]] (v[k] alone without along) and
** scale[row[k]] += its size, over the nnz entries in their order. */
static void guard_terms(int nnz, const int *row, const int *col, const double *v, const double *along,
                        double *restrict rate, double *restrict scale) {
  int k;
  for (k = 0; k < nnz; ++k) {
    double term = along ? v[k] * along[col[k]] : v[k];
    rate[row[k]] += term;
    scale[row[k]] += fabs(term);
  }
}

void salta__dae_guard_rates(salta__dae *a, double t, const double *w, const double *xdot,
                            const double *zdot, const int *rows, int nrows, double *rate, double *scale,
                            double *const *jac) {
  const salta_function_def *e = &a->d->e;
  const double *along[3] = {xdot, zdot, NULL};
  int b, k, q, n = rows ? nrows : a->ne, finite = 1;
  for (q = 0; q < n; ++q) {
    int j = rows ? rows[q] : q;
    rate[j] = scale[j] = 0;
  }
  for (b = 0; b < 4; ++b) {
    const salta_sparse_def *sp = &e->d[b];
    const int *ptr = a->guard_row_ptr[b], *ent = a->guard_row_ent[b];
    const double *v;
    if (b == SALTA_WRT_P || sp->nnz == 0) continue;
    v = jac ? jac[b] : a->jv;
    sp->eval(t, w, w + a->nx, a->p, (double *)v);   /* checked through the rates below */
    if (!rows) {   /* every row: the entries in their order, each row's terms in its own */
      guard_terms(sp->nnz, sp->row, sp->col, v, b == SALTA_WRT_T ? NULL : along[b], rate, scale);
      continue;
    }
    for (q = 0; q < n; ++q) {   /* a row at a time: no scatter */
      int j = rows ? rows[q] : q;
      double r = rate[j], sc = scale[j];
      for (k = ptr[j]; k < ptr[j + 1]; ++k) {
        double term = b == SALTA_WRT_T ? v[ent[k]] : v[ent[k]] * along[b][sp->col[ent[k]]];
        r += term;
        sc += fabs(term);
      }
      rate[j] = r, scale[j] = sc;
    }
  }
  if (!rows) finite = salta__all_finite(rate, (size_t)n);
  for (q = 0; rows && q < n; ++q) finite &= isfinite(rate[rows[q]]);
  if (!finite)   /* name the kernel */
    for (b = 0; b < 4; ++b)
      if (b != SALTA_WRT_P && e->d[b].nnz) eval_kernel(a, &e->d[b], t, w, w + a->nx);
}

int salta__dae_grazing(double rate, double scale) {
  return !(fabs(rate) > SALTA_GRAZING_RATIO * scale) || !isfinite(rate);
}

/* ---- event groups ---------------------------------------------------------------------- */

int salta__dae_group(salta__dae *a, const int *ev, int n, double t) {
  const salta_model_def *d = a->d;
  int nx = a->nx, q, i, k;
  for (i = 0; i < nx; ++i) a->writer[i] = -1;
  for (q = 0; q < n; ++q)
    for (k = d->r_assign_ptr[ev[q]]; k < d->r_assign_ptr[ev[q] + 1]; ++k) {
      i = d->r_assign_rows[k];
      if (a->writer[i] >= 0)
        return salta__fail(a->err, SALTA_EINPUT,
                           "model '%s': events '%s' and '%s' fire together at t = %.17g and both reset state '%s'",
                           d->name, d->e_names[ev[a->writer[i]]], d->e_names[ev[q]], t, d->x_names[i]);
      a->writer[i] = q;
    }
  return SALTA_OK;
}

int salta__dae_group_coupled(salta__dae *a, const int *ev, int n, double t, int *coupled) {
  const salta_model_def *d = a->d;
  const int *ptr = a->guard_row_ptr[SALTA_WRT_X], *ent = a->guard_row_ent[SALTA_WRT_X];
  int q, k, st;
  *coupled = 0;
  if ((st = salta__dae_group(a, ev, n, t))) return st;
  for (q = 0; q < n && !*coupled; ++q) {
    const salta_sparse_def *rx = &d->r[ev[q]].d[SALTA_WRT_X];
    for (k = 0; k < rx->nnz && !*coupled; ++k) *coupled = a->writer[rx->col[k]] >= 0 && a->writer[rx->col[k]] != q;
    for (k = ptr[ev[q]]; k < ptr[ev[q] + 1] && !*coupled; ++k) {
      int w = a->writer[d->e.d[SALTA_WRT_X].col[ent[k]]];
      *coupled = w >= 0 && w != q;
    }
  }
  return SALTA_OK;
}

/* Event j's reset set state i to a value that is not finite: for an
** input's piece event, its read's argument left the table. */
static int nonfinite_reset(salta__dae *a, int j, int i, double t) {
  const salta_model_def *d = a->d;
  int k = d->e_input ? d->e_input[j] : -1;
  if (k >= 0)
    return salta__fail(a->err, SALTA_EINPUT, "model '%s': input '%s' is read at %s %s its table [%.6g, %.6g] at "
                       "t = %.17g", d->name, d->input_name[k], d->input_arg[k],
                       d->e_direction[j] > 0 ? "beyond the end of" : "below the start of", d->input_lo[k],
                       d->input_hi[k], t);
  return salta__fail(a->err, SALTA_ESOLVER, "model '%s': the reset of event '%s' sets state '%s' to %g at t = %.17g",
                     d->name, d->e_names[j], d->x_names[i], a->reset_out[i], t);
}

int salta__dae_reset(salta__dae *a, const int *ev, int n, double t, const double *wm, double *wp) {
  const salta_model_def *d = a->d;
  int nx = a->nx, q, i, st;
  salta__zfail why;
  if ((st = salta__dae_group(a, ev, n, t))) return st;
  memcpy(wp, wm, sizeof(double) * (size_t)a->n);
  for (q = 0; q < n; ++q) {
    int j = ev[q];
    if (d->r[j].eval(t, wm, wm + nx, a->p, a->reset_out))
      return salta__fail(a->err, SALTA_EKERNEL, "model '%s': the implicit reset of event '%s' did not converge at t = %.17g",
                         d->name, d->e_names[j], t);
    for (i = 0; i < nx; ++i) {
      if (a->writer[i] != q) continue;
      if (!isfinite(a->reset_out[i])) return nonfinite_reset(a, j, i, t);
      wp[i] = a->reset_out[i];
    }
  }
  if (salta__dae_solve_z(a, t, wp, wp + nx, &why))
    return salta__fail(a->err, SALTA_EALGEBRAIC,
                       "model '%s': Newton failed to restore g = 0 after the reset of event '%s'%s at t = %.17g: "
                       "algebraic equation g[%d] (for '%s') keeps residual %g",
                       d->name, d->e_names[ev[0]], n > 1 ? " and its group" : "", t, why.eq + 1,
                       d->z_names[why.eq], why.residual);
  return SALTA_OK;
}

void salta__dae_reset_tmul(salta__dae *a, const int *ev, int n, int wrt, double t, const double *wm,
                           double scale, const double *v, double *y) {
  int q, k, i;
  salta__dae_group(a, ev, n, t);   /* a group that fired has no conflict */
  for (q = 0; q < n; ++q) {
    const salta_sparse_def *sp = &a->d->r[ev[q]].d[wrt];
    const double *kv;
    if (sp->nnz == 0) continue;
    kv = eval_kernel(a, sp, t, wm, wm + a->nx);
    for (k = 0; k < sp->nnz; ++k)
      if (a->writer[sp->row[k]] == q) y[sp->col[k]] += scale * kv[k] * v[sp->row[k]];
  }
  if (wrt == SALTA_WRT_X)
    for (i = 0; i < a->nx; ++i)
      if (a->writer[i] < 0) y[i] += scale * v[i];
}
