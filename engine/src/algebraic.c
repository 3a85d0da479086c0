/*
** algebraic.c -- g = 0 block by block, and g_z's factorisation (see
** algebraic.h).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algebraic.h"
#include "errors.h"
#include "linsol.h"
#include "tol.h"

/* Above this many algebraics a structured g_z is factored by KLU. */
#define SALTA_GZ_DENSE_MAX 32

/* The stage of block b: d's block_stage, or b when d gives none (or a
** malformed one). */
static int stage_of(const salta_model_def *d, int b, int nb) {
  int st = d->block_stage ? d->block_stage[b] : b;
  return st >= 0 && st < nb ? st : b;
}

/* The blocks of d (one of every algebraic when d has no structure), their
** stages, and the g_z entries inside each with their place in the block's
** dense matrix. */
static int build_blocks(salta__alg *s) {
  const salta_model_def *d = s->d;
  const salta_sparse_def *gz = &d->g.d[SALTA_WRT_Z];
  int nz = s->nz, nb = d->z_block ? d->nblocks : 1, b, i, k, q, st = SALTA_EMEM;
  int *blk = malloc(sizeof(int) * ((size_t)nz + 1)), *stage = malloc(sizeof(int) * ((size_t)nb + 1));
  int *pos = malloc(sizeof(int) * ((size_t)nz + 1)), *ekey = malloc(sizeof(int) * ((size_t)gz->nnz + 1));
  s->nblocks = nb;
  if (!blk || !stage || !pos || !ekey) {
    salta__fail(s->err, st, "out of memory");
    goto done;
  }
  for (i = 0; i < nz; ++i) blk[i] = d->z_block ? (d->z_block[i] < nb ? d->z_block[i] : -1) : 0;
  for (b = 0, s->nstages = 0; b < nb; ++b)
    if ((stage[b] = stage_of(d, b, nb)) + 1 > s->nstages) s->nstages = stage[b] + 1;
  for (k = 0; k < gz->nnz; ++k) ekey[k] = blk[gz->row[k]] == blk[gz->col[k]] ? blk[gz->row[k]] : -1;
  if ((st = salta__group_by(blk, nz, nb, &s->block_ptr, &s->block_var, s->err)) ||
      (st = salta__group_by(stage, nb, s->nstages, &s->stage_ptr, &s->stage_block, s->err)) ||
      (st = salta__group_by(ekey, gz->nnz, nb, &s->block_ent_ptr, &s->block_ent, s->err)))
    goto done;
  if (!(s->block_pos = malloc(sizeof(int) * ((size_t)gz->nnz + 1)))) {
    st = salta__fail(s->err, SALTA_EMEM, "out of memory");
    goto done;
  }
  s->max_block = 1;
  for (b = 0; b < nb; ++b) {
    int m = s->block_ptr[b + 1] - s->block_ptr[b];
    if (m > s->max_block) s->max_block = m;
    for (q = s->block_ptr[b]; q < s->block_ptr[b + 1]; ++q) pos[s->block_var[q]] = q - s->block_ptr[b];
    for (q = s->block_ent_ptr[b]; q < s->block_ent_ptr[b + 1]; ++q)
      s->block_pos[q] = pos[gz->col[s->block_ent[q]]] * m + pos[gz->row[s->block_ent[q]]];
  }
  st = SALTA_OK;
done:
  free(blk), free(stage), free(pos), free(ekey);
  return st;
}

