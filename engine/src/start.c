/*
** start.c -- the start state as a function of the parameters.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "salta.h"
#include "errors.h"
#include "start.h"

int salta__start_follows_p(const salta_model_def *d, const double *x0_given) {
  return !x0_given && d->start.eval;
}

/* Read k's argument outside its table: the message. */
static int outside(const salta_model_def *d, int k, double a, double t, char *err) {
  char at[64] = "";
  if (a != t) snprintf(at, sizeof at, " (at t = %.6g)", t);
  return salta__fail(err, SALTA_EINPUT, "model '%s': input '%s' is read at %s = %.6g%s, outside its table "
                     "[%.6g, %.6g]", d->name, d->input_name[k], d->input_arg[k], a, at, d->input_lo[k],
                     d->input_hi[k]);
}

/* Every input read inside its table: at t0 with the start state x, and at
** tf for an argument affine in t. */
static int check_inputs(const salta_model_def *d, double t0, double tf, const double *p, const double *x, char *err) {
  double *a;
  int k, st = SALTA_OK;
  if (d->ninputs == 0) return SALTA_OK;
  if (!(a = malloc(sizeof(double) * (size_t)d->ninputs))) return salta__fail(err, SALTA_EMEM, "out of memory");
  d->input_args(t0, x, d->z_start, p, a);
  for (k = 0; k < d->ninputs && st == SALTA_OK; ++k)
    if (!(a[k] >= d->input_lo[k] && a[k] <= d->input_hi[k])) st = outside(d, k, a[k], t0, err);
  if (st == SALTA_OK) {
    d->input_args(tf, x, d->z_start, p, a);
    for (k = 0; k < d->ninputs && st == SALTA_OK; ++k)
      if (d->input_affine[k] && !(a[k] >= d->input_lo[k] && a[k] <= d->input_hi[k])) st = outside(d, k, a[k], tf, err);
  }
  free(a);
  return st;
}

int salta__start_values(const salta_model_def *d, double t0, double tf, const double *p, const double *x0_given,
                        double *out, char *err) {
  int i, st;
  if (!salta__start_follows_p(d, x0_given)) {
    memcpy(out, x0_given ? x0_given : d->x_start, sizeof(double) * (size_t)d->nx);
    if (x0_given && d->held) d->held(t0, x0_given, d->z_start, p, out);
    return check_inputs(d, t0, tf, p, out, err);
  }
  d->start.eval(t0, d->x_start, d->z_start, p, out);
  if ((st = check_inputs(d, t0, tf, p, out, err))) return st;
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
                      double *S, char *err) {
  const salta_sparse_def *sp = &d->start.d[SALTA_WRT_P];
  double *v;
  int k, e;
  if (!d->start.eval || sp->nnz == 0) return SALTA_OK;
  if (!(v = start_jacobian(d, t0, p))) return salta__fail(err, SALTA_EMEM, "out of memory");
  for (k = 0; k < ns; ++k)
    for (e = 0; e < sp->nnz && dirs[k] >= 0; ++e)
      if (sp->col[e] == dirs[k]) S[(size_t)k * n + sp->row[e]] += v[e];
  free(v);
  return SALTA_OK;
}

int salta__start_chain(const salta_model_def *d, double t0, const double *p, const double *grad_x0,
                       double *grad_p, char *err) {
  const salta_sparse_def *sp = &d->start.d[SALTA_WRT_P];
  double *v;
  int e;
  if (!d->start.eval || sp->nnz == 0) return SALTA_OK;
  if (!(v = start_jacobian(d, t0, p))) return salta__fail(err, SALTA_EMEM, "out of memory");
  for (e = 0; e < sp->nnz; ++e) grad_p[sp->col[e]] += v[e] * grad_x0[sp->row[e]];
  free(v);
  return SALTA_OK;
}

/* A mode whose guard is at zero at the start takes the side its guard is
** heading to (a comparison of two values that start equal, such as a
** diode's voltages, holds or not from the first instant on). An input's
** piece index starts on the piece holding its argument (right-continuous);
** where the argument starts on a breakpoint heading down, on the piece
** before. */
#define MODE_AT_ZERO 1e-12

/* A piece index's down event (x_mode -2 - j: up event j, down event
** j + 1), or -1. */
static int piece_down(const salta_model_def *d, int i) {
  return d->x_mode[i] < -1 ? -1 - d->x_mode[i] : -1;
}

/* The guard that decides state i at the start, or -1. */
static int deciding(const salta_model_def *d, int i) {
  return d->x_mode[i] >= 0 ? d->x_mode[i] : piece_down(d, i);
}

int salta__start_modes(salta__dae *a, double t0, double *w) {
  const salta_model_def *d = a->d;
  double *g, *flow, *rate, *rscale;
  int round, i, changed = 1;
  salta__array list[] = {SALTA__ARRAY(g, (size_t)d->ne), SALTA__ARRAY(rate, (size_t)d->ne),
                         SALTA__ARRAY(rscale, (size_t)d->ne), SALTA__ARRAY(flow, (size_t)a->n)};
  if (!d->x_mode || d->ne == 0) return SALTA_OK;
  if (salta__arrays_alloc(list, SALTA__COUNT(list))) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  for (round = 0; round < 4 && changed; ++round) {
    int heading = 0;
    changed = 0;
    d->e.eval(t0, w, w + a->nx, a->p, g);
    for (i = 0; i < a->nx; ++i)
      if (deciding(d, i) >= 0 && fabs(g[deciding(d, i)]) <= MODE_AT_ZERO) heading = 1;
    if (heading && salta__dae_flow(a, t0, w, flow, flow + a->nx) == 0)
      salta__dae_guard_rates(a, t0, w, flow, flow + a->nx, NULL, 0, rate, rscale, NULL);
    else
      heading = 0;
    for (i = 0; i < a->nx; ++i) {
      int j = d->x_mode[i], jd = piece_down(d, i);
      double v, e;
      if (jd >= 0) {
        if (heading && fabs(g[jd]) <= MODE_AT_ZERO && rate[jd] < 0) w[i] -= 1, changed = 1;
        continue;
      }
      if (j < 0) continue;
      e = g[j];
      if (heading && fabs(e) <= MODE_AT_ZERO) e = rate[j];
      v = e < 0 ? 1.0 : 0.0;
      if (w[i] != v) w[i] = v, changed = 1;
    }
    /* z from the modes' equations; a failure shows in the caller's solve */
    if (changed && a->nz) salta__dae_solve_z(a, t0, w, w + a->nx, NULL);
  }
  salta__arrays_free(list, SALTA__COUNT(list));
  return SALTA_OK;
}
