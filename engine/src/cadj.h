/*
** cadj.h -- the continuous adjoint as a gradient route of a least-squares
** loss (internal). One forward run gives the loss, its event groups and
** the states at the targets; then, from the end back to t0, each segment
** between groups is run again and its backward problem solved
** (backward.h), the adjoint jumping by each datum at its
** target and through each group by the transpose of the sensitivities'
** jump (jump.h); the start takes what is left. Its cost does not grow
** with the number of free directions (but for the quadratures' entries).
*/
#ifndef SALTA_CADJ_H
#define SALTA_CADJ_H

#include "salta.h"
#include "targets.h"

/* What the route keeps between evaluations (its local algebra). */
typedef struct salta__cadj_work salta__cadj_work;

/* Returns owned (SALTA_EMEM: *out NULL); messages go to err
** (SALTA_ERRMSG_SIZE bytes, borrowed for the work's life). */
int salta__cadj_work_new(salta__cadj_work **out, const salta_model_def *d, char *err);
void salta__cadj_work_free(salta__cadj_work **w);
/* The kernels its evaluations run (a loss binds them before each). */
void salta__cadj_work_bind(salta__cadj_work *w, const salta_model_def *d);

/* The loss over the targets tg (its reach is set from the forward run,
** made on sim with options o) at p and x0 (NULL: start values), and its
** gradient by the directions dirs (ns; grad NULL: the value alone). */
int salta__cadj_eval(salta__cadj_work *w, salta__targets *tg, salta_sim *sim, const salta_sim_options *o,
                     const double *p, const double *x0, const int *dirs, int ns, double *value, double *grad);

#endif
