/*
** integrator.h -- the one interface the segment loop drives (internal),
** and the continuous adjoint's re-runs (erk_adj.c), implemented by IDAS's
** BDF (ida.c) and by explicit Dormand-Prince 5(4) (erk.c). An integrator
** advances one step at a time, interpolates inside its last step, and
** restarts from the right limit of an event.
*/
#ifndef SALTA_INTEGRATOR_H
#define SALTA_INTEGRATOR_H

#include "dae.h"
#include "sens.h"
#include "track.h"

/* What an integrator works with (all borrowed for the run). */
typedef struct salta__integrator_env {
  salta__dae *dae;              /* the model at the run's parameters */
  salta__sens *sens;            /* NULL: no sensitivities */
  const salta_sim_options *o;
  int linear_solver;            /* the Newton iterations' (BDF): SALTA_LS_DENSE or SALTA_LS_KLU, as resolved */
  salta_sim_stats *stats;       /* its counters are added here */
  salta__track *track;          /* the structural checks: restarted at each start, told each accepted point */
  int watch_stiffness;          /* ERK: return SALTA__ESTIFF on a stiff model */
} salta__integrator_env;

typedef struct salta__integrator_ops {
  /* Starts at the consistent (t0, w) with sensitivities S (n x ns; NULL
  ** without). */
  int (*start)(void *self, double t0, const double *w, const double *S);
  /* One step towards tf, never past it; the interpolant then covers
  ** [*t_old, *t_new]. */
  int (*step)(void *self, double tf, double *t_old, double *t_new);
  /* The state at t in the last step (see salta__interp in events.h). */
  int (*at)(void *self, double t, double *w, const int *cols, int ncols);
  /* The x rows of S at t in the last step. */
  int (*sens_at)(void *self, double t, double *S);
  /* The states cols[0 .. n) at t in the last step, packed into y (n), and,
  ** unless dy is NULL, their sensitivities into dy (n x ns, row-major). */
  int (*states_at)(void *self, double t, const int *cols, int n, double *y, double *dy);
  /* NULL, or the interpolant of the last step [*t_old, *t_old + *h] over
  ** the sensitivities of the states cols[0 .. n): per state its ns
  ** directions' 5 coefficients each (n x ns x 5, salta__dopri_eval's). */
  int (*sens_coef)(void *self, const int *cols, int n, double *coef, double *t_old, double *h);
  /* The state (and the x rows of S, unless NULL) where the last step ended. */
  int (*end_state)(void *self, double *w, double *S);
  /* Continues from the right limit (t, w, S) of an event. A crossing is
  ** expected near t_next (INFINITY: none known): the next step need not
  ** reach past it, so that its event location meets fewer crossings. */
  int (*restart)(void *self, double t, const double *w, const double *S, double t_next);
  /* Adds the counters to the stats and frees everything. */
  void (*free)(void *self);
  int exact_z;                  /* at() returns z solving g (not just interpolated) */
} salta__integrator_ops;

typedef struct salta__integrator {
  const salta__integrator_ops *ops;
  void *self;
} salta__integrator;

/* Each returns SALTA_OK with *it ready for start, or a status with the
** dae's message buffer set. */
int salta__ida_create(salta__integrator *it, const salta__integrator_env *env);
int salta__erk_create(salta__integrator *it, const salta__integrator_env *env);

/* An ERK run (it from salta__erk_create): its last accepted step
** [*t_old, *t_old + *h] and its interpolant's coefficients, 5 per state,
** adjacent (borrowed until the next step; dopri.h reads them); NULL for a
** run with sensitivities. */
const double *salta__erk_interpolant(const salta__integrator *it, double *t_old, double *h);

#endif
