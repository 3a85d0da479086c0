/*
** sens_impl.h -- the sparse products the sensitivity algebra (sens.c) and
** the jump of an event group (jump.c) share (internal).
*/
#ifndef SALTA_SENS_IMPL_H
#define SALTA_SENS_IMPL_H

#include "sens.h"

/* The parameter column of direction k, or -1. */
static inline int salta__sens_pcol(const salta__sens *sn, int k) { return sn->dirs[k] >= 0 ? sn->dirs[k] : -1; }

/* Evaluates the first nb Jacobian kernels of fn (x, z, p, t) at (t, w)
** into the value set vals. */
static inline void salta__sens_eval_blocks(salta__sens *sn, const salta_function_def *fn, int nb, double t,
                                           const double *w, double *const *vals) {
  int b;
  for (b = 0; b < nb; ++b) salta__dae_eval_jac(sn->dae, &fn->d[b], t, w, vals[b]);
}

/* r[row0 ..] += scale K s[col0 ..] for a sparse kernel K with values v. */
static inline void salta__spmv(const salta_sparse_def *sp, const double *v, double scale, const double *s, int col0,
                               double *r, int row0) {
  int k;
  for (k = 0; k < sp->nnz; ++k) r[row0 + sp->row[k]] += scale * v[k] * s[col0 + sp->col[k]];
}

/* salta__spmv (scale 1) for ns directions at once: column k of R (leading
** dimension ldr) gains K times column k of S (lds). The directions are the
** inner loop, so that their chains of updates overlap; each entry receives
** the same sums in the same order as ns calls of salta__spmv. */
static inline void salta__spmv_dirs(const salta_sparse_def *sp, const double *v, const double *S, size_t lds, int col0,
                                    double *R, size_t ldr, int row0, int ns) {
  int q, k;
  for (q = 0; q < sp->nnz; ++q) {
    const double vq = v[q], *s = S + col0 + sp->col[q];
    double *r = R + row0 + sp->row[q];
    for (k = 0; k < ns; ++k) r[(size_t)k * ldr] += vq * s[(size_t)k * lds];
  }
}

/* y[col0 ..] += scale K^T v[row0 ..]: the transpose of salta__spmv. */
static inline void salta__spmv_t(const salta_sparse_def *sp, const double *v, double scale, const double *s, int row0,
                                 double *y, int col0) {
  int k;
  for (k = 0; k < sp->nnz; ++k) y[col0 + sp->col[k]] += scale * v[k] * s[row0 + sp->row[k]];
}

/* The first entry of column j or beyond in a column-major kernel. */
static inline int salta__column_start(const salta_sparse_def *sp, int j) {
  int lo = 0, hi = sp->nnz;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (sp->col[mid] < j) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* r[row0 + i] += scale K[i, j] for column j of a parameter Jacobian, whose
** entries start at `at` (salta__column_start; a direction's fp_at or gp_at
** in salta__sens, found once per run). */
static inline void salta__add_column_at(const salta_sparse_def *sp, const double *v, int at, int j, double scale,
                                        double *r, int row0) {
  int k;
  for (k = at; k < sp->nnz && sp->col[k] == j; ++k) r[row0 + sp->row[k]] += scale * v[k];
}

/* The same, its start found here. */
static inline void salta__add_column(const salta_sparse_def *sp, const double *v, int j, double scale, double *r,
                                     int row0) {
  salta__add_column_at(sp, v, salta__column_start(sp, j), j, scale, r, row0);
}

#endif
