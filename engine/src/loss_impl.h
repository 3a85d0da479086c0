/*
** loss_impl.h -- the loss object (internal), shared by loss.c (evaluation
** by forward sensitivities, the adjoints' entries) and loss_fd.c (the
** gradient by differences of its value). What it compares, and how, is
** targets.h's; the discrete adjoint's working state is adjoint.h's.
*/
#ifndef SALTA_LOSS_IMPL_H
#define SALTA_LOSS_IMPL_H

#include "adjoint.h"
#include "cadj.h"
#include "errors.h"
#include "salta.h"
#include "targets.h"

struct salta_loss {
  salta_model *model;
  const salta_model_def *d;
  salta__targets tg;
  salta_sim *sim;                  /* with sensitivities */
  salta_sim *vsim;                 /* without: for the value alone */
  salta_sim *last;                 /* the one the last evaluation ran */
  /* the last evaluation, for completing its run's outputs (salta_loss_sim) */
  int pending;                     /* its run was planned: the outputs are not all there */
  double *last_p, *last_x0;        /* its parameters (np) and start state (nx) */
  int last_has_x0;
  salta_sim_options last_opts;     /* its options */
  int ns;
  int *dirs;                       /* the free directions (copy) */
  double *coef;                    /* nt x nout: d L / d prediction of each datum (0: missing) */
  salta_sim_options opts;
  salta__adj_work *adj;            /* the discrete adjoint's (made at its first use) */
  salta__cadj_work *cadj;          /* the continuous adjoint's (made at its first use) */
  salta_route route;               /* salta_loss_eval's gradient route (AUTO: chosen per call) */
  char err[SALTA_ERRMSG_SIZE];
};

#endif
