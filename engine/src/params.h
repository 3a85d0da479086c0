/*
** params.h -- the parameter vector the kernels read (internal): the np
** parameters, then the model's values derived from them alone
** (salta_model_def.np_derived), so that a kernel does not recompute them.
*/
#ifndef SALTA_PARAMS_H
#define SALTA_PARAMS_H

#include <stddef.h>
#include <string.h>

#include "salta_kernel.h"

/* The length of a parameter vector given to d's kernels. */
static inline size_t salta__params_len(const salta_model_def *d) { return (size_t)d->np + (size_t)d->np_derived; }

/* full := p's np values and the values derived from them (full holds
** salta__params_len(d); full may be p, whose derived values are then
** written). */
static inline void salta__params_fill(const salta_model_def *d, const double *p, double *full) {
  if (full != p) memcpy(full, p, sizeof(double) * (size_t)d->np);
  if (d->np_derived > 0) d->derive(full);
}

#endif
