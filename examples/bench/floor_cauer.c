/*
** floor_cauer.c -- the hand-written floor for salta's Cauer ladder benchmark
** (models/cauer.lua, bench.lua's grad_case with method = "erk"): the
** least-squares loss and its gradient by forward sensitivities, with a
** fused Dormand-Prince 5(4) integrator taking the same steps as salta's erk
** route (engine/src/erk.c: Hairer's initial step, the WRMS error test over
** the states AND the sensitivities with atol / |p| for the latter, safety
** 0.9, factors in [0.2, 10] and no growth right after a rejection, the 4th
** order dense output), the same event location (events.c: 4 samples per
** step, a parabola dip test, Illinois regula falsi to a few ulps) and the
** same sensitivity jump (sens.c). The algebraics are eliminated: g is
** linear in z with a constant g_z, inverted once per evaluation.
**
** The input file: floor_cauer_model.h.
**
**   gcc -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L floor_cauer.c -lm
**   ./a.out INPUT [REPEATS]
*/
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floor_harness.h"
#include "floor_cauer_model.h"

enum { NM = NX * (1 + NP), SAMPLES = 4 };

/* The Dormand-Prince 5(4) tableau as in erk.c. */
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

/* What one parameter set fixes: the Cauer's g_z^-1 and the tolerances. */
typedef struct model {
  const problem *pb;
  double Gi[NZ][NZ];  /* g_z^-1 (g = G z + c(t, x)) */
  double atol[NM];    /* sensitivities' atol scales like atol / |p| (as erk.c) */
} model;

/* The integrator; Y = [x; s_1; ...; s_NP], the x rows of the sensitivities. */
typedef struct erk {
  double t, h, t_old, h_old, errn;
  int rejected, resize;          /* as erk.c: a rejection caps the next growth */
  long steps, fails;
  double *Y, *Ynew, *K[7];       /* swapped, not copied */
  double stage[NM], err[NM], dense[5][NM], buf[9][NM];
} erk;

/* The loss and gradient accumulated over the targets, in time order. */
typedef struct acc { double L, g[NP], scale; int k; } acc;

/* ---- the model (floor_cauer_model.h) ---------------------------------------- */

static int setup(model *md, const problem *pb) {
  int k;
  md->pb = pb;
  if (cauer_inverse(pb->p, md->Gi)) return -1;
  for (k = 0; k < NM; ++k) {
    double pk = k < NX ? 1.0 : fabs(pb->p[k / NX - 1]);
    md->atol[k] = pb->atol / (pk > 0 ? pk : 1.0);
  }
  return 0;
}

static void solve_z(const model *md, double t, const double *x, double *z) { cauer_solve_z(md->pb, md->Gi, t, x, z); }
static void flow(const model *md, const double *x, const double *z, double *xdot) { cauer_flow(md->pb->p, x, z, xdot); }

/* Y' = [f; f_x s + f_z s_z + f_p] with s_z = -G^-1 (g_x s + g_p). */
static void rhs(const model *md, double t, const double *Y, double *Yp) {
  const problem *pb = md->pb;
  const double *p = pb->p;
  double z[NZ];
  int k, i;
  solve_z(md, t, Y, z);
  flow(md, Y, z, Yp);
  for (k = 0; k < NP; ++k) {
    const double *s = Y + NX * (k + 1);
    double *sp = Yp + NX * (k + 1);
    double r[NZ] = {s[L2I] - s[C5V] / pb->r2, -s[L1I] - s[C1V] / pb->r1, s[L2I] - s[L1I]};
    cauer_add_gp(k, z, r);
    sp[L2I] = (s[C3V] - s[C5V]) / p[PL2];
    sp[L1I] = (s[C1V] - s[C3V]) / p[PL1];
    if (k == PL2) sp[L2I] -= (Y[C3V] - Y[C5V]) / (p[PL2] * p[PL2]);
    if (k == PL1) sp[L1I] -= (Y[C1V] - Y[C3V]) / (p[PL1] * p[PL1]);
    for (i = 0; i < NZ; ++i) sp[C5V + i] = -(md->Gi[i][0] * r[0] + md->Gi[i][1] * r[1] + md->Gi[i][2] * r[2]);
  }
}

/* ---- the integrator (erk.c, fused) ------------------------------------------- */

static double wrms(const model *md, const double *v, const double *y0, const double *y1) {
  double sum = 0;
  int i;
  for (i = 0; i < NM; ++i) {
    double sc = md->atol[i] + md->pb->rtol * fmax(fabs(y0[i]), fabs(y1[i]));
    sum += (v[i] / sc) * (v[i] / sc);
  }
  return sqrt(sum / NM);
}

