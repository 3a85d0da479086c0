/*
** algebraic.c -- g = 0 block by block, and g_z's factorisation (see
** algebraic.h).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algebraic.h"
#include "linsol.h"
#include "tol.h"

/* Above this many algebraics a structured g_z is factored by KLU. */
#define SALTA_GZ_DENSE_MAX 32

/* The blocks of d (one of every algebraic when d has no structure), and
** the g_z entries inside each with their place in the block's matrix. */
static int build_blocks(salta__alg *s) {
  const salta_model_def *d = s->d;
  const salta_sparse_def *gz = &d->g.d[SALTA_WRT_Z];
  int nz = s->nz, nb = d->z_block ? d->nblocks : (nz > 0), b, i, k, q;
  int *pos = malloc(sizeof(int) * ((size_t)nz + 1)), *blk = malloc(sizeof(int) * ((size_t)nz + 1));
  s->nblocks = nb;
  s->block_ptr = calloc((size_t)nb + 2, sizeof(int));
  s->block_var = malloc(sizeof(int) * ((size_t)nz + 1));
  s->block_ent_ptr = calloc((size_t)nb + 2, sizeof(int));
  s->block_ent = malloc(sizeof(int) * 2 * ((size_t)gz->nnz + 1));
  if (!pos || !blk || !s->block_ptr || !s->block_var || !s->block_ent_ptr || !s->block_ent) {
    free(pos), free(blk);
    return -1;
  }
  for (i = 0; i < nz; ++i) {
    blk[i] = d->z_block ? d->z_block[i] : 0;
    if (blk[i] >= nb) blk[i] = -1;   /* a malformed def: treat as explicit */
    if (blk[i] >= 0) s->block_ptr[blk[i] + 2]++;
  }
  for (b = 0; b < nb; ++b) s->block_ptr[b + 2] += s->block_ptr[b + 1];
  for (i = 0; i < nz; ++i)
    if (blk[i] >= 0) s->block_var[s->block_ptr[blk[i] + 1]++] = i;
  for (b = 0; b < nb; ++b)
    for (q = s->block_ptr[b]; q < s->block_ptr[b + 1]; ++q) pos[s->block_var[q]] = q - s->block_ptr[b];
  s->max_block = 1;
  for (b = 0; b < nb; ++b)
    if (s->block_ptr[b + 1] - s->block_ptr[b] > s->max_block) s->max_block = s->block_ptr[b + 1] - s->block_ptr[b];
  for (k = 0; k < gz->nnz; ++k) {
    int r = gz->row[k], c = gz->col[k];
    if (blk[r] >= 0 && blk[r] == blk[c]) s->block_ent_ptr[blk[r] + 2]++;
  }
  for (b = 0; b < nb; ++b) s->block_ent_ptr[b + 2] += s->block_ent_ptr[b + 1];
  for (k = 0; k < gz->nnz; ++k) {
    int r = gz->row[k], c = gz->col[k], m;
    if (blk[r] < 0 || blk[r] != blk[c]) continue;
    m = s->block_ptr[blk[r] + 1] - s->block_ptr[blk[r]];
    q = s->block_ent_ptr[blk[r] + 1]++;
    s->block_ent[2 * q] = k, s->block_ent[2 * q + 1] = pos[c] * m + pos[r];
  }
  free(pos), free(blk);
  return 0;
}

/* g_z's own CSC pattern (the kernel's entries are column-major). */
static int build_gz_pattern(salta__pattern *p, const salta_sparse_def *gz, int nz) {
  int k;
  memset(p, 0, sizeof *p);
  p->n = nz, p->nnz = gz->nnz;
  p->colptr = calloc((size_t)nz + 1, sizeof(int));
  p->rowind = malloc(sizeof(int) * ((size_t)gz->nnz + 1));
  if (!p->colptr || !p->rowind) return -1;
  for (k = 0; k < gz->nnz; ++k) p->colptr[gz->col[k] + 1]++, p->rowind[k] = gz->row[k];
  for (k = 0; k < nz; ++k) p->colptr[k + 1] += p->colptr[k];
  return 0;
}

