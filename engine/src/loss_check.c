/*
** loss_check.c -- the gradient check (see salta.h, salta_loss_check): the
** rule that judges a route against a reference, the error a route's
** outputs carry into its gradient, and the check that runs every route
** against Richardson differences of the loss at a tighter tolerance.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "loss_impl.h"
#include "tol.h"

/* A route's message is kept whole. */
_Static_assert(sizeof(((salta_check_result *)0)->message) >= SALTA_ERRMSG_SIZE, "a check result's message is short");

/* The reference's relative step, and the carried error's multiple of its
** bound (it covers the sensitivities' own, correlated, error). */
#define CHECK_H 1e-4
#define CARRY 10.0

salta_verdict salta_check_judge(int ns, const double *grad, const double *ref, const double *err, double tol,
                                const double *carried, const double *own, unsigned char *bad, double *worst) {
  double big = salta__max_abs(ref, ns), scale = big > 0 ? big : 1, w = 0;
  int k, any = 0, by_carried = 1, by_own = own != NULL;
  for (k = 0; k < ns; ++k) {
    double diff = fabs(grad[k] - ref[k]), allowed = tol * big + 10 * err[k], c = carried ? carried[k] : 0;
    int beyond = !(diff <= allowed);
    w = fmax(w, diff / scale);
    if (bad) bad[k] = (unsigned char)beyond;
    if (!beyond) continue;
    any = 1;
    by_carried = by_carried && diff <= allowed + c;
    by_own = by_own && diff <= allowed + c + 10 * own[k];
  }
  if (worst) *worst = w;
  if (!any) return SALTA_VERDICT_OK;
  if (by_carried) return SALTA_VERDICT_ILL_CONDITIONED;
  return by_own ? SALTA_VERDICT_UNCERTAIN : SALTA_VERDICT_DISAGREE;
}

void salta_carried_error(int nres, int ns, const double *jac, const double *resid, const double *resid_ref,
                         double *out) {
  int i, k;
  for (k = 0; k < ns; ++k) out[k] = 0;
  for (i = 0; i < nres; ++i) {
    double e = fabs(resid[i] - resid_ref[i]);
    for (k = 0; k < ns; ++k) out[k] += CARRY * 2 * e * fabs(jac[(size_t)i * ns + k]);
  }
}

void salta_check_options_init(salta_check_options *o) {
  memset(o, 0, sizeof *o);
}

/* ---- the check ------------------------------------------------------------------------- */

enum { SENS, ADJOINT, CONT, FD };

/* Each route: what it runs, and on which method (the loss's own when
** `on` is 0). */
static const struct {
  int kind, on;
  salta_method method;
} ROUTES[SALTA_CHECK_NROUTES] = {
    {SENS, 0, SALTA_METHOD_AUTO},    {SENS, 1, SALTA_METHOD_ERK},    {SENS, 1, SALTA_METHOD_BDF},
    {ADJOINT, 0, SALTA_METHOD_AUTO}, {ADJOINT, 1, SALTA_METHOD_ERK}, {ADJOINT, 1, SALTA_METHOD_BDF},
    {CONT, 0, SALTA_METHOD_AUTO},    {FD, 0, SALTA_METHOD_AUTO}};

/* A check's state: the loss as it came (restored at the end), the resolved
** options, and its scratch (one block): the refined reference's trial
** and estimate (ns each), a route's residuals, the tight run's residuals
** (nres each), the tight Jacobian (nres x ns), the carried error and the
** differences' own estimate (ns each). */
typedef struct check {
  salta_loss *l;
  const double *p, *x0;
  salta_sim_options own, tight;
  salta_route route;
  double tol, h;
  int refine, ns, nres, tight_ready;
  double *trial, *trial_err, *resid, *resid_ref, *jac, *carried, *fd_err;
} check;

/* The options, their defaults resolved against the loss's tolerances as
** loss:check_gradient resolves them, and the loss as it came. */
static int resolve(check *c, const salta_check_options *o) {
  salta_loss *l = c->l;
  double rtol = l->opts.rtol, rtol_ref;
  if (!(o->tol >= 0) || !(o->h >= 0) || !(o->rtol_ref >= 0) || !isfinite(o->tol + o->h + o->rtol_ref))
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': the check's tol, h and rtol_ref must be finite numbers "
                       ">= 0 (0: the default), got %g, %g and %g", l->d->name, o->tol, o->h, o->rtol_ref);
  rtol_ref = o->rtol_ref > 0 ? o->rtol_ref : fmax(1e-13, fmin(1e-10, rtol / 1000));
  c->tol = o->tol > 0 ? o->tol : fmax(1e3 * rtol, 1e-8);
  c->h = o->h > 0 ? o->h : CHECK_H;
  c->refine = !(o->h > 0);
  c->own = l->opts;
  c->route = l->route;
  c->tight = l->opts;
  c->tight.rtol = rtol_ref;
  c->tight.atol = l->opts.atol * rtol_ref / rtol;
  return SALTA_OK;
}

