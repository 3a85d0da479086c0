/*
** adjoint.h -- the event-split discrete adjoint as a gradient route of a
** least-squares loss (internal; the method is described in
** adjoint_impl.h).
*/
#ifndef SALTA_ADJOINT_H
#define SALTA_ADJOINT_H

#include "salta.h"
#include "targets.h"

/* What an adjoint keeps between evaluations (its local algebra). */
typedef struct salta__adj_work salta__adj_work;

/* Returns owned (SALTA_EMEM: *out NULL). */
int salta__adj_work_new(salta__adj_work **out, const salta_model_def *d, char *err);
void salta__adj_work_free(salta__adj_work **w);
/* Points the work at the kernels d (as salta__dae_bind). */
void salta__adj_work_bind(salta__adj_work *w, const salta_model_def *d);

/* The loss of the discrete trajectory over the targets tg (its reach is
** set from the forward run) and its gradient by the directions dirs (ns;
** grad NULL: the value alone), as salta_loss_eval_adjoint says, and its
** residuals into resid (tg->nres; NULL: none). The forward run is made on
** sim with options o (adjusted for the mesh). Messages go to err
** (SALTA_ERRMSG_SIZE bytes). */
int salta__adj_eval(salta__adj_work *w, salta__targets *tg, salta_sim *sim, const salta_sim_options *o,
                    const double *p, const double *x0, int mesh_k, int consistent, const int *dirs, int ns,
                    double *value, double *grad, double *resid, char *err);

#endif
