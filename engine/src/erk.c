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
#include "errors.h"
#include "integrator.h"
#include "tol.h"

/* The Dormand-Prince 5(4) tableau (Hairer, Norsett, Wanner: DOPRI5): nodes,
** stages, error weights and dense-output weights. */
static const double DP_C[7] = {0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1};
static const double DP_A[7][6] = {
  {0},
  {1.0 / 5},
  {3.0 / 40, 9.0 / 40},
  {44.0 / 45, -56.0 / 15, 32.0 / 9},
  {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
  {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
  {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84},
};
static const double DP_ERR[7] = {71.0 / 57600, 0, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200,
                                 22.0 / 525, -1.0 / 40};
static const double DP_DENSE[7] = {-12715105075.0 / 11282082432.0, 0, 87487479700.0 / 32700410799.0,
                                   -10690763975.0 / 1880347072.0, 701980252875.0 / 199316789632.0,
                                   -1453857185.0 / 822651844.0, 69997945.0 / 29380423.0};

typedef struct erk {
  salta__integrator_env env;
  int nx, nz, n, ns;
  int m;                 /* nx (1 + ns): x and the x rows of the sensitivities */
  double *Y, *Ynew, *K[7], *stage, *err, *atol;
  double *dense;         /* per component of Y, the 5 coefficients of its dense output, adjacent;
                            a state's own and its sensitivities' next to each other (see slot) */
  double *acc;           /* a weighted sum of the stages */
  double *y6;            /* Y at the sixth stage, for the stiffness test */
  int stiff_steps;       /* weighted count of accepted steps near the stability boundary */
  int clear_steps;       /* ... and of clear ones since */
  double *z;             /* w's z part: the algebraics where the last right-hand side was
                            (the warm start) */
  double *w;             /* [x; z] of a right-hand side */
  double *S;             /* n x ns: full sensitivities (a step's stage, its end) */
  double *Sz;            /* nz x ns: the z rows of a right-hand side's sensitivities
                            (unused by a model with the reduced right-hand side) */
  double t, h;           /* where the integration is; the next step size */
  double t_old, h_old;   /* the last accepted step, for the dense output */
  double errn;           /* its error norm */
  int rejected;          /* the last attempt before it was rejected */
  int resize;            /* the next step size is due from errn */
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

/* out := sum_k c[k] K[k] for k < nk (1 to 7), summed in the order of k,
** in one pass over the components; with Y, out := Y + sum_k (h c[k]) K[k]
** instead (a stage). */
static void combine(double *restrict out, const double *c, double *const *K, int nk, int m,
                    const double *restrict Y, double h) {
  const double *restrict K0 = K[0], *restrict K1 = K[1], *restrict K2 = K[2], *restrict K3 = K[3],
               *restrict K4 = K[4], *restrict K5 = K[5], *restrict K6 = K[6];
  const double s = Y ? h : 1, c0 = s * c[0], c1 = nk > 1 ? s * c[1] : 0, c2 = nk > 2 ? s * c[2] : 0,
               c3 = nk > 3 ? s * c[3] : 0, c4 = nk > 4 ? s * c[4] : 0, c5 = nk > 5 ? s * c[5] : 0,
               c6 = nk > 6 ? s * c[6] : 0;
  int i;
/* one loop per stage count, with and without Y */
#define SALTA__COMBINE(sum)                                    \
  do {                                                         \
    if (Y)                                                     \
      for (i = 0; i < m; ++i) out[i] = Y[i] + (sum);           \
    else                                                       \
      for (i = 0; i < m; ++i) out[i] = (sum);                  \
  } while (0)
  switch (nk) {
    case 1: SALTA__COMBINE(c0 * K0[i]); break;
    case 2: SALTA__COMBINE(c0 * K0[i] + c1 * K1[i]); break;
    case 3: SALTA__COMBINE(c0 * K0[i] + c1 * K1[i] + c2 * K2[i]); break;
    case 4: SALTA__COMBINE(c0 * K0[i] + c1 * K1[i] + c2 * K2[i] + c3 * K3[i]); break;
    case 5: SALTA__COMBINE(c0 * K0[i] + c1 * K1[i] + c2 * K2[i] + c3 * K3[i] + c4 * K4[i]); break;
    case 6: SALTA__COMBINE(c0 * K0[i] + c1 * K1[i] + c2 * K2[i] + c3 * K3[i] + c4 * K4[i] + c5 * K5[i]); break;
    default:
      SALTA__COMBINE(c0 * K0[i] + c1 * K1[i] + c2 * K2[i] + c3 * K3[i] + c4 * K4[i] + c5 * K5[i] + c6 * K6[i]);
  }
#undef SALTA__COMBINE
}

/* Y' at (t, Y), with the algebraics (r->z) solved there on the run's
** branch, from the last ones. */
static int rhs(erk *r, double t, const double *Y, double *Yp) {
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

/* A branch of g = 0 ending at a stage is the integration's error past
** the shortest step (see erk_step). */
/* A status for the caller: ERK's retries over, a branch's end is final. */
static int solver_status(int st) {
  return st == SALTA__EBRANCH ? SALTA_EALGEBRAIC : st == SALTA__EPIVOT ? SALTA_ESOLVER : st;
}

/* Weighted RMS norm of v with weights from y0 and y1. */
static double wrms(const erk *r, const double *v, const double *y0, const double *y1, double rtol) {
  double sum = 0;
  int i;
  for (i = 0; i < r->m; ++i) {
    double a0 = fabs(y0[i]), a1 = fabs(y1[i]), sc = r->atol[i] + rtol * (a0 > a1 ? a0 : a1);
    sum += (v[i] / sc) * (v[i] / sc);
  }
  return sqrt(sum / r->m);
}

/* Where the dense coefficients of state j (k = 0) or of its sensitivity
** to direction k - 1 are: a state's and its sensitivities' are adjacent,
** so that an output reads them together. */
static inline size_t slot(const erk *r, int j, int k) {
  return (size_t)5 * ((size_t)j * (size_t)(r->ns + 1) + (size_t)k);
}

/* The dense output with coefficients d at th (a fraction of the last step;
** th1 = 1 - th). */
static inline double dense_eval(const double *d, double th, double th1) {
  return d[0] + th * (d[1] + th1 * (d[2] + th * (d[3] + th1 * d[4])));
}

/* out[j] = the dense output of state j (k = 0) or of its sensitivity k - 1,
** for j in cols (or every j < n without cols). */
static void dense_into(const erk *r, double th, int k, const int *cols, int n, double *out) {
  const double th1 = 1 - th;
  int q;
  for (q = 0; q < n; ++q) {
    int j = cols ? cols[q] : q;
    out[j] = dense_eval(r->dense + slot(r, j, k), th, th1);
  }
}

/* Hairer's starting step: from the sizes of y, y' and y''. */
static double initial_step(erk *r, double t, double tf, double rtol, double max_step) {
  double d0 = wrms(r, r->Y, r->Y, r->Y, rtol), d1 = wrms(r, r->K[0], r->Y, r->Y, rtol), d2, h0, h1;
  int i;
  h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
  h0 = fmin(h0, tf - t);
  for (i = 0; i < r->m; ++i) r->stage[i] = r->Y[i] + h0 * r->K[0][i];
  if (rhs(r, t + h0, r->stage, r->K[1]) != SALTA_OK) return h0;
  for (i = 0; i < r->m; ++i) r->err[i] = r->K[1][i] - r->K[0][i];
  d2 = wrms(r, r->err, r->Y, r->Y, rtol) / h0;
  h1 = fmax(d1, d2) <= 1e-15 ? fmax(1e-6, h0 * 1e-3) : pow(0.01 / fmax(d1, d2), 0.2);
  h0 = fmin(100 * h0, h1);
  if (max_step > 0) h0 = fmin(h0, max_step);
  return fmin(h0, tf - t);
}

/* One attempted step of size h from (t, Y) with K[0] = Y'(t): writes Ynew
** and K[1..6]; returns the error norm (*st a status). */
static double attempt(erk *r, double t, double h, double rtol, int *st) {
  int i, k, m = r->m;
  for (k = 1; k < 7; ++k) {
    combine(r->stage, DP_A[k], r->K, k, m, r->Y, h);
    if (k == 5) memcpy(r->y6, r->stage, sizeof(double) * (size_t)m);
    if ((*st = rhs(r, t + DP_C[k] * h, r->stage, r->K[k])) != SALTA_OK) return -1;
  }
  memcpy(r->Ynew, r->stage, sizeof(double) * (size_t)m);   /* stage 7 is the 5th-order solution */
  combine(r->acc, DP_ERR, r->K, 7, m, NULL, 0);
  for (i = 0; i < m; ++i) r->err[i] = h * r->acc[i];
  return wrms(r, r->err, r->Y, r->Ynew, rtol);
}

/* The dense-output coefficients of the accepted step [t, t + h]. */
static void make_dense(erk *r, double t, double h) {
  int j, k;
  combine(r->acc, DP_DENSE, r->K, 7, r->m, NULL, 0);
  for (k = 0; k <= r->ns; ++k)
    for (j = 0; j < r->nx; ++j) {
      int i = k * r->nx + j;   /* in Y */
      double y0 = r->Y[i], y1 = r->Ynew[i], dy = y1 - y0, bsp = h * r->K[0][i] - dy, *d = r->dense + slot(r, j, k);
      d[0] = y0;
      d[1] = dy;
      d[2] = bsp;
      d[3] = dy - h * r->K[6][i] - bsp;
      d[4] = h * r->acc[i];
    }
  r->t_old = t;
  r->h_old = h;
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
  for (i = 0; i < r->m; ++i) {
    double dk = r->K[6][i] - r->K[5][i], dy = r->Ynew[i] - r->y6[i];
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
    const double tk = r->t + DP_C[k] * r->h;
    if (salta__all_finite(r->K[k] + r->nx, (size_t)(r->m - r->nx))) continue;
    if (k > 0) combine(r->stage, DP_A[k], r->K, k, r->m, r->Y, r->h);
    if ((st = rhs(r, tk, k > 0 ? r->stage : r->Y, r->K[k]))) return st;
    unpack_S(r, r->K[k], r->S);
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
  pack(r, w, S, r->Y);
  if ((st = salta__track_restart(r->env.track, o, t0, w)) || (st = rhs(r, t0, r->Y, r->K[0])))
    return solver_status(st);
  r->h = o->init_step > 0 ? o->init_step : initial_step(r, t0, o->tf, o->rtol, o->max_step);
  return SALTA_OK;
}

/* Steps shorter than this (relative to |t|, absolute below 1) locate the
** end of an algebraic branch closely enough to report it. */
#define BRANCH_MIN_STEP 1e-10

static int erk_step(void *self, double tf, double *t_old, double *t_new) {
  erk *r = self;
  const salta_sim_options *o = r->env.o;
  int st;
  if (r->resize) {   /* no growth right after a rejection */
    r->h *= fmin(r->rejected ? 1.0 : 10.0, fmax(0.2, 0.9 * pow(fmax(r->errn, 1e-10), -0.2)));
    r->rejected = r->resize = 0;
  }
  for (;;) {
    double errn, h;
    int to_tf = 0;
    if (o->max_step > 0) r->h = fmin(r->h, o->max_step);
    if (r->t + r->h > tf || tf - (r->t + r->h) < 1e-12 * fmax(1.0, fabs(tf))) {
      r->h = tf - r->t;
      to_tf = 1;
    } else if (r->h < 1e-13 * fmax(1.0, fabs(r->t))) {
      int i, at = 0;
      if (r->env.watch_stiffness) return SALTA__ESTIFF;
      for (i = 1; i < r->nx; ++i) if (fabs(r->Y[i]) > fabs(r->Y[at])) at = i;
      return salta__fail(err_of(r), SALTA_ESOLVER,
                         "model '%s': explicit Runge-Kutta step size fell to %g at t = %.17g, with state '%s' at %g: "
                         "the solution may blow up there (a finite escape time), or the model is stiff: use "
                         "method = \"bdf\"", r->env.dae->d->name, r->h, r->t, r->env.dae->d->x_names[at], r->Y[at]);
    }
    h = r->h;
    errn = attempt(r, r->t, h, o->rtol, &st);
    /* a stage beyond the end of the algebraics' branch (a fold): a
    ** shorter step may stay before it; at the fold itself none does */
    if ((st == SALTA__EBRANCH || st == SALTA__EPIVOT) && h > BRANCH_MIN_STEP * fmax(1.0, fabs(r->t))) {
      r->env.stats->err_test_fails++;
      r->h *= 0.25;
      r->rejected = 1;
      continue;
    }
    if (st) return solver_status(st);
    if (isnan(errn) && r->ns > 0 && (st = nonfinite_sensitivities(r))) return st;
    if (!(errn <= 1.0)) {
      r->env.stats->err_test_fails++;
      r->h *= isfinite(errn) ? fmax(0.2, 0.9 * pow(errn, -0.2)) : 0.2;
      r->rejected = 1;
      continue;
    }
    r->env.stats->steps++;
    if (r->env.watch_stiffness && stiff(r, h)) return SALTA__ESTIFF;
    make_dense(r, r->t, h);
    *t_old = r->t;
    *t_new = r->t = to_tf ? tf : r->t + h;
    memcpy(r->Y, r->Ynew, sizeof(double) * (size_t)r->m);
    memcpy(r->K[0], r->K[6], sizeof(double) * (size_t)r->m);   /* first same as last */
    r->errn = errn;
    r->resize = 1;
    /* the stages solved z on their branch; the pivots are checked here */
    memcpy(r->w, r->Y, sizeof(double) * (size_t)r->nx);
    return salta__track_accept(r->env.track, r->t, r->w, 0);
  }
}

static int erk_at(void *self, double t, double *w, const int *cols, int ncols) {
  erk *r = self;
  double th = (t - r->t_old) / r->h_old;
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
  double th = (t - r->t_old) / r->h_old;
  int k;
  for (k = 0; k < r->ns; ++k) dense_into(r, th, k + 1, NULL, r->nx, S + (size_t)k * r->n);
  return SALTA_OK;
}

static int erk_states_at(void *self, double t, const int *cols, int n, double *y, double *dy) {
  erk *r = self;
  const double th = (t - r->t_old) / r->h_old, th1 = 1 - th;
  int q, k;
  for (q = 0; q < n; ++q) {
    const double *d = r->dense + slot(r, cols[q], 0);   /* the state's, then its sensitivities' */
    y[q] = dense_eval(d, th, th1);
    if (dy)
      for (k = 0; k < r->ns; ++k) dy[(size_t)q * r->ns + k] = dense_eval(d + 5 * (k + 1), th, th1);
  }
  return SALTA_OK;
}

static int erk_end_state(void *self, double *w, double *S) {
  erk *r = self;
  memcpy(w, r->Y, sizeof(double) * (size_t)r->nx);
  memcpy(w + r->nx, r->z, sizeof(double) * (size_t)r->nz);
  if (S) unpack_S(r, r->Y, S);
  return SALTA_OK;
}

static int erk_restart(void *self, double t, const double *w, const double *S) {
  erk *r = self;
  int st;
  r->t = t;
  r->resize = 0;   /* the next step tries the last accepted size */
  memcpy(r->z, w + r->nx, sizeof(double) * (size_t)r->nz);   /* a reset's re-consistency may jump: its own branch */
  pack(r, w, S, r->Y);
  if ((st = salta__track_restart(r->env.track, r->env.o, t, w))) return st;
  return solver_status(rhs(r, t, r->Y, r->K[0]));
}

/* The arrays of r (lengths from its sizes, for the allocation). */
#define ERK_ARRAYS 18
static size_t erk_arrays(erk *r, salta__array *list) {
  size_t m = (size_t)r->m, n = (size_t)r->n, ns = (size_t)r->ns;
  salta__array all[ERK_ARRAYS] = {
    SALTA__ARRAY(r->Y, m), SALTA__ARRAY(r->Ynew, m), SALTA__ARRAY(r->K[0], m), SALTA__ARRAY(r->K[1], m),
    SALTA__ARRAY(r->K[2], m), SALTA__ARRAY(r->K[3], m), SALTA__ARRAY(r->K[4], m), SALTA__ARRAY(r->K[5], m),
    SALTA__ARRAY(r->K[6], m), SALTA__ARRAY(r->stage, m), SALTA__ARRAY(r->err, m), SALTA__ARRAY(r->atol, m),
    SALTA__ARRAY(r->dense, 5 * m), SALTA__ARRAY(r->acc, m), SALTA__ARRAY(r->y6, m),
    SALTA__ARRAY(r->w, n), SALTA__ARRAY(r->S, n * ns), SALTA__ARRAY(r->Sz, (size_t)r->nz * ns)};
  memcpy(list, all, sizeof all);
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

static const salta__integrator_ops erk_ops = {erk_start, erk_step, erk_at, erk_sens_at, erk_states_at, erk_end_state,
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
  r->m = r->nx * (1 + r->ns);
  if (salta__arrays_alloc(list, erk_arrays(r, list))) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  r->z = r->w + r->nx;
  for (k = 0; k < r->m; ++k) {   /* sensitivity tolerances scale like atol / |p_j| */
    int dir = k < r->nx ? -1 : k / r->nx - 1;
    double pk = dir >= 0 && env->sens->dirs[dir] >= 0 ? fabs(a->p[env->sens->dirs[dir]]) : 1.0;
    r->atol[k] = (env->o->atol_vec && k < r->nx ? env->o->atol_vec[k] : env->o->atol) / (pk > 0 ? pk : 1.0);
  }
  return SALTA_OK;
}