int salta__alg_init(salta__alg *s, const salta_model_def *d, char *err) {
  const salta_sparse_def *gz = &d->g.d[SALTA_WRT_Z];
  size_t total;
  int b, st;
  memset(s, 0, sizeof *s);
  s->d = d, s->nz = d->nz, s->err = err;
  if (s->nz == 0) return SALTA_OK;
  s->linear = !d->z_block && (gz->indep & SALTA_ARG_Z) != 0;
  s->sparse = d->z_block && s->nz > SALTA_GZ_DENSE_MAX;
  if ((st = build_blocks(s))) return st;
  if (!(s->bj_off = malloc(sizeof(size_t) * ((size_t)s->nblocks + 1)))) return salta__fail(err, SALTA_EMEM, "out of memory");
  for (b = 0, total = 0; b < s->nblocks; ++b) {
    size_t m = (size_t)(s->block_ptr[b + 1] - s->block_ptr[b]);
    s->bj_off[b] = total, total += m * m;
  }
  s->bj = malloc(sizeof(double) * (total + 1));
  s->bpiv = malloc(sizeof(int) * (size_t)s->nz);
  s->bstep = malloc(sizeof(double) * (size_t)s->max_block);
  s->bstate = malloc(sizeof(int) * ((size_t)s->nblocks + 1));
  s->bdprev = malloc(sizeof(double) * ((size_t)s->nblocks + 1));
  s->gres = malloc(sizeof(double) * (size_t)s->nz);
  s->gzv = malloc(sizeof(double) * ((size_t)gz->nnz + 1));
  if (!s->bj || !s->bpiv || !s->bstep || !s->bstate || !s->bdprev || !s->gres || !s->gzv)
    return salta__fail(err, SALTA_EMEM, "out of memory");
  if (s->sparse) {
    if ((st = salta__pattern_of_kernel(&s->gz_pat, gz, s->nz, err))) return st;
    /* a pattern KLU refuses is factored dense */
    if (salta__sparselu_new(&s->klu, &s->gz_pat, NULL)) s->sparse = 0;
  }
  if (!s->sparse) {
    s->gz = malloc(sizeof(double) * (size_t)s->nz * s->nz);
    s->gz_piv = malloc(sizeof(int) * (size_t)s->nz);
    if (s->nz <= SALTA__GZ_INVERSE) s->gz_inv = malloc(sizeof(double) * (size_t)s->nz * s->nz);
    if (!s->gz || !s->gz_piv || (s->nz <= SALTA__GZ_INVERSE && !s->gz_inv))
      return salta__fail(err, SALTA_EMEM, "out of memory");
  }
  return SALTA_OK;
}

void salta__alg_free(salta__alg *s) {
  free(s->block_ptr), free(s->block_var), free(s->block_ent_ptr), free(s->block_ent), free(s->block_pos);
  free(s->stage_ptr), free(s->stage_block), free(s->bstate), free(s->bdprev);
  free(s->bj), free(s->bj_off), free(s->bpiv), free(s->bstep), free(s->gres), free(s->gzv);
  free(s->gz), free(s->gz_piv), free(s->gz_inv);
  salta__sparselu_free(s->klu);
  salta__pattern_free(&s->gz_pat);
  memset(s, 0, sizeof *s);
}

/* ---- the solve ------------------------------------------------------------ */

/* The block row with the largest |g| (NaN wins) into why. */
static void note_worst(const salta__alg *s, const int *var, int m, salta__zfail *why) {
  double gmax = -1;
  int q;
  if (!why) return;
  why->block = -1, why->kind = SALTA__ZFAIL_NEWTON;
  for (q = 0; q < m; ++q) {
    double v = fabs(s->gres[var[q]]);
    if (!(v <= gmax)) gmax = v, why->eq = var[q], why->residual = s->gres[var[q]];
  }
}

/* One Newton step on block b (its m equations for its m unknowns, the
** others fixed) from the residual in gres and the g_z values in gzv: the
** largest step into *dmax, the largest unknown before it into *zmax, and
** whether each step component was small against its own component. -1
** when the block's Jacobian is singular or not finite. */
static int block_step(salta__alg *s, int b, double *z, double *dmax, double *zmax, int *small) {
  const int *var = s->block_var + s->block_ptr[b];
  int m = s->block_ptr[b + 1] - s->block_ptr[b], q, k, *piv = s->bpiv + s->block_ptr[b];
  double *bj = s->bj + s->bj_off[b];
  memset(bj, 0, sizeof(double) * (size_t)m * m);
  for (k = s->block_ent_ptr[b]; k < s->block_ent_ptr[b + 1]; ++k) bj[s->block_pos[k]] = s->gzv[s->block_ent[k]];
  if (!salta__all_finite(bj, (size_t)m * m) || salta__lu_factor(m, bj, piv, NULL)) return -1;
  for (q = 0; q < m; ++q) s->bstep[q] = s->gres[var[q]];
  salta__lu_solve(m, bj, piv, s->bstep, 1, 0);
  *dmax = *zmax = 0, *small = 1;
  for (q = 0; q < m; ++q) {
    double dz = s->bstep[q];
    *zmax = fmax(*zmax, fabs(z[var[q]]));
    z[var[q]] -= dz;
    if (!(fabs(dz) <= *dmax)) *dmax = fabs(dz);   /* NaN propagates */
    if (!(fabs(dz) <= SALTA_NEWTON_STALL_TOL * (1 + fabs(z[var[q]])))) *small = 0;
  }
  s->newton_iters++;
  return 0;
}