int salta__alg_init(salta__alg *s, const salta_model_def *d) {
  const salta_sparse_def *gz = &d->g.d[SALTA_WRT_Z];
  memset(s, 0, sizeof *s);
  s->d = d, s->nz = d->nz;
  if (s->nz == 0) return 0;
  s->linear = !d->z_block && (gz->indep & SALTA_ARG_Z) != 0;
  s->sparse = d->z_block && s->nz > SALTA_GZ_DENSE_MAX;
  if (build_blocks(s)) return -1;
  s->bj = malloc(sizeof(double) * (size_t)s->max_block * s->max_block);
  s->bpiv = malloc(sizeof(int) * (size_t)s->max_block);
  s->bstep = malloc(sizeof(double) * (size_t)s->max_block);
  s->gres = malloc(sizeof(double) * (size_t)s->nz);
  s->gzv = malloc(sizeof(double) * ((size_t)gz->nnz + 1));
  if (!s->bj || !s->bpiv || !s->bstep || !s->gres || !s->gzv) return -1;
  if (s->sparse) {
    if (build_gz_pattern(&s->gz_pat, gz, s->nz)) return -1;
    if (!(s->klu = salta__sparselu_new(&s->gz_pat))) s->sparse = 0;
  }
  if (!s->sparse) {
    s->gz = malloc(sizeof(double) * (size_t)s->nz * s->nz);
    s->gz_piv = malloc(sizeof(int) * (size_t)s->nz);
    if (!s->gz || !s->gz_piv) return -1;
  }
  return 0;
}

void salta__alg_free(salta__alg *s) {
  free(s->block_ptr), free(s->block_var), free(s->block_ent_ptr), free(s->block_ent);
  free(s->bj), free(s->bpiv), free(s->bstep), free(s->gres), free(s->gzv);
  free(s->gz), free(s->gz_piv);
  salta__sparselu_free(s->klu);
  free(s->gz_pat.colptr), free(s->gz_pat.rowind);
  memset(s, 0, sizeof *s);
}

/* ---- the solve ------------------------------------------------------------ */

/* The block row with the largest |g| (NaN wins) into why. */
static void note_worst(const salta__alg *s, const int *var, int m, salta__zfail *why) {
  double gmax = -1;
  int q;
  if (!why) return;
  for (q = 0; q < m; ++q) {
    double v = fabs(s->gres[var[q]]);
    if (!(v <= gmax)) gmax = v, why->eq = var[q], why->residual = s->gres[var[q]];
  }
}

