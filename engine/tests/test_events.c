/*
** test_events.c -- the events module on synthetic interpolants: two balls
** in exact flight (h, v each, gravity p[0]) with a floor guard each and a
** two-sided guard on their height difference. The interpolant is the
** closed-form flight, so every expected crossing is known exactly.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "events.h"
#include "tol.h"

/* ---- the model: x = (h1, v1, h2, v2), p = (g, e) ------------------------- */

static int f_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z;
  o[0] = x[1], o[1] = -p[0], o[2] = x[3], o[3] = -p[0];
  return 0;
}
static const int fx_row[] = {0, 2}, fx_col[] = {1, 3};
static int fx_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p;
  o[0] = 1, o[1] = 1;
  return 0;
}
static int e_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p;
  o[0] = x[0], o[1] = x[2], o[2] = x[0] - x[2];
  return 0;
}
static double e_one(int j, double t, const double *x, const double *z, const double *p) {
  double o[3];
  e_eval(t, x, z, p, o);
  return o[j];
}
static const int ex_row[] = {0, 2, 1, 2, 0}, ex_col[] = {0, 0, 2, 2};
static int ex_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p;
  o[0] = 1, o[1] = 1, o[2] = 1, o[3] = -1;
  return 0;
}
/* a bounce: h+ = 0, v+ = -e v- */
static int r0_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z;
  o[0] = 0, o[1] = -p[1] * x[1], o[2] = x[2], o[3] = x[3];
  return 0;
}
static int r1_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z;
  o[0] = x[0], o[1] = x[1], o[2] = 0, o[3] = -p[1] * x[3];
  return 0;
}
static int r2_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p;
  memcpy(o, x, sizeof(double) * 4);
  return 0;
}

static const char *const xn[] = {"h1", "v1", "h2", "v2"}, *const pn[] = {"g", "e"};
static const char *const en[] = {"floor1", "floor2", "level"};
static const double xs[] = {1, 0, 1, 0, 0}, pnom[] = {9.81, 0.5};
static const int edir[] = {SALTA_DIR_DOWN, SALTA_DIR_DOWN, SALTA_DIR_BOTH};
static const salta_function_def resets[] = {{.n = 4, .eval = r0_eval}, {.n = 4, .eval = r1_eval},
                                            {.n = 4, .eval = r2_eval}};
static const int assign_ptr[] = {0, 2, 4, 4}, assign_rows[] = {0, 1, 2, 3};

static const salta_model_def def = {
  .abi = SALTA_ABI_VERSION, .name = "flight", .hash = "0",
  .nx = 4, .np = 2, .ne = 3,
  .x_names = xn, .p_names = pn, .e_names = en,
  .x_start = xs, .p_nominal = pnom, .e_direction = edir,
  .f = {.n = 4, .eval = f_eval, .d = {[SALTA_WRT_X] = {.nnz = 2, .row = fx_row, .col = fx_col, .eval = fx_eval}}},
  .e = {.n = 3, .eval = e_eval, .d = {[SALTA_WRT_X] = {.nnz = 4, .row = ex_row, .col = ex_col, .eval = ex_eval}}},
  .r = resets, .r_assign_ptr = assign_ptr, .r_assign_rows = assign_rows,
  .e_one = e_one,
};

/* ---- the synthetic interpolant: exact flight from (tc, wc) ---------------------- */

typedef struct flight { double tc, wc[4], g; } flight;

static int flight_at(void *ctx, double t, double *w, const int *cols, int ncols) {
  const flight *fl = ctx;
  double s = t - fl->tc, all[4];
  int i;
  all[0] = fl->wc[0] + fl->wc[1] * s - 0.5 * fl->g * s * s;
  all[1] = fl->wc[1] - fl->g * s;
  all[2] = fl->wc[2] + fl->wc[3] * s - 0.5 * fl->g * s * s;
  all[3] = fl->wc[3] - fl->g * s;
  if (!cols) memcpy(w, all, sizeof all);
  for (i = 0; i < ncols; ++i) w[cols[i]] = all[cols[i]];
  return 0;
}

typedef struct bench {
  char err[1024];
  double p[2];
  salta_sim_options o;
  salta__dae dae;
  salta__events ev;
  flight fl;
  salta__interp ip;
} bench;