static double dense_at(const erk *r, double th, int i) {
  double th1 = 1 - th;
  return r->dense[0][i] + th * (r->dense[1][i] + th1 * (r->dense[2][i] + th * (r->dense[3][i] + th1 * r->dense[4][i])));
}

static void dense_all(const erk *r, double t, double *restrict w) {
  const double th = (t - r->t_old) / r->h_old, th1 = 1 - th;
  const double *restrict d0 = r->dense[0], *restrict d1 = r->dense[1], *restrict d2 = r->dense[2],
               *restrict d3 = r->dense[3], *restrict d4 = r->dense[4];
  int i;
  for (i = 0; i < NM; ++i) w[i] = d0[i] + th * (d1[i] + th1 * (d2[i] + th * (d3[i] + th1 * d4[i])));
}

/* Hairer's starting step from the sizes of y, y' and y''. */
static double initial_step(const model *md, erk *r, double tf) {
  double d0 = wrms(md, r->Y, r->Y, r->Y), d1 = wrms(md, r->K[0], r->Y, r->Y), d2, h0, h1;
  int i;
  h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
  h0 = fmin(h0, tf - r->t);
  for (i = 0; i < NM; ++i) r->stage[i] = r->Y[i] + h0 * r->K[0][i];
  rhs(md, r->t + h0, r->stage, r->K[1]);
  for (i = 0; i < NM; ++i) r->err[i] = r->K[1][i] - r->K[0][i];
  d2 = wrms(md, r->err, r->Y, r->Y) / h0;
  h1 = fmax(d1, d2) <= 1e-15 ? fmax(1e-6, h0 * 1e-3) : pow(0.01 / fmax(d1, d2), 0.2);
  h0 = fmin(100 * h0, h1);
  return fmin(h0, tf - r->t);
}

static void erk_start(const model *md, erk *r, double t0, const double *w) {
  int k;
  r->Y = r->buf[0], r->Ynew = r->buf[1];
  for (k = 0; k < 7; ++k) r->K[k] = r->buf[2 + k];
  r->t = t0;
  r->rejected = r->resize = 0;
  r->steps = r->fails = 0;
  memcpy(r->Y, w, sizeof(double) * NM);
  rhs(md, t0, r->Y, r->K[0]);
  r->h = initial_step(md, r, md->pb->tf);
}

/* Continues from an event's right limit: the next step tries the last size. */
static void erk_restart(const model *md, erk *r, double t, const double *w) {
  r->t = t;
  r->resize = 0;
  memcpy(r->Y, w, sizeof(double) * NM);
  rhs(md, t, r->Y, r->K[0]);
}

/* acc = sum_j c[j] K[j] over the nonzero weights, summed in salta's order;
** the loop over the components is the inner one, so it vectorises. */
static void combine(const erk *r, const double *c, int n, double *acc) {
  int i, j;
  for (i = 0; i < NM; ++i) acc[i] = 0;
  for (j = 0; j < n; ++j) {
    const double *K = r->K[j], cj = c[j];
    if (cj == 0) continue;
    for (i = 0; i < NM; ++i) acc[i] += cj * K[i];
  }
}

/* One attempt of size h from (t, Y): Ynew, K[1..6], the error norm. */
static double attempt(const model *md, erk *r, double h) {
  double acc[NM];
  int i, k;
  for (k = 1; k < 7; ++k) {
    combine(r, DP_A[k], k, acc);
    for (i = 0; i < NM; ++i) r->stage[i] = r->Y[i] + h * acc[i];
    rhs(md, r->t + DP_C[k] * h, r->stage, r->K[k]);
  }
  memcpy(r->Ynew, r->stage, sizeof(double) * NM);
  combine(r, DP_ERR, 7, acc);
  for (i = 0; i < NM; ++i) r->err[i] = h * acc[i];
  return wrms(md, r->err, r->Y, r->Ynew);
}

static void make_dense(erk *r, double h) {
  double acc[NM];
  int i;
  combine(r, DP_DENSE, 7, acc);
  for (i = 0; i < NM; ++i) {
    double y0 = r->Y[i], y1 = r->Ynew[i], dy = y1 - y0, bsp = h * r->K[0][i] - dy;
    r->dense[0][i] = y0;
    r->dense[1][i] = dy;
    r->dense[2][i] = bsp;
    r->dense[3][i] = dy - h * r->K[6][i] - bsp;
    r->dense[4][i] = h * acc[i];
  }
  r->t_old = r->t;
  r->h_old = h;
}

