/*
** test_event_times.c -- a C host reads event times' sensitivities and fits
** event times: x' = -k x from x0 ends at the terminal event x = c, at
** tau = log(x0 / c) / k, so d tau / dk = -tau / k, d tau / dc = -1 / (k c),
** d tau / dx0 = 1 / (k x0).
*/
#include <math.h>

#include "check.h"
#include "salta.h"

static int f_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; o[0] = -p[0] * x[0]; return 0;
}
static int fx_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; o[0] = -p[0]; return 0;
}
static int fp_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = -x[0]; return 0;
}
static int e_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; o[0] = x[0] - p[1]; return 0;
}
static int one(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = 1; return 0;
}
static int minus_one(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = -1; return 0;
}
static int copy(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = x[0]; return 0;
}
static int none(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; (void)o; return 0;
}
static double e_one(int j, double t, const double *x, const double *z, const double *p) {
  (void)j; (void)t; (void)z; return x[0] - p[1];
}

static const int zero[] = {0}, col1[] = {1};
static const char *const xn[] = {"x"}, *const pn[] = {"k", "c"}, *const en[] = {"low"};
static const double xs[] = {1}, pnom[] = {0.5, 0.25};
static const int edir[] = {SALTA_DIR_DOWN}, assign_ptr[] = {0, 0};
static const unsigned char eflags[] = {SALTA_EVENT_TERMINAL};
static const salta_function_def resets[] = {{.n = 1, .eval = copy}};

static const salta_model_def def = {
  .abi = SALTA_ABI_VERSION, .name = "decay_to", .hash = "0",
  .nx = 1, .np = 2, .ny = 1, .ne = 1,
  .x_names = xn, .p_names = pn, .y_names = xn, .e_names = en,
  .x_start = xs, .p_nominal = pnom, .e_direction = edir, .e_flags = eflags,
  .f = {.n = 1, .eval = f_eval,
        .d = {[SALTA_WRT_X] = {.nnz = 1, .row = zero, .col = zero, .eval = fx_eval},
              [SALTA_WRT_P] = {.nnz = 1, .row = zero, .col = zero, .eval = fp_eval}}},
  .g = {.eval = none},
  .h = {.n = 1, .eval = copy, .d = {[SALTA_WRT_X] = {.nnz = 1, .row = zero, .col = zero, .eval = one}}},
  .e = {.n = 1, .eval = e_eval,
        .d = {[SALTA_WRT_X] = {.nnz = 1, .row = zero, .col = zero, .eval = one},
              [SALTA_WRT_P] = {.nnz = 1, .row = zero, .col = col1, .eval = minus_one}}},
  .r = resets, .r_assign_ptr = assign_ptr,
  .e_one = e_one,
};

