/*
** algebraic.h -- the algebraic variables at a point (internal): solving
** g(t, x, z) = 0 for z block by block, and the factorisation of g_z that
** the implicit derivatives (flow, sensitivities, adjoint) solve with.
**
** A model whose def carries z_block (the structural compiler's blocks) is
** solved in topological order: the explicit algebraics of segment k by
** z_assign, then Newton on the blocks of stage k (each block with its own
** Jacobian, one evaluation of g per iteration for all), ..., then the last
** segment. A def without it is one Newton on all of g. g_z is factored dense when it
** is small or unstructured, else by KLU on its own pattern.
*/
#ifndef SALTA_ALGEBRAIC_H
#define SALTA_ALGEBRAIC_H

#include "pattern.h"
#include "sparselu.h"

/* Why the solve failed: the equation with the largest residual (row i of
** g solves algebraic i when the model has blocks), the Newton block (-1:
** an explicit algebraic) and how. */
enum { SALTA__ZFAIL_NEWTON, SALTA__ZFAIL_SINGULAR, SALTA__ZFAIL_UNCERTIFIED };
typedef struct salta__zfail { int eq; double residual; int block, kind; } salta__zfail;

typedef struct salta__alg {
  const salta_model_def *d;
  int nz;
  int nblocks;          /* Newton blocks: 0 with no structure known */
  int *block_ptr;       /* nblocks + 1: block b solves block_var[block_ptr[b] ..] */
  int *block_var;
  int *block_ent_ptr;   /* nblocks + 1: g_z kernel entries inside block b */
  int *block_ent;       /* ... are block_ent[block_ent_ptr[b] ..], at */
  int *block_pos;       /* block_pos[..] in the block's dense matrix */
  int max_block;        /* the largest block */
  int nstages;          /* stages of blocks that do not read each other */
  int *stage_ptr;       /* nstages + 1: stage st is the blocks stage_block[stage_ptr[st] ..] */
  int *stage_block;
  int *bstate;          /* per block of a stage: its Newton's state */
  double *bdprev;       /* ... and its last step */
  double *bj;           /* each block's Jacobian, LU-factored, from bj_off[b] (its size squared) */
  size_t *bj_off;       /* nblocks */
  int *bpiv;            /* ... and its pivots, from block_ptr[b] */
  double *bstep;        /* one block's residual and step (max_block) */
  double *gres;         /* g (nz) */
  double *gzv;          /* the g_z kernel's values (its nnz) */
  int linear;           /* no structure and g linear in z: one Newton step */
  int certify;          /* a block whose Newton stops contracting fails
                           (SALTA__ZFAIL_UNCERTIFIED): see salta__alg_solve */
  /* g_z for the implicit derivatives */
  int sparse;           /* factored by KLU (else dense LU in gz) */
  double *gz;           /* nz x nz, LU-factored in place (dense) */
  int *gz_piv;
  double *gz_inv;       /* nz x nz: g_z's inverse, for a small g_z factored to be
                           reused (nz <= SALTA__GZ_INVERSE); else NULL */
  int inv_ready;        /* gz_inv holds the inverse of the factorisation in gz */
  salta__pattern gz_pat;
  salta__sparselu *klu;
  long newton_iters;    /* Newton iterations since the last reset of the count */
  char *err;            /* the owner's message buffer (borrowed) */
} salta__alg;

/* For model d, its messages going to err: SALTA_OK, or SALTA_EMEM. */
int salta__alg_init(salta__alg *s, const salta_model_def *d, char *err);
void salta__alg_free(salta__alg *s);

/* Solves g(t, x, z) = 0 for z (in: the first guess of the implicit
** blocks; out: the solution): SALTA_OK, or SALTA_EALGEBRAIC with why filled
** (why may be NULL) and a message naming the equation.
** With s->certify, each block's Newton must contract from its first
** step: the simplified correction at each iterate (with the Jacobian of
** the step that led there) at most half that step, until round-off. The
** iterates then stay where Newton converges to the root next to the guess
** (affine-covariant Newton-Kantorovich, Deuflhard): the solution continues
** the guess's branch. A first step that flies off where the Jacobian is
** nearly singular (past a fold) and lands by another root fails the test
** at once, though Newton would converge there. */
int salta__alg_solve(salta__alg *s, double t, const double *x, double *z, const double *p, salta__zfail *why);

/* The largest dense g_z whose inverse is formed when its factorisation
** is reused (see salta__alg_gz_apply), and the largest 1-norm condition
** number for which the inverse is used: a product with it is then off a
** solve's result by a few rounding errors times 1e6 at most. */
#define SALTA__GZ_INVERSE 8
#define SALTA__GZ_INVERSE_COND 1e6

/* Factors g_z from the values of its kernel (in its entry order), and
** forms its inverse when reused is set and it is small and dense:
** SALTA_OK, or SALTA_ESOLVER when it is singular. */
int salta__alg_factor(salta__alg *s, const double *vals, int reused);
/* b := g_z^-1 b (trans: g_z^-T b), nrhs columns of nz, by the
** factorisation (backward stable). */
void salta__alg_gz_solve(const salta__alg *s, double *b, int nrhs, int trans);
/* b := g_z^-1 b by the inverse formed with the factorisation where there is
** one, else as salta__alg_gz_solve: nz^2 independent multiply-adds per
** column instead of two triangular chains with nz divisions, for solves
** repeated thousands of times per run (the explicit stages' sensitivities:
** the Cauer's 3 x 3 g_z, for every direction at every stage). Not backward
** stable: the inverse is used only for a well-conditioned g_z (above). */
void salta__alg_gz_apply(const salta__alg *s, double *b, int nrhs);

#endif
