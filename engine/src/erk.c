/*
** erk.c -- an explicit Runge-Kutta integrator (Dormand-Prince 5(4) with
** its 4th-order dense output) behind the integrator interface, for
** non-stiff index-1 models: the algebraic variables are solved from g at
** every stage (Newton, warm-started), so it integrates the ODE
** x' = f(t, x, z(t, x)); forward sensitivities are integrated alongside as
** s_x' = f_x s_x + f_z s_z + f_p with s_z from the implicit function
** theorem, or, where every algebraic is assigned explicitly, by the
** reduced right-hand side's Jacobians (sens.h). Small non-stiff models
** (the Cauer ladder, the bouncing balls, whose ballistic flight it
** integrates exactly) run several times faster than under IDAS.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "dopri.h"
#include "errors.h"
#include "integrator.h"
#include "tol.h"

typedef struct erk {
  salta__integrator_env env;
  int nx, nz, n, ns;
  salta__dopri dp;       /* over Y: x and the x rows of the sensitivities (nx (1 + ns)); the
                            dense coefficients of a state and of its sensitivities adjacent */
  int stiff_steps;       /* weighted count of accepted steps near the stability boundary */
  int clear_steps;       /* ... and of clear ones since */
  double *z;             /* w's z part: the algebraics where the last right-hand side was
                            (the warm start) */
  double *w;             /* [x; z] of a right-hand side */
  double *S;             /* n x ns: full sensitivities (a step's stage, its end) */
  double *Sz;            /* nz x ns: the z rows of a right-hand side's sensitivities
                            (unused by a model with the reduced right-hand side) */
  double t;              /* where the integration is */
  double t_cap;          /* the next step need not pass it (a crossing expected there) */
  long rhs_evals;
} erk;

static char *err_of(erk *r) { return r->env.dae->err; }

/* Packs x and the x rows of S (n x ns) into Y; unpacks the x rows of S. */
static void pack(const erk *r, const double *x, const double *S, double *Y) {
  int k;
  memcpy(Y, x, sizeof(double) * (size_t)r->nx);
  for (k = 0; k < r->ns; ++k)
    memcpy(Y + (size_t)(k + 1) * r->nx, S + (size_t)k * r->n, sizeof(double) * (size_t)r->nx);
}

static void unpack_S(const erk *r, const double *Y, double *S) {
  int k;
  for (k = 0; k < r->ns; ++k)
    memcpy(S + (size_t)k * r->n, Y + (size_t)(k + 1) * r->nx, sizeof(double) * (size_t)r->nx);
}

/* Y' at (t, Y), with the algebraics (r->z) solved there on the run's
** branch, from the last ones. */
static int rhs(void *ctx, double t, const double *Y, double *Yp) {
  erk *r = ctx;
  salta__dae *a = r->env.dae;
  int nx = r->nx, i, st;
  r->rhs_evals++;
  memcpy(r->w, Y, sizeof(double) * (size_t)nx);   /* r->z is w's z part: the last solve's, the warm start */
  if (r->nz > 0 && (st = salta__track_solve(r->env.track, t, r->w, r->z))) return st;
  a->d->f.eval(t, r->w, r->w + nx, a->p, Yp);
  if (!salta__all_finite(Yp, (size_t)nx))
    for (i = 0; i < nx; ++i)
      if (!isfinite(Yp[i]))
        return salta__fail(err_of(r), SALTA_ESOLVER, "model '%s': f for state '%s' is %g at t = %.17g",
                           a->d->name, a->d->x_names[i], Yp[i], t);
  if (r->ns == 0) return SALTA_OK;
  /* Y's sensitivity rows are the x rows of S, and Yp's those of S' */
  if (salta__sens_stage_prime(r->env.sens, t, r->w, Y + nx, nx, r->Sz, r->nz, Yp + nx, nx))
    return salta__fail(err_of(r), SALTA_ESOLVER, "model '%s': g_z is singular at t = %.17g", a->d->name, t);
  return SALTA_OK;
}

/* A status for the caller: ERK's retries over, a branch of g = 0 ending at
** a stage is final (within a step, erk_step retries shorter ones). */
static int solver_status(int st) {
  return st == SALTA__EBRANCH ? SALTA_EALGEBRAIC : st == SALTA__EPIVOT ? SALTA_ESOLVER : st;
}