/* The scratch block (see struct check). */
static int alloc_scratch(check *c) {
  size_t ns = (size_t)c->ns, nres = (size_t)c->nres, total = 4 * ns + 2 * nres + nres * ns;
  double *b = malloc(sizeof(double) * (total > 0 ? total : 1));
  if (!b) return salta__fail(c->l->err, SALTA_EMEM, "out of memory");
  c->trial = b, c->trial_err = b + ns, c->carried = b + 2 * ns, c->fd_err = b + 3 * ns;
  c->resid = b + 4 * ns, c->resid_ref = c->resid + nres, c->jac = c->resid_ref + nres;
  return SALTA_OK;
}

/* Whether some reference's error estimate exceeds the tolerance (then no
** route can fail against it). */
static int reference_uncertain(const check *c, const double *ref, const double *err) {
  double bound = c->tol * salta__max_abs(ref, c->ns);
  int k;
  for (k = 0; k < c->ns; ++k)
    if (err[k] > bound) return 1;
  return 0;
}

/* The reference at rtol_ref and its error estimate; refined, a
** parameter whose estimate exceeds the tolerance is retried at h / 10 and
** h / 100, keeping its least uncertain reference. */
static int reference(check *c, double *ref, double *err) {
  salta_fd_options fd;
  int k, tries, st;
  salta_fd_options_init(&fd);
  fd.h = c->h;
  if ((st = salta_loss_grad_fd(c->l, c->p, c->x0, &fd, ref, err))) return st;
  for (tries = c->refine ? 2 : 0; tries > 0 && reference_uncertain(c, ref, err); --tries) {
    fd.h /= 10;
    if ((st = salta_loss_grad_fd(c->l, c->p, c->x0, &fd, c->trial, c->trial_err))) return st;
    for (k = 0; k < c->ns; ++k)
      if (c->trial_err[k] < err[k]) ref[k] = c->trial[k], err[k] = c->trial_err[k];
  }
  return SALTA_OK;
}

/* The loss's options for route r: its own, on the route's method. */
static void use_route_options(check *c, int r) {
  c->l->opts = c->own;
  if (ROUTES[r].on) c->l->opts.method = ROUTES[r].method;
}

/* Route r's gradient into g (the differences' own estimate into fd_err),
** on the route's options. */
static int route_grad(check *c, int r, double *g) {
  salta_loss *l = c->l;
  double v;
  int st;
  switch (ROUTES[r].kind) {
    case SENS:
      l->route = SALTA_ROUTE_SENS;
      st = salta_loss_eval(l, c->p, c->x0, NULL, g, NULL, NULL);
      l->route = c->route;
      return st;
    case ADJOINT: return salta_loss_eval_adjoint(l, c->p, c->x0, 0, 1, &v, g);
    case CONT: return salta_loss_eval_adjoint_cont(l, c->p, c->x0, &v, g);
    default: return salta_loss_grad_fd(l, c->p, c->x0, NULL, g, c->fd_err);
  }
}

/* The residuals of the run route r's gradient comes from (the discrete
** adjoint's: its discrete trajectory's; the continuous adjoint's and the
** differences': the loss's own), on the route's options. */
static int route_resid(check *c, int r) {
  double v;
  if (ROUTES[r].kind == ADJOINT) return salta_loss_eval_adjoint_residuals(c->l, c->p, c->x0, 0, 1, &v, NULL, c->resid);
  return salta_loss_eval(c->l, c->p, c->x0, NULL, NULL, c->resid, NULL);
}

/* The carried error of route r (0 where its residuals or the tight run's
** fail: nothing then explains a disagreement). */
static void carried_of(check *c, int r) {
  salta_loss *l = c->l;
  memset(c->carried, 0, sizeof(double) * (size_t)c->ns);
  if (!c->tight_ready) {
    l->opts = c->tight;
    c->tight_ready = salta_loss_eval(l, c->p, c->x0, NULL, NULL, c->resid_ref, c->jac) == SALTA_OK ? 1 : -1;
  }
  if (c->tight_ready < 0) return;
  use_route_options(c, r);
  if (route_resid(c, r) == SALTA_OK) salta_carried_error(c->nres, c->ns, c->jac, c->resid, c->resid_ref, c->carried);
}