/* Whether block b's Newton contracts at the current iterate: the
** simplified correction there, with the Jacobian of the last step (still
** factored), at most half that step dprev, or at round-off against z. */
static int contracts(salta__alg *s, int b, const double *z, double dprev) {
  const int *var = s->block_var + s->block_ptr[b];
  int m = s->block_ptr[b + 1] - s->block_ptr[b], q, small = 1;
  double dmax = 0;
  for (q = 0; q < m; ++q) s->bstep[q] = s->gres[var[q]];
  salta__lu_solve(m, s->bj + s->bj_off[b], s->bpiv + s->block_ptr[b], s->bstep, 1, 0);
  for (q = 0; q < m; ++q) {
    double dz = fabs(s->bstep[q]);
    if (!(dz <= dmax)) dmax = dz;
    if (!(dz <= SALTA_NEWTON_STALL_TOL * (1 + fabs(z[var[q]])))) small = 0;
  }
  return small || dmax <= 0.5 * dprev;
}

/* The largest |g| over block b's rows (NaN wins). */
static double block_residual(const salta__alg *s, int b) {
  const int *var = s->block_var + s->block_ptr[b];
  int m = s->block_ptr[b + 1] - s->block_ptr[b], q;
  double gmax = 0;
  for (q = 0; q < m; ++q) {
    double v = fabs(s->gres[var[q]]);
    if (!(v <= gmax)) gmax = v;
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
  int nb = s->stage_ptr[st + 1] - s->stage_ptr[st], it, q, left, bad = 0, kind = SALTA__ZFAIL_NEWTON;
  int maxit = s->linear ? 2 : SALTA_NEWTON_MAX_ITERS;
  for (q = 0; q < nb; ++q) s->bstate[q] = BLOCK_ACTIVE, s->bdprev[q] = HUGE_VAL;
  for (it = 0; it <= maxit; ++it) {
    d->g.eval(t, x, z, p, s->gres);
    for (q = 0, left = 0; q < nb; ++q) {
      double gmax;
      if (s->bstate[q] == BLOCK_DONE) continue;
      gmax = block_residual(s, blocks[q]);
      if (!isfinite(gmax)) { bad = q; goto failed; }
      if (s->bstate[q] == BLOCK_CONVERGED || gmax == 0) s->bstate[q] = BLOCK_DONE;
      else if (!left++) bad = q;
    }
    if (left == 0) return 0;
    if (it == maxit) break;
    d->g.d[SALTA_WRT_Z].eval(t, x, z, p, s->gzv);
    for (q = 0; q < nb; ++q) {
      double dmax, zmax;
      int small;
      if (s->bstate[q] != BLOCK_ACTIVE) continue;
      if (s->certify && it > 0 && !contracts(s, blocks[q], z, s->bdprev[q])) {
        bad = q, kind = SALTA__ZFAIL_UNCERTIFIED;
        goto failed;
      }
      if (block_step(s, blocks[q], z, &dmax, &zmax, &small)) { bad = q, kind = SALTA__ZFAIL_SINGULAR; goto failed; }
      if (!isfinite(dmax)) { bad = q; goto failed; }
      if (dmax <= SALTA_NEWTON_STEP_TOL * (1 + zmax) || (dmax > 0.5 * s->bdprev[q] && small) || (s->linear && it == 1))
        s->bstate[q] = BLOCK_CONVERGED;
      s->bdprev[q] = dmax;
    }
  }
failed:
  q = blocks[bad];
  note_worst(s, s->block_var + s->block_ptr[q], s->block_ptr[q + 1] - s->block_ptr[q], why);
  if (why) why->block = q, why->kind = kind;
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
    why->eq = 0, why->residual = NAN, why->block = -1, why->kind = SALTA__ZFAIL_NEWTON;
    for (i = 0; i < s->nz; ++i)
      if (!isfinite(z[i])) { why->eq = i, why->residual = z[i]; break; }
  }
  return -1;
}

/* A failed solve's message, from why. */
static int solve_failed(const salta__alg *s, double t, const salta__zfail *why) {
  static const char *const how[] = {"not converging", "singular", "not contracting"};
  if (why->block < 0)
    return salta__fail(s->err, SALTA_EALGEBRAIC, "model '%s': at t = %.17g the explicit algebraic '%s' is %g",
                       s->d->name, t, s->d->z_names[why->eq], why->residual);
  return salta__fail(s->err, SALTA_EALGEBRAIC, "model '%s': Newton on g failed at t = %.17g (%s): algebraic equation "
                     "g[%d] (for '%s') keeps residual %g", s->d->name, t, how[why->kind], why->eq + 1,
                     s->d->z_names[why->eq], why->residual);
}