/* out[j] = the dense output of state j (k = 0) or of its sensitivity k - 1,
** for j in cols (or every j < n without cols). */
static void dense_into(const erk *r, double th, int k, const int *cols, int n, double *out) {
  const double th1 = 1 - th;
  int q;
  for (q = 0; q < n; ++q) {
    int j = cols ? cols[q] : q;
    out[j] = salta__dopri_eval(r->dp.dense + salta__dopri_coef(&r->dp, j, k), th, th1);
  }
}

/* Hairer's stiffness test, on the accepted step of size h: h times the
** spectral radius estimated from the last two stages, ||K7 - K6|| /
** ||y7 - y6||, near the method's stability boundary (3.3 on the negative
** real axis) on 15 accepted steps with fewer than 6 clear ones between
** them; or, since on a stiff mode the error test (of the sensitivities
** above all) can hold the steps below that boundary, beyond 1 on 100
** steps. Accuracy keeps it far below 1 on a non-stiff model unless the
** tolerance is loose (rtol 1e-3). */
#define STIFF_AT_BOUNDARY 2.5
#define STIFF_BEYOND_ONE 100

static int stiff(erk *r, double h) {
  double num = 0, den = 0, hl2;
  int i;
  for (i = 0; i < r->dp.m; ++i) {
    double dk = r->dp.K[6][i] - r->dp.K[5][i], dy = r->dp.Ynew[i] - r->dp.y6[i];
    num += dk * dk;
    den += dy * dy;
  }
  hl2 = den > 0 ? h * h * num / den : 0;
  if (hl2 > 1) {
    r->clear_steps = 0;
    r->stiff_steps += hl2 > STIFF_AT_BOUNDARY * STIFF_AT_BOUNDARY ? STIFF_BEYOND_ONE / 15 + 1 : 1;
    return r->stiff_steps >= STIFF_BEYOND_ONE;
  }
  if (++r->clear_steps >= 6) r->stiff_steps = 0;
  return 0;
}

/* A step whose error norm is NaN: non-finite sensitivities (a Jacobian
** kernel's NaN or inf) are an error naming where, not a step to shrink.
** The first such stage is evaluated again, so that its point (r->w) is
** at hand for the message. */
static int nonfinite_sensitivities(erk *r) {
  int k, st;
  for (k = 0; k < 7; ++k) {
    const double tk = r->t + salta__dopri_node(k) * r->dp.h;
    if (salta__all_finite(r->dp.K[k] + r->nx, (size_t)(r->dp.m - r->nx))) continue;
    if (k > 0) salta__dopri_stage(&r->dp, k, r->dp.h);
    if ((st = rhs(r, tk, k > 0 ? r->dp.stage : r->dp.Y, r->dp.K[k]))) return st;
    unpack_S(r, r->dp.K[k], r->S);
    if ((st = salta__sens_check(r->env.sens, r->S, r->nx, r->n, tk, r->w))) return st;
  }
  return SALTA_OK;
}

/* ---- the interface ------------------------------------------------------------------ */

static int erk_start(void *self, double t0, const double *w, const double *S) {
  erk *r = self;
  const salta_sim_options *o = r->env.o;
  int st;
  r->t = t0;
  memcpy(r->z, w + r->nx, sizeof(double) * (size_t)r->nz);
  pack(r, w, S, r->dp.Y);
  if ((st = salta__track_restart(r->env.track, o, t0, w)) || (st = rhs(r, t0, r->dp.Y, r->dp.K[0])))
    return solver_status(st);
  r->dp.h = o->init_step > 0 ? o->init_step : salta__dopri_initial_step(&r->dp, t0, o->tf, o->rtol, o->max_step);
  r->dp.errn = 0;   /* a start forgets the last run's steps (a re-run starts its integrator again) */
  r->dp.rejected = r->dp.resize = 0;
  r->t_cap = INFINITY;
  r->stiff_steps = r->clear_steps = 0;
  return SALTA_OK;
}

/* Steps shorter than this (relative to |t|, absolute below 1) locate the
** end of an algebraic branch closely enough to report it. */
#define BRANCH_MIN_STEP 1e-10

/* A step is cut at the crossing an event's location expects next (t_cap)
** only to at least this fraction of its size. */
#define CAP_MIN 1e-6

