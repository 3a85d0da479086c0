/*
** erk.c -- an explicit Runge-Kutta integrator (Dormand-Prince 5(4) with
** its 4th-order dense output) for non-stiff index-1 models, as an
** alternative to IDAS: the algebraic variables are solved from g at every
** stage (Newton, warm-started), so the integrator sees the ODE
** x' = f(t, x, z(t, x)); forward sensitivities are integrated alongside as
** s_x' = f_x s_x + f_z s_z + f_p with s_z from the implicit function
** theorem. Events, resets, jumps and outputs are shared with sim.c. Small
** non-stiff models (the Cauer ladder, the bouncing balls, whose ballistic
** flight it integrates exactly) run several times faster than under IDAS.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_impl.h"

/* Dormand-Prince 5(4) tableau (Hairer, Norsett, Wanner: DOPRI5). */
static const double C[7] = {0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1};
static const double A[7][6] = {
  {0},
  {1.0 / 5},
  {3.0 / 40, 9.0 / 40},
  {44.0 / 45, -56.0 / 15, 32.0 / 9},
  {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
  {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
  {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84},
};
static const double E[7] = {71.0 / 57600, 0, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200,
                            22.0 / 525, -1.0 / 40};
static const double D[7] = {-12715105075.0 / 11282082432.0, 0, 87487479700.0 / 32700410799.0,
                            -10690763975.0 / 1880347072.0, 701980252875.0 / 199316789632.0,
                            -1453857185.0 / 822651844.0, 69997945.0 / 29380423.0};

typedef struct erk {
  salta_sim *s;
  int m;                 /* nx (1 + ns): x and the x rows of the sensitivities */
  double *Y, *Ynew, *K[7], *stage, *err, *atol, *rc[5];
  double *z;             /* algebraics at the current point (warm start) */
  double *w;             /* [x; z] scratch */
  double *Sfull, *Spfull;/* n x ns */
  double t_old, h_old;   /* the last accepted step, for the dense output */
  int z_failed;          /* Newton on g failed at an interpolated point */
  long rhs_evals;
} erk;

/* Packs x and the x rows of S (n x ns) into Y; unpacks into w and S. */
static void pack(const salta_sim *s, const double *x, const double *S, double *Y) {
  int k;
  memcpy(Y, x, sizeof(double) * s->nx);
  for (k = 0; k < s->ns; ++k)
    memcpy(Y + (size_t)(k + 1) * s->nx, S + (size_t)k * s->n, sizeof(double) * s->nx);
}

static void unpack_S(const salta_sim *s, const double *Y, double *S) {
  int k;
  for (k = 0; k < s->ns; ++k)
    memcpy(S + (size_t)k * s->n, Y + (size_t)(k + 1) * s->nx, sizeof(double) * s->nx);
}

/* Y' at (t, Y); z is the warm start and returns the solved algebraics. */
static int rhs(erk *r, double t, const double *Y, double *z, double *Yp) {
  salta_sim *s = r->s;
  int nx = s->nx, nz = s->nz, worst, i, k;
  double res;
  r->rhs_evals++;
  memcpy(r->w, Y, sizeof(double) * nx);
  memcpy(r->w + nx, z, sizeof(double) * nz);
  if (nz && salta__solve_z(s, t, r->w, r->w + nx, &worst, &res) != 0)
    return salta__fail(s->err, SALTA_ESOLVER,
                       "model '%s': Newton on g failed at t = %.17g: algebraic equation g[%d] keeps residual %g",
                       s->d->name, t, worst + 1, res);
  memcpy(z, r->w + nx, sizeof(double) * nz);
  s->d->f.eval(t, r->w, r->w + nx, s->p, Yp);
  for (i = 0; i < nx; ++i)
    if (!isfinite(Yp[i]))
      return salta__fail(s->err, SALTA_ESOLVER, "model '%s': f for state '%s' is %g at t = %.17g",
                         s->d->name, s->d->x_names[i], Yp[i], t);
  if (s->ns == 0) return SALTA_OK;
  unpack_S(s, Y, r->Sfull);
  if (salta__sens_fill_z(s, t, r->w, r->Sfull) != 0)
    return salta__fail(s->err, SALTA_ESOLVER, "model '%s': g_z is singular at t = %.17g", s->d->name, t);
  salta__sens_prime(s, t, r->w, r->Sfull, r->Spfull);
  for (k = 0; k < s->ns; ++k)
    memcpy(Yp + (size_t)(k + 1) * nx, r->Spfull + (size_t)k * s->n, sizeof(double) * nx);
  return SALTA_OK;
}

/* Weighted RMS norm of v with weights from y0 and y1. */
static double wrms(const erk *r, const double *v, const double *y0, const double *y1, double rtol) {
  double sum = 0;
  int i;
  for (i = 0; i < r->m; ++i) {
    double sc = r->atol[i] + rtol * fmax(fabs(y0[i]), fabs(y1[i]));
    sum += (v[i] / sc) * (v[i] / sc);
  }
  return sqrt(sum / r->m);
}

/* Dense output at t inside the last accepted step: the first `len`
** components (nx: states only; m: with sensitivities). */
static void dense_at(const erk *r, double t, double *out, int len) {
  double th = (t - r->t_old) / r->h_old, th1 = 1 - th;
  int i;
  for (i = 0; i < len; ++i)
    out[i] = r->rc[0][i] + th * (r->rc[1][i] + th1 * (r->rc[2][i] + th * (r->rc[3][i] + th1 * r->rc[4][i])));
}

/* Newton on g at an interpolated point; a failure is kept for the caller. */
static void solve_at(erk *r, double t, double *w) {
  salta_sim *s = r->s;
  int worst;
  double res;
  if (s->nz && salta__solve_z(s, t, w, w + s->nx, &worst, &res) != 0 && !r->z_failed) {
    r->z_failed = 1;
    salta__fail(s->err, SALTA_ESOLVER,
                "model '%s': Newton on g failed at t = %.17g: algebraic equation g[%d] keeps residual %g",
                s->d->name, t, worst + 1, res);
  }
}

/* The interpolant for event location: x from the dense output, z solved. */
static void erk_at(void *ctx, double t, double *w) {
  erk *r = ctx;
  dense_at(r, t, w, r->s->nx);
  memcpy(w + r->s->nx, r->z, sizeof(double) * r->s->nz);
  solve_at(r, t, w);
}

/* w = [x; z] and the full S at time t of the last step. */
static void state_at(erk *r, double t, double *w, double *S) {
  salta_sim *s = r->s;
  if (s->ns > 0) {
    dense_at(r, t, r->stage, r->m);
    memcpy(w, r->stage, sizeof(double) * s->nx);
    unpack_S(s, r->stage, S);
  } else {
    dense_at(r, t, w, s->nx);
  }
  memcpy(w + s->nx, r->z, sizeof(double) * s->nz);
  solve_at(r, t, w);
  if (s->ns > 0) salta__sens_fill_z(s, t, w, S);
}

/* Hairer's starting step: from the sizes of y, y' and y''. */
static double initial_step(erk *r, double t, double tf, double rtol, double max_step) {
  double d0 = wrms(r, r->Y, r->Y, r->Y, rtol), d1 = wrms(r, r->K[0], r->Y, r->Y, rtol), d2, h0, h1;
  int i;
  h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
  h0 = fmin(h0, tf - t);
  for (i = 0; i < r->m; ++i) r->stage[i] = r->Y[i] + h0 * r->K[0][i];
  if (rhs(r, t + h0, r->stage, r->z, r->K[1]) != SALTA_OK) return h0;
  for (i = 0; i < r->m; ++i) r->err[i] = r->K[1][i] - r->K[0][i];
  d2 = wrms(r, r->err, r->Y, r->Y, rtol) / h0;
  h1 = fmax(d1, d2) <= 1e-15 ? fmax(1e-6, h0 * 1e-3) : pow(0.01 / fmax(d1, d2), 0.2);
  h0 = fmin(100 * h0, h1);
  if (max_step > 0) h0 = fmin(h0, max_step);
  return fmin(h0, tf - t);
}

static int alloc_erk(erk *r, salta_sim *s, const salta_sim_options *o) {
  int k, m = s->nx * (1 + s->ns);
  size_t total = (size_t)m * 18 + (size_t)s->n * (2 * s->ns + 1) + s->nz + 16;
  double *p;
  memset(r, 0, sizeof *r);
  r->s = s;
  r->m = m;
  p = malloc(sizeof(double) * total);
  if (!p) return -1;
  r->Y = p; p += m;
  r->Ynew = p; p += m;
  for (k = 0; k < 7; ++k) r->K[k] = p, p += m;
  r->stage = p; p += m;
  r->err = p; p += m;
  r->atol = p; p += m;
  for (k = 0; k < 5; ++k) r->rc[k] = p, p += m;
  r->z = p; p += s->nz;
  r->w = p; p += s->n;
  r->Sfull = p; p += (size_t)s->n * s->ns;
  r->Spfull = p;
  for (k = 0; k < m; ++k) {
    int dir = k < s->nx ? -1 : k / s->nx - 1;  /* sensitivity column, or -1 */
    double pk = dir >= 0 && s->dirs[dir] >= 0 ? fabs(s->p[s->dirs[dir]]) : 1.0;
    r->atol[k] = (o->atol_vec && k < s->nx ? o->atol_vec[k] : o->atol) / (pk > 0 ? pk : 1.0);
  }
  return 0;
}

/* One attempted step of size h from (t, Y) with K[0] = Y'(t). Writes Ynew,
** K[1..6] and returns the error norm (or a negative status). */
static double attempt(erk *r, double t, double h, double rtol, int *st) {
  int i, j, k, m = r->m;
  for (k = 1; k < 7; ++k) {
    for (i = 0; i < m; ++i) {
      double acc = 0;
      for (j = 0; j < k; ++j) acc += A[k][j] * r->K[j][i];
      r->stage[i] = r->Y[i] + h * acc;
    }
    if ((*st = rhs(r, t + C[k] * h, r->stage, r->z, r->K[k])) != SALTA_OK) return -1;
  }
  memcpy(r->Ynew, r->stage, sizeof(double) * m);   /* stage 7 is the 5th-order solution */
  for (i = 0; i < m; ++i) {
    double e = 0;
    for (k = 0; k < 7; ++k) e += E[k] * r->K[k][i];
    r->err[i] = h * e;
  }
  return wrms(r, r->err, r->Y, r->Ynew, rtol);
}

/* The dense-output coefficients of the accepted step [t, t + h]. */
static void make_dense(erk *r, double t, double h) {
  int i, k;
  for (i = 0; i < r->m; ++i) {
    double y0 = r->Y[i], y1 = r->Ynew[i], dy = y1 - y0, bsp = h * r->K[0][i] - dy, acc = 0;
    for (k = 0; k < 7; ++k) acc += D[k] * r->K[k][i];
    r->rc[0][i] = y0;
    r->rc[1][i] = dy;
    r->rc[2][i] = bsp;
    r->rc[3][i] = dy - h * r->K[6][i] - bsp;
    r->rc[4][i] = h * acc;
  }
  r->t_old = t;
  r->h_old = h;
}

static int oom(salta_sim *s) { return salta__fail(s->err, SALTA_EMEM, "out of memory"); }

int salta__integrate_erk(salta_sim *s, const salta_sim_options *o, const double *times, int nt) {
  erk r;
  double t = o->t0, h, *w0 = s->work + s->nz, *Sp = s->S ? s->S + (size_t)s->n * s->ns : NULL;
  int st = SALTA_OK, k = 0, nfire, rejected = 0;
  long attempts = 0;
  if (alloc_erk(&r, s, o)) return salta__fail(s->err, SALTA_EMEM, "out of memory");
  /* the consistent start (sim.c solved z0 and, with sensitivities, S0) */
  memcpy(r.z, w0 + s->nx, sizeof(double) * s->nz);
  pack(s, w0, s->S, r.Y);
  if ((st = rhs(&r, t, r.Y, r.z, r.K[0]))) goto done;
  while (k < nt && times[k] <= o->t0) salta__store_output(s, o->t0, w0, s->S), ++k;
  memcpy(s->gprev, s->guard0, sizeof(double) * s->d->ne);
  h = o->init_step > 0 ? o->init_step : initial_step(&r, t, o->tf, o->rtol, o->max_step);
  while (t < o->tf) {
    double errn, tnew, tau;
    if (++attempts > o->max_steps) {
      st = salta__fail(s->err, SALTA_ESOLVER, "model '%s': more than max_steps = %ld steps at t = %.17g",
                       s->d->name, o->max_steps, t);
      break;
    }
    if (o->max_step > 0) h = fmin(h, o->max_step);
    if (t + h > o->tf || o->tf - (t + h) < 1e-12 * fmax(1.0, fabs(o->tf))) {
      h = o->tf - t;
      if (h <= 1e-13 * fmax(1.0, fabs(o->tf))) break;   /* at tf up to round-off */
    } else if (h < 1e-13 * fmax(1.0, fabs(t))) {
      st = salta__fail(s->err, SALTA_ESOLVER,
                       "model '%s': explicit Runge-Kutta step size fell to %g at t = %.17g; the model may be "
                       "stiff: use method = \"bdf\"", s->d->name, h, t);
      break;
    }
    errn = attempt(&r, t, h, o->rtol, &st);
    if (st) break;
    if (!(errn <= 1.0)) {
      s->stats.err_test_fails++;
      h *= isfinite(errn) ? fmax(0.2, 0.9 * pow(errn, -0.2)) : 0.2;
      rejected = 1;
      continue;
    }
    tnew = t + h;
    s->stats.steps++;
    make_dense(&r, t, h);
    {
      salta__interp ip = {erk_at, &r};
      nfire = salta__crossing(s, &ip, t, t, tnew, &tau);
    }
    if (nfire < 0) { st = salta__guard_error(s); break; }
    if (r.z_failed) { st = SALTA_ESOLVER; break; }
    if (nfire > 0) {
      while (k < nt && times[k] < tau) {
        state_at(&r, times[k], s->interp_w, r.Sfull);
        salta__store_output(s, times[k], s->interp_w, r.Sfull);
        ++k;
      }
      state_at(&r, tau, w0, r.Sfull);
      if (o->record_steps && salta__store_step(s, tau, w0)) { st = oom(s); break; }
      if ((st = salta__after_events(s, o, tau, w0, nfire, r.Sfull, Sp))) break;
      if (o->record_steps && salta__store_step(s, tau, w0)) { st = oom(s); break; }
      while (k < nt && times[k] <= tau) salta__store_output(s, times[k], w0, r.Sfull), ++k;
      t = tau;
      memcpy(r.z, w0 + s->nx, sizeof(double) * s->nz);
      pack(s, w0, r.Sfull, r.Y);
      if (o->tf - t <= 1e-13 * fmax(1.0, fabs(o->tf))) break;   /* an event at tf */
      if ((st = rhs(&r, t, r.Y, r.z, r.K[0]))) break;
      continue;
    }
    while (k < nt && times[k] <= tnew) {
      state_at(&r, times[k], s->interp_w, r.Sfull);
      salta__store_output(s, times[k], s->interp_w, r.Sfull);
      ++k;
    }
    if (r.z_failed) { st = SALTA_ESOLVER; break; }
    t = tnew;
    memcpy(r.Y, r.Ynew, sizeof(double) * r.m);
    memcpy(r.K[0], r.K[6], sizeof(double) * r.m);   /* first same as last */
    if (o->record_steps) {
      memcpy(w0, r.Y, sizeof(double) * s->nx);
      memcpy(w0 + s->nx, r.z, sizeof(double) * s->nz);
      if (salta__store_step(s, t, w0)) { st = oom(s); break; }
    }
    if ((st = salta__rearm(s, t))) break;
    memcpy(s->gprev, s->guard, sizeof(double) * s->d->ne);
    /* step size for the next step: no growth right after a rejection */
    h *= fmin(rejected ? 1.0 : 10.0, fmax(0.2, 0.9 * pow(fmax(errn, 1e-10), -0.2)));
    rejected = 0;
  }
  /* outputs at tf (or left when an event ended the run) */
  if (st == SALTA_OK) {
    memcpy(w0, r.Y, sizeof(double) * s->nx);
    memcpy(w0 + s->nx, r.z, sizeof(double) * s->nz);
    if (s->ns > 0) {
      unpack_S(s, r.Y, r.Sfull);
      salta__sens_fill_z(s, t, w0, r.Sfull);
    }
    while (k < nt) salta__store_output(s, times[k], w0, r.Sfull), ++k;
  }
done:
  s->stats.res_evals += r.rhs_evals;
  free(r.Y);
  return st;
}