/* One accepted step towards tf (erk_step's controller); -1 when h underflows. */
static int erk_step(const model *md, erk *r, double tf, double *t_old, double *t_new) {
  double *tmp;
  if (r->resize) {
    r->h *= fmin(r->rejected ? 1.0 : 10.0, fmax(0.2, 0.9 * pow(fmax(r->errn, 1e-10), -0.2)));
    r->rejected = r->resize = 0;
  }
  for (;;) {
    double errn, h;
    int to_tf = 0;
    if (r->t + r->h > tf || tf - (r->t + r->h) < 1e-12 * fmax(1.0, fabs(tf))) {
      r->h = tf - r->t;
      to_tf = 1;
    } else if (r->h < 1e-13 * fmax(1.0, fabs(r->t))) {
      return -1;
    }
    h = r->h;
    errn = attempt(md, r, h);
    if (!(errn <= 1.0)) {
      r->fails++;
      r->h *= isfinite(errn) ? fmax(0.2, 0.9 * pow(errn, -0.2)) : 0.2;
      r->rejected = 1;
      continue;
    }
    r->steps++;
    make_dense(r, h);
    *t_old = r->t;
    *t_new = r->t = to_tf ? tf : r->t + h;
    tmp = r->Y, r->Y = r->Ynew, r->Ynew = tmp;
    tmp = r->K[0], r->K[0] = r->K[6], r->K[6] = tmp;   /* first same as last */
    r->errn = errn;
    r->resize = 1;
    return 0;
  }
}

/* ---- the event C3_v > 0.5 (events.c for one upward guard) ------------------------ */

static double time_tol(double t) { return 4 * DBL_EPSILON * fmax(1.0, fabs(t)); }
static int at_end(double t, double tf) { return tf - t <= 25 * time_tol(tf); }

static double guard_at(const erk *r, double t) {
  return dense_at(r, (t - r->t_old) / r->h_old, C3V) - 0.5;
}

/* Illinois regula falsi on [lo, hi] (guard elo < 0 <= ehi) to the time
** tolerance, trial points half a tolerance inside; returns the firing side. */
static double refine(const erk *r, double lo, double hi, double elo, double ehi) {
  int side = 0, it;
  for (it = 0; it < 200; ++it) {
    double tol = time_tol(hi), tm, e;
    if (hi - lo <= tol) break;
    tm = ehi != elo ? hi - ehi * (hi - lo) / (ehi - elo) : 0.5 * (lo + hi);
    if (!(tm > lo + 0.5 * tol)) tm = lo + 0.5 * tol;
    if (!(tm < hi - 0.5 * tol)) tm = hi - 0.5 * tol;
    e = guard_at(r, tm);
    if (e >= 0) {
      hi = tm, ehi = e;
      if (side == 1) elo *= 0.5;
      side = 1;
    } else {
      lo = tm, elo = e;
      if (side == -1) ehi *= 0.5;
      side = -1;
    }
  }
  return hi;
}

/* The first crossing in (t_from, t_end] on the step's interpolant, from
** SAMPLES + 1 samples (the first is g_start) and a parabola through three
** consecutive ones for a dip between them: 1 with *tau, or 0; *g_end is
** the guard at t_end. */
static int locate(const erk *r, double g_start, double t_from, double t_end, double *tau, double *g_end) {
  double ts[SAMPLES + 1], G[SAMPLES + 1];
  int i;
  ts[0] = t_from, G[0] = g_start;
  for (i = 1; i <= SAMPLES; ++i) {
    ts[i] = i == SAMPLES ? t_end : t_from + (t_end - t_from) * i / SAMPLES;
    G[i] = guard_at(r, ts[i]);
  }
  *g_end = G[SAMPLES];
  for (i = 1; i <= SAMPLES; ++i) {
    double e0 = G[i - 1], e1 = G[i], e2, qa, qb, u, tv, ev;
    if (e1 >= 0 && !(e0 >= 0)) {
      *tau = refine(r, ts[i - 1], ts[i], e0, e1);
      return 1;
    }
    if (i == SAMPLES) break;
    e2 = G[i + 1], qa = 0.5 * (e2 - 2 * e1 + e0), qb = 0.5 * (e2 - e0);
    if (qa >= 0 || e2 >= 0) continue;
    u = -qb / (2 * qa);
    if (!(fabs(u) < 1) || !(e1 + qb * u + qa * u * u >= 0)) continue;
    tv = ts[i] + u * (ts[i + 1] - ts[i]);
    if ((ev = guard_at(r, tv)) >= 0) {
      *tau = u < 0 ? refine(r, ts[i - 1], tv, e0, ev) : refine(r, ts[i], tv, e1, ev);
      return 1;
    }
  }
  return 0;
}