int main(void) {
  salta_model *m = NULL;
  salta_sim *sim = NULL;
  salta_loss *loss = NULL;
  salta_sim_options o;
  salta_event_sens es;
  const double p[] = {0.5, 0.25}, times[] = {0, 1, 2, 3, 4};
  const double tau = log(4.0) / 0.5, measured = 2.7, w = 10;
  const int dirs[] = {0, 1, -1}, free2[] = {0, 1}, ev = 0;
  const double *dt_end;
  double t, v, vc, g[2], ga[2], gc[2], gf[2], resid[1], jac[2], r;
  int k;
  CHECK(salta_model_create(&m, &def) == SALTA_OK);
  CHECK(salta_sim_create(&sim, m) == SALTA_OK);
  salta_sim_options_init(&o, 0, 4);
  o.rtol = 1e-11, o.atol = 1e-13;

  /* no sensitivities: no d t_end / dp */
  CHECK(salta_sim_run(sim, &o, p, NULL, times, 5) == SALTA_OK);
  CHECK(salta_sim_t_end_sens(sim, &dt_end) == SALTA_EINPUT);
  CHECK(salta_sim_nout(sim) == 3);   /* 0, 1, 2 before tau = 2.77 */

  /* with them: each direction's d tau, and d t_end the same */
  CHECK(salta_sim_set_sens(sim, dirs, 3) == SALTA_OK);
  o.terminal_output = 1;
  CHECK(salta_sim_run(sim, &o, p, NULL, times, 5) == SALTA_OK);
  CHECK(salta_sim_nevents(sim) == 1);
  CHECK(salta_sim_event_sens(sim, 0, &es) == SALTA_OK);
  CHECK_NEAR(es.tau_p[0], -tau / 0.5, 1e-8);
  CHECK_NEAR(es.tau_p[1], -1 / (0.5 * 0.25), 1e-8);
  CHECK_NEAR(es.tau_p[2], 1 / 0.5, 1e-8);
  CHECK(salta_sim_t_end_sens(sim, &dt_end) == SALTA_OK);
  for (k = 0; k < 3; ++k) CHECK(dt_end[k] == es.tau_p[k]);
  /* terminal_output: the terminal state is the last output */
  CHECK(salta_sim_nout(sim) == 4);
  CHECK(salta_sim_out(sim, 3, &t, NULL, NULL, NULL) == SALTA_OK);
  CHECK_NEAR(t, tau, 1e-9);

  /* the end at tf does not move */
  o.tf = 2;
  CHECK(salta_sim_run(sim, &o, p, NULL, times, 3) == SALTA_OK);
  CHECK(salta_sim_t_end_sens(sim, &dt_end) == SALTA_OK);
  for (k = 0; k < 3; ++k) CHECK(dt_end[k] == 0);

  /* a loss of one event time alone: r = w (tau - measured) */
  CHECK(salta_loss_create(&loss, m, NULL, 0, NULL, 0, NULL, NULL) == SALTA_OK);
  o.tf = 4, o.terminal_output = 0;
  CHECK(salta_loss_set_options(loss, &o) == SALTA_OK);
  CHECK(salta_loss_set_free(loss, free2, 2) == SALTA_OK);
  CHECK(salta_loss_eval(loss, p, NULL, &v, NULL, NULL, NULL) == SALTA_EINPUT);   /* no data yet */
  CHECK(salta_loss_set_event_data(loss, &ev, &measured, &w, 1) == SALTA_OK);
  CHECK(salta_loss_nresid(loss) == 1);
  CHECK(salta_loss_eval(loss, p, NULL, &v, g, resid, jac) == SALTA_OK);
  r = w * (tau - measured);
  CHECK_NEAR(resid[0], r, 1e-7);
  CHECK_NEAR(v, r * r, 1e-6);
  CHECK_NEAR(g[0], 2 * r * w * (-tau / 0.5), 1e-5);
  CHECK_NEAR(g[1], 2 * r * w * (-1 / (0.5 * 0.25)), 1e-5);
  CHECK_NEAR(jac[0], w * (-tau / 0.5), 1e-6);
  CHECK(salta_loss_eval_adjoint(loss, p, NULL, 0, 1, &v, ga) == SALTA_OK);
  CHECK(salta_loss_grad_fd(loss, p, NULL, NULL, gf, NULL) == SALTA_OK);
  CHECK(salta_loss_eval_adjoint_cont(loss, p, NULL, &vc, gc) == SALTA_OK);
  CHECK_NEAR(vc, r * r, 1e-6);
  for (k = 0; k < 2; ++k) {
    CHECK_NEAR(ga[k], g[k], 1e-5 * fabs(g[k]));
    CHECK_NEAR(gc[k], g[k], 1e-5 * fabs(g[k]));
    CHECK_NEAR(gf[k], g[k], 1e-5 * fabs(g[k]));
  }

  /* refused: an event the model lacks, times out of order, a measured time past tf */
  {
    const int bad_ev = 1, two[] = {0, 0};
    const double down[] = {2, 1}, late = 5;
    CHECK(salta_loss_set_event_data(loss, &bad_ev, &measured, NULL, 1) == SALTA_EINPUT);
    CHECK(salta_loss_set_event_data(loss, two, down, NULL, 2) == SALTA_EINPUT);
    CHECK(salta_loss_set_event_data(loss, &ev, &late, NULL, 1) == SALTA_OK);
    CHECK(salta_loss_eval(loss, p, NULL, &v, NULL, NULL, NULL) == SALTA_EINPUT);
  }

  salta_loss_free(&loss);
  salta_sim_free(&sim);
  salta_model_free(&m);
  return check_summary("event_times");
}