int salta__alg_solve(salta__alg *s, double t, const double *x, double *z, const double *p, salta__zfail *why) {
  salta__zfail local;
  int st;
  if (s->nz == 0) return SALTA_OK;
  if (!why) why = &local;
  for (st = 0; st < s->nstages; ++st)
    if (assign_segment(s, st, t, x, z, p, why) || newton_stage(s, st, t, x, z, p, why)) return solve_failed(s, t, why);
  if (assign_segment(s, s->nstages, t, x, z, p, why)) return solve_failed(s, t, why);
  return SALTA_OK;
}

/* ---- g_z ----------------------------------------------------------------- */

/* ||A||_1 ||A^-1||_1 for A with the pattern sp and values vals, and its
** inverse inv (n x n, dense). */
static double condition_1(const salta_sparse_def *sp, const double *vals, const double *inv, int n) {
  double a = 0, b = 0, col = 0;
  int k, i, j;
  for (k = 0; k < sp->nnz; ++k) {   /* column-major: a column's entries are adjacent */
    col += fabs(vals[k]);
    if (k + 1 == sp->nnz || sp->col[k + 1] != sp->col[k]) a = fmax(a, col), col = 0;
  }
  for (j = 0; j < n; ++j) {
    for (col = 0, i = 0; i < n; ++i) col += fabs(inv[(size_t)j * n + i]);
    b = fmax(b, col);
  }
  return a * b;
}

int salta__alg_factor(salta__alg *s, const double *vals, int reused) {
  const salta_sparse_def *gz = &s->d->g.d[SALTA_WRT_Z];
  int nz = s->nz, k, st;
  s->inv_ready = 0;
  if (s->sparse) return salta__sparselu_factor(s->klu, vals, s->err);
  memset(s->gz, 0, sizeof(double) * (size_t)nz * nz);
  for (k = 0; k < gz->nnz; ++k) s->gz[(size_t)gz->col[k] * nz + gz->row[k]] = vals[k];
  if ((st = salta__lu_factor(nz, s->gz, s->gz_piv, s->err))) return st;
  if (reused && s->gz_inv) {
    memset(s->gz_inv, 0, sizeof(double) * (size_t)nz * nz);
    for (k = 0; k < nz; ++k) s->gz_inv[(size_t)k * nz + k] = 1.0;
    salta__lu_solve(nz, s->gz, s->gz_piv, s->gz_inv, nz, 0);
    s->inv_ready = condition_1(gz, vals, s->gz_inv, nz) <= SALTA__GZ_INVERSE_COND;
  }
  return SALTA_OK;
}

/* b := A b column by column, for the n x n inverse A; inline so that each
** small n gets its own unrolled copy. */
static inline void inverse_apply_n(const int n, const double *restrict A, double *restrict b, int nrhs) {
  double c[SALTA__GZ_INVERSE];
  int q, i, k;
  for (q = 0; q < nrhs; ++q) {
    double *col = b + (size_t)q * n;
    for (k = 0; k < n; ++k) c[k] = col[k];
    for (i = 0; i < n; ++i) {
      double acc = 0;
      for (k = 0; k < n; ++k) acc += A[(size_t)k * n + i] * c[k];
      col[i] = acc;
    }
  }
}

static void inverse_apply(int n, const double *A, double *b, int nrhs) {
  switch (n) {
    case 1: inverse_apply_n(1, A, b, nrhs); break;
    case 2: inverse_apply_n(2, A, b, nrhs); break;
    case 3: inverse_apply_n(3, A, b, nrhs); break;
    case 4: inverse_apply_n(4, A, b, nrhs); break;
    default: inverse_apply_n(n, A, b, nrhs); break;
  }
}

void salta__alg_gz_apply(const salta__alg *s, double *b, int nrhs) {
  if (s->inv_ready) inverse_apply(s->nz, s->gz_inv, b, nrhs);
  else salta__alg_gz_solve(s, b, nrhs, 0);
}

void salta__alg_gz_solve(const salta__alg *s, double *b, int nrhs, int trans) {
  int c;
  if (!s->sparse) {
    salta__lu_solve(s->nz, s->gz, s->gz_piv, b, nrhs, trans);
    return;
  }
  for (c = 0; c < nrhs; ++c) salta__sparselu_solve(s->klu, b + (size_t)c * s->nz, trans);
}
