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

/* The stages: the blocks of d by their block_stage (each its own stage
** when d gives none). */
static int build_stages(salta__alg *s) {
  const salta_model_def *d = s->d;
  int nb = s->nblocks, b, st, ns = 0;
  for (b = 0; b < nb; ++b) {
    st = d->block_stage ? d->block_stage[b] : b;
    if (st < 0 || st >= nb) st = b;   /* a malformed def: a stage of its own */
    if (st + 1 > ns) ns = st + 1;
  }
  s->nstages = ns;
  s->stage_ptr = calloc((size_t)ns + 2, sizeof(int));
  s->stage_block = malloc(sizeof(int) * ((size_t)nb + 1));
  s->bstate = malloc(sizeof(int) * ((size_t)nb + 1));
  s->bdprev = malloc(sizeof(double) * ((size_t)nb + 1));
  if (!s->stage_ptr || !s->stage_block || !s->bstate || !s->bdprev) return -1;
  for (b = 0; b < nb; ++b) {
    st = d->block_stage ? d->block_stage[b] : b;
    s->stage_ptr[(st < 0 || st >= nb ? b : st) + 2]++;
  }
  for (st = 0; st < ns; ++st) s->stage_ptr[st + 2] += s->stage_ptr[st + 1];
  for (b = 0; b < nb; ++b) {
    st = d->block_stage ? d->block_stage[b] : b;
    s->stage_block[s->stage_ptr[(st < 0 || st >= nb ? b : st) + 1]++] = b;
  }
  return 0;
}

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
  if (build_stages(s)) {
    free(pos), free(blk);
    return -1;
  }
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
  free(s->stage_ptr), free(s->stage_block), free(s->bstate), free(s->bdprev);
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

/* One Newton step on block b (its m equations for its m unknowns, the
** others fixed) from the residual in gres and the g_z values in gzv: the
** largest step into *dmax and whether each step component was small
** against its own component. -1 when the block's Jacobian is singular or
** not finite. */
static int block_step(salta__alg *s, int b, double *z, double *dmax, int *small) {
  const int *var = s->block_var + s->block_ptr[b], *ent = s->block_ent;
  int m = s->block_ptr[b + 1] - s->block_ptr[b], q, k;
  memset(s->bj, 0, sizeof(double) * (size_t)m * m);
  for (k = s->block_ent_ptr[b]; k < s->block_ent_ptr[b + 1]; ++k) s->bj[ent[2 * k + 1]] = s->gzv[ent[2 * k]];
  if (!salta__all_finite(s->bj, (size_t)m * m) || salta__lu_factor(m, s->bj, s->bpiv)) return -1;
  for (q = 0; q < m; ++q) s->bstep[q] = s->gres[var[q]];
  salta__lu_solve(m, s->bj, s->bpiv, s->bstep, 1, 0);
  *dmax = 0, *small = 1;
  for (q = 0; q < m; ++q) {
    double dz = s->bstep[q];
    z[var[q]] -= dz;
    if (!(fabs(dz) <= *dmax)) *dmax = fabs(dz);   /* NaN propagates */
    if (!(fabs(dz) <= SALTA_NEWTON_STALL_TOL * (1 + fabs(z[var[q]])))) *small = 0;
  }
  s->newton_iters++;
  return 0;
}

/* The largest |g| over block b's rows (NaN wins), and its largest |z|. */
static double block_residual(const salta__alg *s, int b, const double *z, double *zmax) {
  const int *var = s->block_var + s->block_ptr[b];
  int m = s->block_ptr[b + 1] - s->block_ptr[b], q;
  double gmax = 0;
  *zmax = 0;
  for (q = 0; q < m; ++q) {
    double v = fabs(s->gres[var[q]]);
    if (!(v <= gmax)) gmax = v;
    *zmax = fmax(*zmax, fabs(z[var[q]]));
  }
  return gmax;
}

enum { BLOCK_ACTIVE, BLOCK_CONVERGED, BLOCK_DONE };

/* Newton on the blocks of stage st together (they do not read each other):
** one evaluation of g and of g_z per iteration serves them all, each block
** stepping with its own Jacobian until it converges: at a step at
** round-off, or, when its Jacobian is ill-conditioned, when steps stopped
** contracting while each is small against its own component; then g must
** be finite there. With linear (no structure, g linear in z), the second
** step only refines the first against round-off. */
static int newton_stage(salta__alg *s, int st, double t, const double *x, double *z, const double *p,
                        salta__zfail *why) {
  const salta_model_def *d = s->d;
  const int *blocks = s->stage_block + s->stage_ptr[st];
  int nb = s->stage_ptr[st + 1] - s->stage_ptr[st], it, q, left;
  int maxit = s->linear ? 2 : SALTA_NEWTON_MAX_ITERS;
  for (q = 0; q < nb; ++q) s->bstate[q] = BLOCK_ACTIVE, s->bdprev[q] = HUGE_VAL;
  for (it = 0; it <= maxit; ++it) {
    d->g.eval(t, x, z, p, s->gres);
    for (q = 0, left = 0; q < nb; ++q) {
      double zmax, gmax;
      if (s->bstate[q] == BLOCK_DONE) continue;
      gmax = block_residual(s, blocks[q], z, &zmax);
      if (!isfinite(gmax)) goto failed;
      if (s->bstate[q] == BLOCK_CONVERGED || gmax == 0) s->bstate[q] = BLOCK_DONE;
      else left++;
    }
    if (left == 0) return 0;
    if (it == maxit) break;
    d->g.d[SALTA_WRT_Z].eval(t, x, z, p, s->gzv);
    for (q = 0; q < nb; ++q) {
      double dmax, zmax;
      int small;
      if (s->bstate[q] != BLOCK_ACTIVE) continue;
      block_residual(s, blocks[q], z, &zmax);
      if (block_step(s, blocks[q], z, &dmax, &small) || !isfinite(dmax)) goto failed;
      if (dmax <= SALTA_NEWTON_STEP_TOL * (1 + zmax) || (dmax > 0.5 * s->bdprev[q] && small) || (s->linear && it == 1))
        s->bstate[q] = BLOCK_CONVERGED;
      s->bdprev[q] = dmax;
    }
  }
  for (q = 0; q < nb && s->bstate[q] == BLOCK_DONE; ++q) continue;
failed:
  if (q >= nb) q = 0;
  note_worst(s, s->block_var + s->block_ptr[blocks[q]], s->block_ptr[blocks[q] + 1] - s->block_ptr[blocks[q]], why);
  return -1;
}

/* The explicit algebraics of segment seg; a value that is not finite (or a
** nested Newton that failed) names its equation. */
static int assign_segment(salta__alg *s, int seg, double t, const double *x, double *z, const double *p,
                          salta__zfail *why) {
  int i;
  if (!s->d->z_assign) return 0;
  if (s->d->z_assign(seg, t, x, z, p) == 0) {
    if (seg < s->nstages || salta__all_finite(z, (size_t)s->nz)) return 0;
  }
  if (why) {
    why->eq = 0, why->residual = NAN;
    for (i = 0; i < s->nz; ++i)
      if (!isfinite(z[i])) { why->eq = i, why->residual = z[i]; break; }
  }
  return -1;
}

int salta__alg_solve(salta__alg *s, double t, const double *x, double *z, const double *p, salta__zfail *why) {
  int st;
  if (s->nz == 0) return 0;
  for (st = 0; st < s->nstages; ++st) {
    if (assign_segment(s, st, t, x, z, p, why)) return -1;
    if (newton_stage(s, st, t, x, z, p, why)) return -1;
  }
  return assign_segment(s, s->nstages, t, x, z, p, why);
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
