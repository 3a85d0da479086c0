/*
** backward.h -- the continuous adjoint's backward problem on one
** event-free segment (internal): the segment run forward again (its
** states kept, or checkpointed), then the adjoint of x' = f(t, x, z),
** 0 = g(t, x, z) from the segment's end,
**   lam_x' = -f_x^T lam_x + g_x^T lam_z,     0 = f_z^T lam_x - g_z^T lam_z,
** with the quadratures q = int (lam_x^T f_p - lam_z^T g_p) dt of chosen
** parameters, so that across the segment [a, b]
**   lam_x(b)^T s_x(b) = lam_x(a)^T s_x(a) + q   for every direction s.
** Two solvers share this interface: IDAS's adjoint module (ida_adj.c),
** for runs by BDF, and Dormand-Prince on the interpolants of an explicit
** re-run (erk_adj.c), for runs by ERK, whose model is not stiff, so that
** neither is its adjoint. Both solve for lam / max |lam_x| from each
** restart (the problem is linear), so that their absolute tolerances are
** relative to its size, and weight the adjoint's and the quadratures'
** errors each by its own tolerances, so that many quadratures do not
** dilute the adjoint's error.
*/
#ifndef SALTA_BACKWARD_H
#define SALTA_BACKWARD_H

#include <float.h>
#include <math.h>

#include "dae.h"
#include "errors.h"
#include "tol.h"

/* What the problem is solved with. */
typedef struct salta__backward_opts {
  const salta_sim_options *o;   /* the forward run's tolerances and steps (borrowed) */
  int linear_solver;            /* SALTA_LS_DENSE or SALTA_LS_KLU, resolved (IDAS) */
  double rtol_b, atol_b;        /* the backward problem's tolerances: of the adjoint */
  double rtol_q, atol_q;        /* and of its quadratures */
  int checkpoint_steps;         /* forward steps between checkpoints (IDAS) */
  const int *qpar;              /* the parameters whose quadratures are integrated (nq, borrowed) */
  int nq;
} salta__backward_opts;

/* The re-runs' tolerances against the loss's: BDF's global error at rtol
** is about ten times ERK's on a non-stiff model (the 10,002-equation Cauer
** ladder at rtol 1e-8: its sensitivities 8.3e-6 off by BDF, 8.4e-7 by
** ERK), and the backward problem reads these states (cadj.c). */
#define SALTA__RERUN_TIGHTER 0.1

typedef struct salta__backward_ops {
  /* The forward run from the consistent state w0 at t0 to t1 (t0 < t1). */
  int (*forward)(void *self, double t0, const double *w0, double t1);
  /* (Re)starts the backward problem at t inside the last forward run from
  ** lam_x (nx), consistent at the forward state w there (NULL: the
  ** forward run's end, when t is its end). */
  int (*restart)(void *self, double t, const double *w, const double *lam_x);
  /* Integrates backward to t (not before the forward run's start): lam_x
  ** (nx) there, and q (nq) += the quadratures since the last restart. */
  int (*back)(void *self, double t, double *lam_x, double *q);
  void (*free)(void *self);
} salta__backward_ops;

typedef struct salta__backward {
  const salta__backward_ops *ops;
  void *self;
} salta__backward;

/* Each returns SALTA_OK with *b ready for a forward run, or a status with
** the message in dae->err (b->self NULL). Each borrows dae and opts for
** its life. */
int salta__ida_adj_create(salta__backward *b, salta__dae *dae, const salta__backward_opts *opts);
int salta__erk_adj_create(salta__backward *b, salta__dae *dae, const salta__backward_opts *opts);
/* The size lam_x (nx) is solved relative to: max |lam_x| (0: lam = 0,
** nothing to integrate); -1 when an entry is not finite. */
static inline double salta__backward_scale(const double *lam_x, int nx) {
  return salta__all_finite(lam_x, (size_t)nx) ? salta__max_abs(lam_x, nx) : -1;
}

/* Whether from tb back to t is too short to integrate: nothing changes. */
static inline int salta__backward_nothing_left(double tb, double t) {
  return !(tb - t > 16 * DBL_EPSILON * fmax(fabs(t), fabs(tb)));
}

/* The status of a continuous adjoint of model interrupted at t, its
** message into err. */
static inline int salta__cadj_interrupted(char *err, const char *model, double t) {
  return salta__fail(err, SALTA_EINTR, "model '%s': continuous adjoint: interrupted at t = %.17g", model, t);
}

/* Frees what b holds (b->self NULL: nothing). */
static inline void salta__backward_free(salta__backward *b) {
  if (b->self) b->ops->free(b->self);
  b->self = NULL;
}

#endif