static void setup(bench *b, double g, double t0, double h1, double v1, double h2, double v2) {
  memset(b, 0, sizeof *b);
  b->p[0] = g, b->p[1] = 0.5;
  CHECK(salta__dae_init(&b->dae, &def, b->err) == SALTA_OK);
  b->dae.p = b->p;
  CHECK(salta__events_init(&b->ev, &b->dae) == SALTA_OK);
  salta_sim_options_init(&b->o, t0, t0 + 100);
  b->fl.tc = t0, b->fl.g = g;
  b->fl.wc[0] = h1, b->fl.wc[1] = v1, b->fl.wc[2] = h2, b->fl.wc[3] = v2;
  b->ip.at = flight_at, b->ip.ctx = &b->fl, b->ip.exact_z = 1;
  CHECK(salta__events_start(&b->ev, &b->o, t0, b->fl.wc) == SALTA_OK);
}

static void teardown(bench *b) {
  salta__events_free(&b->ev);
  salta__dae_free(&b->dae);
}

/* Fires the located group at tau and continues the flight from there. */
static void fire_and_continue(bench *b, double tau) {
  double wm[4], wp[4];
  flight_at(&b->fl, tau, wm, NULL, 0);
  CHECK(salta__events_fire(&b->ev, tau, wm, wp) == SALTA_OK);
  b->fl.tc = tau;
  memcpy(b->fl.wc, wp, sizeof wp);
}

/* tau is the side just past guard j's crossing on the interpolant (on its
** firing side, and not a time tolerance earlier), and near the exact one */
static void check_crossing(bench *b, int j, double tau, double exact) {
  double w[4], past, before, dir = def.e_direction[j];
  flight_at(&b->fl, tau, w, NULL, 0);
  past = e_one(j, tau, w, NULL, b->p);
  flight_at(&b->fl, tau - salta__time_tol(tau), w, NULL, 0);
  before = e_one(j, tau, w, NULL, b->p);
  CHECK(past * dir >= 0 && before * dir < 0);
  CHECK_NEAR(tau, exact, 1e-14);
}

/* Upward gravity: floor1 dips below zero between two samples of a long
** step and comes back; the dip is found at the sampled parabola's vertex. */
static void dip_inside_a_step(void) {
  bench b;
  double tau, a = 0.5 * 9.81, d = 1e-4;
  /* h1 = a (t - 0.5)^2 - d */
  setup(&b, -9.81, 0, a * 0.25 - d, -a, 5, 0);
  CHECK(salta__events_locate(&b.ev, &b.ip, 0, 0, 1.2, &tau) == 1);
  CHECK(b.ev.fire[0] == 0);
  check_crossing(&b, 0, tau, 0.5 - sqrt(d / a));
  CHECK(b.ev.probes <= 32);   /* 4 samples, 2 rates, a split, the vertex, the refinement, the group */
  teardown(&b);
}

/* A bounce puts the ball back at zero: the guard is armed at once
** ("leaving") but does not re-fire at the bounce, and fires at the next. */
static void leaving_zero_after_a_reset(void) {
  bench b;
  double tau, tau2, t1 = sqrt(2 / 9.81);
  setup(&b, 9.81, 0, 5, 0, 1, 0);
  CHECK(salta__events_locate(&b.ev, &b.ip, 0, 0, 1, &tau) == 1);
  CHECK(b.ev.fire[0] == 1);
  check_crossing(&b, 1, tau, t1);
  fire_and_continue(&b, tau);
  CHECK(b.ev.arming[1] == SALTA__LEAVING);
  CHECK(b.ev.nlog == 1 && b.ev.log[0].event == 1 && b.ev.log[0].group_size == 1);
  /* the bounce's instant and the first short steps see no event */
  CHECK(salta__events_locate(&b.ev, &b.ip, tau, tau, tau + 1e-12, &tau2) == 0);
  CHECK(salta__events_step_done(&b.ev, tau + 1e-12) == SALTA_OK);
  CHECK(salta__events_locate(&b.ev, &b.ip, tau + 1e-12, tau + 1e-12, tau + 0.2, &tau2) == 0);
  CHECK(salta__events_step_done(&b.ev, tau + 0.2) == SALTA_OK);
  CHECK(b.ev.arming[1] == SALTA__ARMED);   /* seen clear */
  /* v+ = e g t1: the next bounce 2 e t1 later */
  CHECK(salta__events_locate(&b.ev, &b.ip, tau + 0.2, tau + 0.2, tau + 1, &tau2) == 1);
  check_crossing(&b, 1, tau2, tau + 2 * 0.5 * 9.81 * t1 / 9.81);
  teardown(&b);
}