/* Route r: its gradient into g and its outcome into res; an interrupt or
** a lack of memory stops the check (the status returned), any other
** failure is the route's. */
static int run_route(check *c, int r, const double *ref, const double *err, double *g, salta_check_result *res) {
  salta_loss *l = c->l;
  double big = salta__max_abs(ref, c->ns), scale = big > 0 ? big : 1, tol = c->tol;
  const double *own = ROUTES[r].kind == FD ? c->fd_err : NULL;
  int st;
  memset(res, 0, sizeof *res);
  use_route_options(c, r);
  if ((st = route_grad(c, r, g))) {
    if (st == SALTA_EINTR || st == SALTA_EMEM) return st;
    res->verdict = st == SALTA_ENODIFF ? SALTA_VERDICT_NOT_DIFFERENTIABLE : SALTA_VERDICT_REFUSED;
    res->status = st;
    snprintf(res->message, sizeof res->message, "%s", salta_loss_errmsg(l));
    return SALTA_OK;
  }
  /* differences at the loss's own tolerance carry its noise over the step */
  if (ROUTES[r].kind == FD) tol = fmax(tol, c->own.rtol / c->h);
  if (own) res->own = 10 * salta__max_abs(own, c->ns) / scale;
  res->verdict = salta_check_judge(c->ns, g, ref, err, tol, NULL, NULL, NULL, &res->worst);
  if (res->verdict == SALTA_VERDICT_OK) return SALTA_OK;
  carried_of(c, r);
  res->carried = salta__max_abs(c->carried, c->ns) / scale;
  res->verdict = salta_check_judge(c->ns, g, ref, err, tol, c->carried, own, NULL, NULL);
  return SALTA_OK;
}

/* The check's verdict from its routes' and the reference's uncertainty. */
static salta_verdict overall(const check *c, const double *ref, const double *err, const salta_check_result *routes) {
  static const salta_verdict order[] = {SALTA_VERDICT_NOT_DIFFERENTIABLE, SALTA_VERDICT_DISAGREE,
                                        SALTA_VERDICT_ILL_CONDITIONED};
  int q, r;
  for (q = 0; q < 3; ++q)
    for (r = 0; r < SALTA_CHECK_NROUTES; ++r)
      if (routes[r].verdict == order[q]) return order[q];
  for (r = 0; r < SALTA_CHECK_NROUTES; ++r)
    if (routes[r].verdict == SALTA_VERDICT_UNCERTAIN) return SALTA_VERDICT_INCONCLUSIVE;
  return reference_uncertain(c, ref, err) ? SALTA_VERDICT_INCONCLUSIVE : SALTA_VERDICT_OK;
}

int salta_loss_check(salta_loss *l, const double *p, const double *x0, const salta_check_options *o, double *ref,
                     double *err, double *grad, salta_check_result *routes, salta_verdict *verdict) {
  salta_check_options defaults;
  check c;
  int r, st;
  if (!l) return SALTA_EINPUT;
  if (!p || !ref || !err || !grad || !routes || !verdict)
    return salta__fail(l->err, SALTA_EINPUT, "model '%s': salta_loss_check needs parameters and room for the "
                       "reference, its error, the routes' gradients and results, and the verdict", l->d->name);
  if (l->ns == 0) return salta__fail(l->err, SALTA_EINPUT, "model '%s': no free parameters for a gradient", l->d->name);
  if (!o) salta_check_options_init(&defaults), o = &defaults;
  memset(&c, 0, sizeof c);
  c.l = l, c.p = p, c.x0 = x0, c.ns = l->ns, c.nres = salta_loss_nresid(l);
  if ((st = resolve(&c, o)) || (st = alloc_scratch(&c))) return st;
  l->opts = c.tight;
  st = reference(&c, ref, err);
  for (r = 0; r < SALTA_CHECK_NROUTES && st == SALTA_OK; ++r) {
    if (o->routes && !(o->routes & (1u << r))) {
      memset(&routes[r], 0, sizeof routes[r]);
      routes[r].verdict = SALTA_VERDICT_SKIPPED;
      continue;
    }
    st = run_route(&c, r, ref, err, grad + (size_t)r * c.ns, &routes[r]);
  }
  if (st == SALTA_OK) *verdict = overall(&c, ref, err, routes);
  l->opts = c.own;
  l->route = c.route;
  free(c.trial);
  return st;
}
