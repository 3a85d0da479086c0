/*
** dopri.h -- the Dormand-Prince 5(4) method with its 4th-order dense
** output (internal): its stages, error estimate, step-size rule and
** interpolant over a right-hand side given as a callback, for the forward
** integrator (erk.c) and the continuous adjoint's backward problem
** (erk_adj.c), which differ only in what they integrate and in what a
** failed step means.
*/
#ifndef SALTA_DOPRI_H
#define SALTA_DOPRI_H

#include <stddef.h>

#include "arrays.h"

/* Y' at (t, Y) into Yp: SALTA_OK or a status (the caller's message). */
typedef int (*salta__dopri_rhs)(void *ctx, double t, const double *Y, double *Yp);

/* The method's state over m = nb (1 + nk) unknowns: nk + 1 blocks of nb,
** whose dense coefficients are interleaved by component (see
** salta__dopri_coef). The arrays are the owner's, allocated from
** salta__dopri_arrays (rtol only with per_rtol set). */
typedef struct salta__dopri {
  int nb, nk, m;
  int per_rtol;              /* rtol[] replaces the scalar rtol of the calls below */
  int no_dense;              /* no interpolant is kept */
  salta__dopri_rhs rhs;
  void *ctx;
  double *Y, *Ynew, *K[7];   /* the step's start and end; its stages, K[0] = Y' at its start */
  double *stage;             /* a stage's argument, then the 5th-order solution */
  double *y6;                /* the sixth stage's argument (a stiffness test reads it) */
  double *err, *acc;         /* the error estimate; a weighted sum of the stages */
  double *atol, *rtol;       /* per unknown */
  double *dense;             /* 5 m: the last accepted step's interpolant */
  double t_old, h_old;       /* that step */
  double h, errn;            /* the next step size; the last accepted step's error norm */
  int rejected;              /* the last attempt before it was rejected */
  int resize;                /* the next step size is due from errn */
} salta__dopri;

#define SALTA__DOPRI_ARRAYS 16
/* The arrays of dp (its sizes set) into list: returns their number. */
size_t salta__dopri_arrays(salta__dopri *dp, salta__array *list);

/* The node of stage k (0 to 6), a fraction of the step. */
double salta__dopri_node(int k);
/* The stage k's argument Y + h sum_{i<k} a_ki K_i into dp->stage. */
void salta__dopri_stage(salta__dopri *dp, int k, double h);
/* One attempted step of size h from (t, Y) with K[0] = Y'(t): Ynew and
** K[1..6]; returns the error norm at rtol (*st the callback's status). */
double salta__dopri_attempt(salta__dopri *dp, double t, double h, double rtol, int *st);
/* The weighted RMS norm of v, with weights from the larger of |y0|, |y1|. */
double salta__dopri_wrms(const salta__dopri *dp, const double *v, const double *y0, const double *y1, double rtol);
/* Hairer's first step from (t, Y) with K[0] = Y'(t), towards tf. */
double salta__dopri_initial_step(salta__dopri *dp, double t, double tf, double rtol, double max_step);
/* The attempted step [t, t + h] of error norm errn accepted: its
** interpolant made, Ynew into Y, K[6] into K[0] (first same as last); the
** next size is due from errn. */
void salta__dopri_accept(salta__dopri *dp, double t, double h, double errn);

/* The step-size controller (dp->h): before a step, the size due from the
** last accepted one (no growth right after a rejection); then that size
** cut to max_step (> 0) and to what is left before tf: 1 when it reaches
** tf, 0 when not, -1 when it is below the shortest step at t (the caller
** says why); after a rejected attempt, the smaller size to retry. A
** restart keeps the last accepted size. */
void salta__dopri_resize(salta__dopri *dp);
int salta__dopri_clip(salta__dopri *dp, double t, double tf, double max_step);
void salta__dopri_reject(salta__dopri *dp, double errn);
void salta__dopri_restart(salta__dopri *dp);

/* The interpolant's coefficients of component j of block k (5, adjacent:
** a component's blocks next to each other, so that an output reads them
** together). */
static inline size_t salta__dopri_coef(const salta__dopri *dp, int j, int k) {
  return (size_t)5 * ((size_t)j * (size_t)(dp->nk + 1) + (size_t)k);
}

/* The interpolant with coefficients c at th (a fraction of its step;
** th1 = 1 - th). */
static inline double salta__dopri_eval(const double *c, double th, double th1) {
  return c[0] + th * (c[1] + th1 * (c[2] + th * (c[3] + th1 * c[4])));
}

/* Its basis at th: salta__dopri_eval(c, th, 1 - th) is sum_m b[m] c[m]
** (to rounding), so that one sum of weights on b serves many c. */
static inline void salta__dopri_basis(double th, double b[5]) {
  const double th1 = 1 - th;
  b[0] = 1, b[1] = th, b[2] = th * th1, b[3] = th * th1 * th, b[4] = th * th1 * th * th1;
}

#endif