/* Newton on the m equations of block b for its m unknowns, the others
** fixed: converged at a step at round-off, or, when the block's Jacobian is
** ill-conditioned, when steps stopped contracting while each is small
** against its own component. With linear, g is linear in the unknowns and
** the second step only refines the first against round-off. */
static int newton_block(salta__alg *s, int b, double t, const double *x, double *z, const double *p,
                        salta__zfail *why) {
  const salta_model_def *d = s->d;
  const salta_sparse_def *gz = &d->g.d[SALTA_WRT_Z];
  const int *var = s->block_var + s->block_ptr[b], *ent = s->block_ent;
  int m = s->block_ptr[b + 1] - s->block_ptr[b], it, q, k;
  int maxit = s->linear ? 2 : SALTA_NEWTON_MAX_ITERS;
  double dprev = HUGE_VAL;
  for (it = 0; it < maxit; ++it) {
    double dmax = 0, zmax = 0, gmax = 0;
    int small = 1;
    d->g.eval(t, x, z, p, s->gres);
    for (q = 0; q < m; ++q) {
      double v = fabs(s->gres[var[q]]);
      if (!(v <= gmax)) gmax = v;
      zmax = fmax(zmax, fabs(z[var[q]]));
    }
    if (!isfinite(gmax)) break;
    if (gmax == 0) return 0;
    gz->eval(t, x, z, p, s->gzv);
    memset(s->bj, 0, sizeof(double) * (size_t)m * m);
    for (k = s->block_ent_ptr[b]; k < s->block_ent_ptr[b + 1]; ++k) s->bj[ent[2 * k + 1]] = s->gzv[ent[2 * k]];
    if (!salta__all_finite(s->bj, (size_t)m * m) || salta__lu_factor(m, s->bj, s->bpiv)) break;
    for (q = 0; q < m; ++q) s->bstep[q] = s->gres[var[q]];
    salta__lu_solve(m, s->bj, s->bpiv, s->bstep, 1, 0);
    for (q = 0; q < m; ++q) {
      double dz = s->bstep[q];
      z[var[q]] -= dz;
      if (!(fabs(dz) <= dmax)) dmax = fabs(dz);   /* NaN propagates */
      if (!(fabs(dz) <= SALTA_NEWTON_STALL_TOL * (1 + fabs(z[var[q]])))) small = 0;
    }
    s->newton_iters++;
    if (!isfinite(dmax)) break;
    if (dmax <= SALTA_NEWTON_STEP_TOL * (1 + zmax) || (dmax > 0.5 * dprev && small) || (s->linear && it == 1)) {
      d->g.eval(t, x, z, p, s->gres);
      for (q = 0; q < m; ++q)
        if (!isfinite(s->gres[var[q]])) break;
      if (q == m) return 0;
      break;
    }
    dprev = dmax;
  }
  note_worst(s, var, m, why);
  return -1;
}

/* The explicit algebraics of segment seg; a value that is not finite (or a
** nested Newton that failed) names its equation. */
static int assign_segment(salta__alg *s, int seg, double t, const double *x, double *z, const double *p,
                          salta__zfail *why) {
  int i;
  if (!s->d->z_assign) return 0;
  if (s->d->z_assign(seg, t, x, z, p) == 0) {
    if (seg < s->nblocks || salta__all_finite(z, (size_t)s->nz)) return 0;
  }
  if (why) {
    why->eq = 0, why->residual = NAN;
    for (i = 0; i < s->nz; ++i)
      if (!isfinite(z[i])) { why->eq = i, why->residual = z[i]; break; }
  }
  return -1;
}

int salta__alg_solve(salta__alg *s, double t, const double *x, double *z, const double *p, salta__zfail *why) {
  int b;
  if (s->nz == 0) return 0;
  for (b = 0; b < s->nblocks; ++b) {
    if (assign_segment(s, b, t, x, z, p, why)) return -1;
    if (newton_block(s, b, t, x, z, p, why)) return -1;
  }
  return assign_segment(s, s->nblocks, t, x, z, p, why);
}

/* ---- g_z ----------------------------------------------------------------- */

int salta__alg_factor(salta__alg *s, const double *vals) {
  const salta_sparse_def *gz = &s->d->g.d[SALTA_WRT_Z];
  int nz = s->nz, k;
  if (s->sparse) return salta__sparselu_factor(s->klu, vals);
  memset(s->gz, 0, sizeof(double) * (size_t)nz * nz);
  for (k = 0; k < gz->nnz; ++k) s->gz[(size_t)gz->col[k] * nz + gz->row[k]] = vals[k];
  return salta__lu_factor(nz, s->gz, s->gz_piv) ? -1 : 0;
}

void salta__alg_gz_solve(const salta__alg *s, double *b, int nrhs, int trans) {
  int c;
  if (!s->sparse) {
    salta__lu_solve(s->nz, s->gz, s->gz_piv, b, nrhs, trans);
    return;
  }
  for (c = 0; c < nrhs; ++c) salta__sparselu_solve(s->klu, b + (size_t)c * s->nz, trans);
}