static int erk_step(void *self, double tf, double *t_old, double *t_new) {
  erk *r = self;
  const salta_sim_options *o = r->env.o;
  int st;
  salta__dopri_resize(&r->dp);
  for (;;) {
    double errn, h;
    int capped = 0, to_tf = salta__dopri_clip(&r->dp, r->t, tf, o->max_step);
    if (to_tf < 0) {
      int i, at = 0;
      if (r->env.watch_stiffness) return SALTA__ESTIFF;
      for (i = 1; i < r->nx; ++i) if (fabs(r->dp.Y[i]) > fabs(r->dp.Y[at])) at = i;
      return salta__fail(err_of(r), SALTA_ESOLVER,
                         "model '%s': explicit Runge-Kutta step size fell to %g at t = %.17g, with state '%s' at %g: "
                         "the solution may blow up there (a finite escape time), or the model is stiff: use "
                         "method = \"bdf\"", r->env.dae->d->name, r->dp.h, r->t, r->env.dae->d->x_names[at],
                         r->dp.Y[at]);
    }
    h = r->dp.h;
    if (r->t_cap - r->t < h && r->t_cap - r->t >= CAP_MIN * h) h = r->t_cap - r->t, capped = 1, to_tf = 0;
    errn = salta__dopri_attempt(&r->dp, r->t, h, o->rtol, &st);
    /* a stage beyond the end of the algebraics' branch (a fold): a
    ** shorter step may stay before it; at the fold itself none does */
    if ((st == SALTA__EBRANCH || st == SALTA__EPIVOT) && h > BRANCH_MIN_STEP * fmax(1.0, fabs(r->t))) {
      r->env.stats->err_test_fails++;
      r->dp.h = 0.25 * h;
      r->dp.rejected = 1;
      continue;
    }
    if (st) return solver_status(st);
    if (isnan(errn) && r->ns > 0 && (st = nonfinite_sensitivities(r))) return st;
    if (!(errn <= 1.0)) {
      r->env.stats->err_test_fails++;
      r->dp.h = h;
      salta__dopri_reject(&r->dp, errn);
      continue;
    }
    r->env.stats->steps++;
    if (r->env.watch_stiffness && stiff(r, h)) return SALTA__ESTIFF;
    salta__dopri_accept(&r->dp, r->t, h, errn);
    if (capped) r->dp.resize = 0;   /* the size due stays the one the cap cut */
    r->t_cap = INFINITY;
    *t_old = r->t;
    *t_new = r->t = to_tf ? tf : r->t + h;
    /* the stages solved z on their branch; the pivots are checked here */
    memcpy(r->w, r->dp.Y, sizeof(double) * (size_t)r->nx);
    return salta__track_accept(r->env.track, r->t, r->w, 0);
  }
}

static int erk_at(void *self, double t, double *w, const int *cols, int ncols) {
  erk *r = self;
  double th = (t - r->dp.t_old) / r->dp.h_old;
  if (cols) {
    dense_into(r, th, 0, cols, ncols, w);
    return SALTA_OK;
  }
  dense_into(r, th, 0, NULL, r->nx, w);
  memcpy(w + r->nx, r->z, sizeof(double) * (size_t)r->nz);
  return r->nz > 0 ? solver_status(salta__track_solve(r->env.track, t, w, w + r->nx)) : SALTA_OK;
}

static int erk_sens_at(void *self, double t, double *S) {
  erk *r = self;
  double th = (t - r->dp.t_old) / r->dp.h_old;
  int k;
  for (k = 0; k < r->ns; ++k) dense_into(r, th, k + 1, NULL, r->nx, S + (size_t)k * r->n);
  return SALTA_OK;
}

static int erk_states_at(void *self, double t, const int *cols, int n, double *y, double *dy) {
  erk *r = self;
  const double th = (t - r->dp.t_old) / r->dp.h_old, th1 = 1 - th;
  int q, k;
  if (!dy) {   /* the values alone (a loss keeping the derivatives per step) */
    for (q = 0; q < n; ++q) y[q] = salta__dopri_eval(r->dp.dense + salta__dopri_coef(&r->dp, cols[q], 0), th, th1);
    return SALTA_OK;
  }
  for (q = 0; q < n; ++q) {
    const double *d = r->dp.dense + salta__dopri_coef(&r->dp, cols[q], 0);   /* the state's, then its sensitivities' */
    y[q] = salta__dopri_eval(d, th, th1);
    for (k = 0; k < r->ns; ++k) dy[(size_t)q * r->ns + k] = salta__dopri_eval(d + 5 * (k + 1), th, th1);
  }
  return SALTA_OK;
}

