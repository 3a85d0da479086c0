/*
** loss_fd.c -- a loss's gradient by central differences of its value (the
** "fd" route, for checking the others): relative steps with the nominal
** value as their floor, in log p for log-transformed parameters, one or
** two Richardson steps, of the loss or of the adjoint's discrete loss.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "loss_impl.h"
#include "params.h"
#include "sens.h"
#include "start.h"

void salta_fd_options_init(salta_fd_options *o) {
  memset(o, 0, sizeof *o);
  o->h = 2e-5;
  o->richardson = 1;
  o->consistent = 1;
}

/* The value differenced: the loss's, or the discrete loss the adjoint
** differentiates. */
static int value_at(salta_loss *l, const salta_fd_options *o, const double *p, const double *x0, double *v) {
  if (o->adjoint) return salta_loss_eval_adjoint(l, p, x0, o->mesh_k, o->consistent, v, NULL);
  return salta_loss_eval(l, p, x0, v, NULL, NULL, NULL);
}

/* Direction k's difference step: relative to the value (nominal value or
** start value as the floor, 1 when both are 0), h itself in log space. */
static double step_of(const salta_loss *l, const salta_fd_options *o, int k, double base) {
  const salta_model_def *d = l->d;
  int dir = l->dirs[k];
  double scale;
  if (o->log && o->log[k]) return o->h;
  scale = fmax(fabs(base), fabs(o->floor ? o->floor[k] : dir >= 0 ? d->p_nominal[dir] : d->x_start[-dir - 1]));
  return o->h * (scale > 0 ? scale : 1);
}

/* The central difference D(w) of direction k, moving slot of pv = [p; x0]
** (its value base there) by w, or by the factor exp(w) in log space. */
static int central(salta_loss *l, const salta_fd_options *o, int k, double *pv, double base, double w, int has_x0,
                   double *D) {
  const salta_model_def *d = l->d;
  int slot = salta__dir_slot(d->np, l->dirs[k]), log_k = o->log && o->log[k], st;
  double up, down;
  pv[slot] = log_k ? base * exp(w) : base + w;
  if ((st = value_at(l, o, pv, has_x0 ? pv + d->np : NULL, &up))) return st;
  pv[slot] = log_k ? base * exp(-w) : base - w;
  st = value_at(l, o, pv, has_x0 ? pv + d->np : NULL, &down);
  pv[slot] = base;
  *D = (up - down) / (2 * w);
  return st;
}

/* The differences' formula at step s: D(s), or (4 D(s) - D(2s)) / 3. */
static int formula(salta_loss *l, const salta_fd_options *o, int k, double *pv, double base, double s, int has_x0,
                   const double *D2s, double *out, double *Ds) {
  int st;
  if ((st = central(l, o, k, pv, base, s, has_x0, Ds))) return st;
  *out = *Ds;
  if (o->richardson) {
    double d2;
    if (D2s) d2 = *D2s;
    else if ((st = central(l, o, k, pv, base, 2 * s, has_x0, &d2))) return st;
    *out = (4 * *Ds - d2) / 3;
  }
  return SALTA_OK;
}

/* Direction k: the formula at step s into *g; with err, the formula at
** s / 2 into *g and its difference from that at s into *err. */
static int direction(salta_loss *l, const salta_fd_options *o, int k, double *pv, int has_x0, double *g, double *err) {
  int slot = salta__dir_slot(l->d->np, l->dirs[k]), st;
  double base = pv[slot], s = step_of(l, o, k, base), coarse, Ds, fine, Dhalf;
  if ((st = formula(l, o, k, pv, base, s, has_x0, NULL, &coarse, &Ds))) return st;
  *g = coarse;
  if (!err) return SALTA_OK;
  if ((st = formula(l, o, k, pv, base, s / 2, has_x0, &Ds, &fine, &Dhalf))) return st;
  *g = fine;
  *err = fabs(coarse - fine);
  return SALTA_OK;
}

static int check_fd(salta_loss *l, const double *p, const salta_fd_options *o, const double *grad) {
  const salta_model_def *d = l->d;
  if (!p || !grad)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': a difference gradient needs parameters and room for it", d->name);
  if (!(o->h > 0) || !isfinite(o->h))
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': the difference step h must be a finite number > 0, got %g",
                       d->name, o->h);
  if (l->ns == 0) return salta__fail(l->err, SALTA_EINPUT, "model '%s': no free parameters for a gradient", d->name);
  return SALTA_OK;
}

int salta_loss_grad_fd(salta_loss *l, const double *p, const double *x0, const salta_fd_options *opts, double *grad,
                       double *err) {
  const salta_model_def *d;
  salta_fd_options o;
  double *pv, *pf;
  int k, st, has_x0;
  if (!l) return SALTA_EINPUT;
  d = l->d;
  if (opts) o = *opts;
  else salta_fd_options_init(&o);
  if ((st = check_fd(l, p, &o, grad))) return st;
  if (!(pv = malloc(sizeof(double) * (size_t)(d->np + d->nx + 1))) ||
      !(pf = malloc(sizeof(double) * (salta__params_len(d) + 1)))) {
    free(pv);
    return salta__fail(l->err, SALTA_EMEM, "out of memory");
  }
  memcpy(pv, p, sizeof(double) * (size_t)d->np);
  salta__params_fill(d, p, pf);
  /* a parameter moves the start with it when the start follows p; a start
  ** value moves alone (from the start it has at p) */
  st = salta__start_values(d, l->opts.t0, l->opts.tf, pf, x0, pv + d->np, l->err);
  free(pf);
  for (k = 0; k < l->ns && st == SALTA_OK; ++k) {
    has_x0 = x0 != NULL || l->dirs[k] < 0;
    st = direction(l, &o, k, pv, has_x0, &grad[k], err ? &err[k] : NULL);
  }
  free(pv);
  return st;
}

int salta_loss_check_gradient(salta_loss *l, const double *p, const double *x0, double h, double *grad,
                              double *ref, double *err) {
  salta_fd_options o;
  int st;
  if (!l) return SALTA_EINPUT;
  if (!grad || !ref || !err)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': salta_loss_check_gradient needs room for both gradients "
                       "and the error", l->d->name);
  salta_fd_options_init(&o);
  o.h = h;
  if ((st = salta_loss_grad_fd(l, p, x0, &o, ref, err))) return st;
  return salta_loss_eval(l, p, x0, NULL, grad, NULL, NULL);
}
