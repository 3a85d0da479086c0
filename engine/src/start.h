/*
** start.h -- the start state as a function of the parameters (internal):
** a model's start values are constants (x_start) or expressions of p (its
** start function); a start state given to a run overrides both.
*/
#ifndef SALTA_START_H
#define SALTA_START_H

#include "dae.h"
#include "salta_kernel.h"

/* Whether a run's start state follows p: none given, and the model has a
** start function. */
int salta__start_follows_p(const salta_model_def *d, const double *x0_given);

/* out (nx) := x0_given with the piece indices of its input tables set at
** t0, or the model's start values at (t0, p); then every input read
** checked inside its table on the run [t0, tf] (SALTA_EINPUT naming the
** input, the argument, its value and the time). SALTA_ESOLVER (message in
** err) when a start value is not finite. */
int salta__start_values(const salta_model_def *d, double t0, double tf, const double *p, const double *x0_given,
                        double *out, char *err);

/* Adds d x0 / d p[dirs[k]] into the state rows of column k of S (n x ns,
** column-major) for every parameter direction (dirs[k] >= 0): SALTA_OK,
** or SALTA_EMEM. */
int salta__start_seed(const salta_model_def *d, double t0, const double *p, const int *dirs, int ns, int n,
                      double *S, char *err);

/* grad_p (np) += (d x0 / d p)^T grad_x0 (nx): the start's share of a
** gradient by the start state. SALTA_OK, or SALTA_EMEM. */
int salta__start_chain(const salta_model_def *d, double t0, const double *p, const double *grad_x0,
                       double *grad_p, char *err);

/* Sets the modes of if-expressions in w (x then z, at t0) from their
** guards, re-solving z after a change, until they agree (a few rounds):
** SALTA_OK, or SALTA_EMEM (a failed solve shows in the caller's). */
int salta__start_modes(salta__dae *a, double t0, double *w);

#endif