static int erk_sens_coef(void *self, const int *cols, int n, double *coef, double *t_old, double *h) {
  erk *r = self;
  size_t m = (size_t)5 * r->ns;
  int q;
  for (q = 0; q < n; ++q)   /* a state's directions follow its own coefficients */
    memcpy(coef + (size_t)q * m, r->dp.dense + salta__dopri_coef(&r->dp, cols[q], 1), sizeof(double) * m);
  *t_old = r->dp.t_old, *h = r->dp.h_old;
  return SALTA_OK;
}

static int erk_end_state(void *self, double *w, double *S) {
  erk *r = self;
  memcpy(w, r->dp.Y, sizeof(double) * (size_t)r->nx);
  memcpy(w + r->nx, r->z, sizeof(double) * (size_t)r->nz);
  if (S) unpack_S(r, r->dp.Y, S);
  return SALTA_OK;
}

static int erk_restart(void *self, double t, const double *w, const double *S, double t_next) {
  erk *r = self;
  int st;
  r->t = t;
  r->t_cap = t_next;
  salta__dopri_restart(&r->dp);   /* the next step tries the last accepted size */
  memcpy(r->z, w + r->nx, sizeof(double) * (size_t)r->nz);   /* a reset's re-consistency may jump: its own branch */
  pack(r, w, S, r->dp.Y);
  if ((st = salta__track_restart(r->env.track, r->env.o, t, w))) return st;
  return solver_status(rhs(r, t, r->dp.Y, r->dp.K[0]));
}

/* The arrays of r (lengths from its sizes, for the allocation). */
#define ERK_ARRAYS (SALTA__DOPRI_ARRAYS + 3)
static size_t erk_arrays(erk *r, salta__array *list) {
  size_t n = (size_t)r->n, ns = (size_t)r->ns, k = salta__dopri_arrays(&r->dp, list);
  salta__array own[3] = {SALTA__ARRAY(r->w, n), SALTA__ARRAY(r->S, n * ns), SALTA__ARRAY(r->Sz, (size_t)r->nz * ns)};
  memcpy(list + k, own, sizeof own);
  return ERK_ARRAYS;
}

static void erk_free(void *self) {
  erk *r = self;
  salta__array list[ERK_ARRAYS];
  if (!r) return;
  r->env.stats->res_evals += r->rhs_evals;
  salta__arrays_free(list, erk_arrays(r, list));
  free(r);
}

static const salta__integrator_ops erk_ops = {erk_start, erk_step, erk_at, erk_sens_at, erk_states_at, erk_sens_coef, erk_end_state,
                                              erk_restart, erk_free, 1};

int salta__erk_create(salta__integrator *it, const salta__integrator_env *env) {
  erk *r = calloc(1, sizeof *r);
  const salta__dae *a = env->dae;
  salta__array list[ERK_ARRAYS];
  int k;
  it->ops = &erk_ops;
  it->self = r;
  if (!r) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  r->env = *env;
  r->nx = a->nx, r->nz = a->nz, r->n = a->n;
  r->ns = env->sens ? env->sens->ns : 0;
  r->dp.nb = r->nx, r->dp.nk = r->ns, r->dp.m = r->nx * (1 + r->ns);
  r->dp.rhs = rhs, r->dp.ctx = r;
  if (salta__arrays_alloc(list, erk_arrays(r, list))) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  r->z = r->w + r->nx;
  for (k = 0; k < r->dp.m; ++k) {   /* sensitivity tolerances scale like atol / |p_j| */
    int dir = k < r->nx ? -1 : k / r->nx - 1;
    double pk = dir >= 0 && env->sens->dirs[dir] >= 0 ? fabs(a->p[env->sens->dirs[dir]]) : 1.0;
    r->dp.atol[k] = (env->o->atol_vec && k < r->nx ? env->o->atol_vec[k] : env->o->atol) / (pk > 0 ? pk : 1.0);
  }
  return SALTA_OK;
}

const double *salta__erk_interpolant(const salta__integrator *it, double *t_old, double *h) {
  const erk *r = it->self;
  *t_old = r->dp.t_old, *h = r->dp.h_old;
  if (r->ns > 0) return NULL;
  return r->dp.dense;
}