/* Two balls at one height: both floors fire as one group, the resets read
** the left limit, and the two-sided level guard, at zero all along, never
** fires. */
static void two_guards_at_once(void) {
  bench b;
  double tau, t1 = sqrt(2 / 9.81);
  setup(&b, 9.81, 0, 1, 0, 1, 0);
  CHECK(salta__events_locate(&b.ev, &b.ip, 0, 0, 1, &tau) == 2);
  CHECK(b.ev.fire[0] == 0 && b.ev.fire[1] == 1);
  check_crossing(&b, 0, tau, t1);
  fire_and_continue(&b, tau);
  CHECK(b.ev.nlog == 2 && b.ev.log[1].group == 0 && b.ev.log[1].group_size == 2);
  CHECK_NEAR(b.fl.wc[1], 0.5 * 9.81 * t1, 1e-12);
  CHECK_NEAR(b.fl.wc[3], 0.5 * 9.81 * t1, 1e-12);
  teardown(&b);
}

/* A guard at zero at the start is not armed there; armed once clear, it
** fires at its next crossing, which here is the step's end exactly. */
static void crossings_at_the_start_and_at_tf(void) {
  bench b;
  double tau;
  /* g = 2: h2 = t - t^2 leaves zero at t0 and comes back exactly at the
  ** step end t = 1; h1 = 5 - t^2 and the level 5 - t stay positive */
  setup(&b, 2, 0, 5, 0, 0, 1);
  CHECK(!salta__is_armed(b.ev.arming[1]));
  CHECK(salta__events_locate(&b.ev, &b.ip, 0, 0, 0.5, &tau) == 0);
  CHECK(salta__events_step_done(&b.ev, 0.5) == SALTA_OK);
  CHECK(salta__is_armed(b.ev.arming[1]));
  CHECK(salta__events_locate(&b.ev, &b.ip, 0.5, 0.5, 1.0, &tau) == 1);
  CHECK(b.ev.fire[0] == 1);
  check_crossing(&b, 1, tau, 1.0);
  CHECK(tau <= 1.0);
  teardown(&b);
}

/* At t = 1e6 the crossing is as many ulps from the truth as at t = 1, and
** a bounce there still re-arms and fires again. */
static void ill_scaled_times(void) {
  bench b;
  double t0 = 1e6, tau, tau2, t1 = sqrt(2 / 9.81);
  setup(&b, 9.81, t0, 5, 0, 1, 0);
  CHECK(salta__events_locate(&b.ev, &b.ip, t0, t0, t0 + 1, &tau) == 1);
  check_crossing(&b, 1, tau, t0 + t1);
  CHECK(b.ev.probes <= 20);
  fire_and_continue(&b, tau);
  CHECK(b.ev.arming[1] == SALTA__LEAVING);
  CHECK(salta__events_locate(&b.ev, &b.ip, tau, tau, tau + 3e-11, &tau2) == 0);   /* an ulp-scale step */
  CHECK(salta__events_step_done(&b.ev, tau + 3e-11) == SALTA_OK);
  CHECK(salta__events_locate(&b.ev, &b.ip, tau + 3e-11, tau + 3e-11, tau + 1, &tau2) == 1);
  check_crossing(&b, 1, tau2, tau + t1);
  teardown(&b);
}

/* A reset that leaves a guard deeper on its firing side without turning it
** around is no Zeno limit; one that turned it around and never got clear is. */
static void zeno_limit(void) {
  bench b;
  double tau;
  setup(&b, 9.81, 0, 5, 0, 1, 0);
  CHECK(salta__events_locate(&b.ev, &b.ip, 0, 0, 1, &tau) == 1);
  fire_and_continue(&b, tau);
  /* pretend the flow went on falling: the leaving guard is found deeper */
  b.fl.wc[3] = -1;
  CHECK(salta__events_locate(&b.ev, &b.ip, tau, tau, tau + 0.5, &tau) == 0);
  CHECK(salta__events_step_done(&b.ev, b.fl.tc + 0.5) == SALTA_ESOLVER);
  CHECK_CONTAINS(b.err, "Zeno limit: event 'floor2'");
  teardown(&b);
}

int main(void) {
  dip_inside_a_step();
  leaving_zero_after_a_reset();
  two_guards_at_once();
  crossings_at_the_start_and_at_tf();
  ill_scaled_times();
  zeno_limit();
  return check_summary("events");
}