/* The left limit at tau from the interpolant, the reset C3_v = 0 and the
** sensitivity jump (sens.c): tau_p = -s_C3 / C3_v'-, s+ = s- + (x'- - x'+)
** tau_p on the other rows, s_C3+ = -C3_v'+ tau_p. w becomes the right limit. */
static int fire(const model *md, const erk *r, double tau, double *w) {
  double zm[NZ], zp[NZ], xm[NX], xp[NX], rate;
  int k, i;
  dense_all(r, tau, w);
  solve_z(md, tau, w, zm);
  flow(md, w, zm, xm);
  rate = xm[C3V];
  if (!(rate > 0)) return -1;   /* grazing, or against the direction: salta refuses it */
  w[C3V] = 0;
  solve_z(md, tau, w, zp);
  flow(md, w, zp, xp);
  for (k = 0; k < NP; ++k) {
    double *s = w + NX * (k + 1), tau_p = -s[C3V] / rate;
    for (i = 0; i < NX; ++i) s[i] = i == C3V ? (0 - xp[C3V]) * tau_p : s[i] + (xm[i] - xp[i]) * tau_p;
  }
  return 0;
}

/* ---- the loss ------------------------------------------------------------------- */

/* The residuals of target a->k at the point w = [x; s_1 ...] (lsq.lua:
** mean of the squared residuals over the finite data entries). */
static void output(const problem *pb, acc *a, const double *w) {
  const double *d = pb->data + (size_t)a->k * NX, sc = a->scale;
  double r[NX];
  int j, i;
  for (j = 0; j < NX; ++j) {
    r[j] = isnan(d[j]) ? 0 : (w[j] - d[j]) * sc;   /* a missing datum adds nothing */
    a->L += r[j] * r[j];
  }
  for (i = 0; i < NP; ++i) {   /* per direction, so its sum stays in a register */
    const double *s = w + NX * (i + 1);
    double gi = a->g[i];
    for (j = 0; j < NX; ++j) gi += 2 * r[j] * (sc * s[j]);
    a->g[i] = gi;
  }
  a->k++;
}

/* Outputs at the targets before t_to (up to it when inclusive), from the
** interpolant of the last step. */
static void outputs_in_step(const problem *pb, const erk *r, acc *a, double t_to, int inclusive) {
  double w[NM];
  while (a->k < pb->nt && (pb->times[a->k] < t_to || (inclusive && pb->times[a->k] <= t_to))) {
    dense_all(r, pb->times[a->k], w);
    output(pb, a, w);
  }
}

/* Loss and gradient at the problem's parameters: 0, or -1 on failure. */
static int evaluate(const problem *pb, erk *r, double *loss, double *grad) {
  model md;
  acc a = {0, {0}, 1.0 / sqrt((double)pb->nres), 0};
  double w[NM] = {0}, g_start, t_old = 0, t_new = 0, tau, g_end;
  if (setup(&md, pb)) return -1;
  memcpy(w, pb->x0, sizeof(double) * NX);   /* s(t0) = 0: the directions are parameters */
  while (a.k < pb->nt && pb->times[a.k] <= pb->t0) output(pb, &a, w);
  erk_start(&md, r, pb->t0, w);
  g_start = w[C3V] - 0.5;
  for (;;) {
    if (erk_step(&md, r, pb->tf, &t_old, &t_new)) return -1;
    if (locate(r, g_start, t_old, t_new, &tau, &g_end)) {
      outputs_in_step(pb, r, &a, tau, 0);
      if (fire(&md, r, tau, w)) return -1;
      while (a.k < pb->nt && pb->times[a.k] <= tau) output(pb, &a, w);
      if (at_end(tau, pb->tf)) break;
      erk_restart(&md, r, tau, w);
      g_start = w[C3V] - 0.5;
      continue;
    }
    outputs_in_step(pb, r, &a, t_new, 1);
    g_start = g_end;
    if (t_new >= pb->tf || at_end(t_new, pb->tf)) {
      memcpy(w, r->Y, sizeof(double) * NM);
      break;
    }
  }
  while (a.k < pb->nt) output(pb, &a, w);   /* at tf, or past an event there */
  *loss = a.L;
  memcpy(grad, a.g, sizeof a.g);
  return 0;
}

/* ---- input and timing (floor_harness.h) -------------------------------------------------------------- */

typedef struct run { const problem *pb; erk *r; } run;

static int run_eval(void *ctx, double *loss, double *grad) {
  const run *c = ctx;
  return evaluate(c->pb, c->r, loss, grad);
}

int main(int argc, char **argv) {
  problem pb;
  erk *r = malloc(sizeof *r);
  run c = {&pb, r};
  int reps = floor_reps(argc, argv, 200), st;
  if (reps < 0 || !r) {
    free(r);
    return 2;
  }
  if (read_problem(argv[1], &pb)) {
    fprintf(stderr, "%s: cannot read the input file %s\n", argv[0], argv[1]);
    return 1;
  }
  st = floor_time(argv[0], run_eval, &c, NP, reps);
  if (!st && getenv("FLOOR_STATS")) fprintf(stderr, "steps %ld, rejected %ld\n", r->steps, r->fails);
  free(pb.times);
  free(pb.data);
  free(r);
  return st;
}
