/*
** start.c -- the start state as a function of the parameters.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "salta.h"
#include "errors.h"
#include "start.h"

int salta__start_follows_p(const salta_model_def *d, const double *x0_given) {
  return !x0_given && d->start.eval;
}

int salta__start_values(const salta_model_def *d, double t0, const double *p, const double *x0_given,
                        double *out, char *err) {
  int i;
  if (!salta__start_follows_p(d, x0_given)) {
    memcpy(out, x0_given ? x0_given : d->x_start, sizeof(double) * (size_t)d->nx);
    return SALTA_OK;
  }
  d->start.eval(t0, d->x_start, d->z_start, p, out);
  for (i = 0; i < d->nx; ++i)
    if (!isfinite(out[i]))
      return salta__fail(err, SALTA_ESOLVER, "model '%s': the start value of state '%s' is %g at these parameters",
                         d->name, d->x_names[i], out[i]);
  return SALTA_OK;
}

/* The values of d start / d p (in pattern order), owned; NULL on failure. */
static double *start_jacobian(const salta_model_def *d, double t0, const double *p) {
  const salta_sparse_def *sp = &d->start.d[SALTA_WRT_P];
  double *v = malloc(sizeof(double) * ((size_t)sp->nnz + 1));
  if (v && sp->nnz > 0) sp->eval(t0, d->x_start, d->z_start, p, v);
  return v;
}

int salta__start_seed(const salta_model_def *d, double t0, const double *p, const int *dirs, int ns, int n,
                      double *S) {
  const salta_sparse_def *sp = &d->start.d[SALTA_WRT_P];
  double *v;
  int k, e;
  if (!d->start.eval || sp->nnz == 0) return SALTA_OK;
  if (!(v = start_jacobian(d, t0, p))) return SALTA_EMEM;
  for (k = 0; k < ns; ++k)
    for (e = 0; e < sp->nnz && dirs[k] >= 0; ++e)
      if (sp->col[e] == dirs[k]) S[(size_t)k * n + sp->row[e]] += v[e];
  free(v);
  return SALTA_OK;
}

int salta__start_chain(const salta_model_def *d, double t0, const double *p, const double *grad_x0,
                       double *grad_p) {
  const salta_sparse_def *sp = &d->start.d[SALTA_WRT_P];
  double *v;
  int e;
  if (!d->start.eval || sp->nnz == 0) return SALTA_OK;
  if (!(v = start_jacobian(d, t0, p))) return SALTA_EMEM;
  for (e = 0; e < sp->nnz; ++e) grad_p[sp->col[e]] += v[e] * grad_x0[sp->row[e]];
  free(v);
  return SALTA_OK;
}
