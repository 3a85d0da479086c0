/*
** loss_impl.h -- the loss object, shared by loss.c (forward sensitivities)
** and adjoint.c (the event-split discrete adjoint). Internal.
*/
#ifndef SALTA_LOSS_IMPL_H
#define SALTA_LOSS_IMPL_H

#include "dae.h"
#include "errors.h"
#include "salta.h"

struct salta_loss {
  salta_model *model;
  salta_sim *sim;                  /* with sensitivities */
  salta_sim *vsim;                 /* without: for the value alone */
  salta_sim *last;                 /* the one the last evaluation ran */
  const double *p;                 /* during an evaluation */
  const salta_model_def *d;
  int nt, nout, nres, ns;
  int nk;                       /* targets the last run reached (a terminal event ends it early) */
  int drop_after_end;           /* targets past a terminal event: 0 an error, 1 zero residuals */
  double *times, *data, *weights;  /* data, weights: nt x nout by time; data NaN = missing */
  double *coef;                    /* nt x nout: d L / d prediction of each datum (0: missing) */
  int *outputs;
  int *dirs;                       /* the free directions (copy) */
  double beta;
  salta_sim_options opts;
  salta__dae dae;                  /* the adjoint's local algebra */
  char err[SALTA_ERRMSG_SIZE];
};

/* Sets nk from the last run: every target, or those before a terminal
** event's end when the loss drops the others; else SALTA_EINPUT naming
** the event and the first target past the end. */
int salta__loss_check_reach(salta_loss *l);

#endif
