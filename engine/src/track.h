/*
** track.h -- the structural compiler's assumptions, checked along a run
** (internal). Index reduction chose its dummy derivatives once, from the
** start values, and tearing left Newton blocks whose equations may have
** several roots: a run is only right while every dummy's pivot stays away
** from zero and every block's solution continues the branch the run
** started on. Every route checks both where it integrates: ERK solves each
** stage's algebraics by continuation from the last solved point, and IDAS
** and the adjoint's discrete march (which solve x and z together) have
** each accepted point's algebraics compared with that continuation. A
** branch that ends (a fold, a singular block) or is left (a jump to
** another root) stops the run with a message naming the block or the
** dummy, the time and the values. A reset's re-consistency may jump: a
** restart is not compared with what came before.
*/
#ifndef SALTA_TRACK_H
#define SALTA_TRACK_H

#include "dae.h"

typedef struct salta__track {
  salta__dae *dae;
  const salta_sim_options *o;   /* the run's tolerances */
  int on;                       /* the last accepted point below is set */
  double t;                     /* the last accepted point (t, w = [x; z]) */
  double *w;
  int has_prev;                 /* the one before it, since the last restart */
  double t_prev, *w_prev;
  double *piv, *piv_new;        /* the pivots and their scales there (2 npivots); and at a new point */
  double *x, *xt, *xdot;        /* a point on a path, its end, f at the last point (nx each) */
  double *zc, *zp;              /* the last two solutions along a path (nz each) */
  double *z1, *z2;              /* an integrator's algebraics, re-solved; the branch's (nz each) */
} salta__track;

/* For the dae a (messages to a->err): SALTA_OK, or SALTA_EMEM. */
int salta__track_init(salta__track *k, salta__dae *a);
void salta__track_free(salta__track *k);

/* A start at the consistent (t, w), or an event's right limit: its pivots
** are checked; the point is the next comparisons' reference. */
int salta__track_restart(salta__track *k, const salta_sim_options *o, double t, const double *w);

/* An accepted point (t, w): every pivot checked (vanishing, or changed
** sign since the last point); with blocks, w's algebraics must be the
** continuation of the last point's to (t, x). The point becomes the
** reference (with the continued algebraics). */
int salta__track_accept(salta__track *k, double t, const double *w, int blocks);

/* z solving g at (t, x) on the run's branch: z holds the first guess (a
** solution on the branch nearby) and returns the solution; when Newton
** from it cannot be certified, the branch is followed from the last
** accepted point (from the one before it for t inside the last step,
** whose end may be where the branch ends). Where it ends (a fold, a
** singular point), SALTA__EBRANCH with a message naming the block, or
** the dummy whose pivot vanished there. */
int salta__track_solve(salta__track *k, double t, const double *x, double *z);

/* After an integrator failed beyond the last accepted point: looks along
** x' = f from it, with steps from h up, for the end of a branch (or a
** vanishing pivot) and, when one is found, fails with its message and
** then cause (what the integrator said). SALTA_OK: nothing found. */
int salta__track_explain(salta__track *k, double h, const char *cause);

#endif
