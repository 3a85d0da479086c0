/*
** test_loss.c -- a C host reads what a loss computed: the simulation of
** its last evaluation gives every output at the target times, though the
** evaluation itself computed only the loss's (here every loss output is a
** state, which the loss reads straight from the interpolant), and the
** routes agree with each other and with the closed form.
**
** x' = -k x, y' = -2 k y from x = y = 1: x = exp(-k t), y = exp(-2 k t).
*/
#include <math.h>

#include "check.h"
#include "salta.h"

static int f_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; o[0] = -p[0] * x[0]; o[1] = -2 * p[0] * x[1]; return 0;
}
static int h_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = x[0]; o[1] = x[1]; return 0;
}
static const int diag[] = {0, 1}, zero2[] = {0, 0};
static int fx_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; o[0] = -p[0]; o[1] = -2 * p[0]; return 0;
}
static int fp_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = -x[0]; o[1] = -2 * x[1]; return 0;
}
static int hx_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = 1; o[1] = 1; return 0;
}
static int none(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; (void)o; return 0;
}
static const char *const xn[] = {"x", "y"}, *const pn[] = {"k"};
static const double xs[] = {1, 1}, pnom[] = {0.5};
static const int y_state[] = {0, 1};

static const salta_model_def def = {
  .abi = SALTA_ABI_VERSION, .name = "decay2", .hash = "0",
  .nx = 2, .np = 1, .ny = 2,
  .x_names = xn, .p_names = pn, .y_names = xn,
  .x_start = xs, .p_nominal = pnom,
  .f = {.n = 2, .eval = f_eval,
        .d = {[SALTA_WRT_X] = {.nnz = 2, .row = diag, .col = diag, .eval = fx_eval},
              [SALTA_WRT_P] = {.nnz = 2, .row = diag, .col = zero2, .eval = fp_eval}}},
  .g = {.eval = none},
  .h = {.n = 2, .eval = h_eval, .d = {[SALTA_WRT_X] = {.nnz = 2, .row = diag, .col = diag, .eval = hx_eval}}},
  .e = {.eval = none},
  .y_state = y_state,
};

/* The outputs of sim at the times (k): x = exp(-k t), y = exp(-2 k t). */
static void check_outputs(salta_sim *sim, const double *times, int nt, double k) {
  int i;
  CHECK(salta_sim_nout(sim) == nt);
  for (i = 0; i < nt && i < salta_sim_nout(sim); ++i) {
    double t;
    const double *x, *z, *y;
    CHECK(salta_sim_out(sim, i, &t, &x, &z, &y) == SALTA_OK);
    CHECK(t == times[i]);
    CHECK_NEAR(x[0], exp(-k * t), 1e-8);
    CHECK_NEAR(x[1], exp(-2 * k * t), 1e-8);
    CHECK_NEAR(y[0], x[0], 1e-15);
    CHECK_NEAR(y[1], x[1], 1e-15);
  }
}

int main(void) {
  salta_model *m = NULL;
  salta_loss *loss = NULL;
  salta_sim_options o;
  salta_sim_stats st;
  const double times[] = {0.5, 1.0}, data[] = {0.7, 0.6, 0.6, 0.4}, p[] = {0.5};
  const int outputs[] = {0, 1}, dir = 0;
  double v, g, ga, gf, value_exact = 0, grad_exact = 0;
  int i, j;
  CHECK(salta_model_create(&m, &def) == SALTA_OK);
  CHECK(salta_loss_create(&loss, m, times, 2, outputs, 2, data, NULL) == SALTA_OK);
  salta_sim_options_init(&o, 0, 1.0);
  o.rtol = 1e-10, o.atol = 1e-12;
  CHECK(salta_loss_set_options(loss, &o) == SALTA_OK);
  CHECK(salta_loss_set_free(loss, &dir, 1) == SALTA_OK);
  /* the closed form: L = mean (y - d)^2 over the four data */
  for (i = 0; i < 2; ++i)
    for (j = 0; j < 2; ++j) {
      double c = j + 1, y = exp(-c * p[0] * times[i]), r = y - data[2 * i + j];
      value_exact += r * r / 4;
      grad_exact += 2 * r * (-c * times[i] * y) / 4;
    }

  /* the value alone, then with its gradient: the loss's own runs compute
  ** only the outputs it compares; the simulation it hands out has them all */
  CHECK(salta_loss_eval(loss, p, NULL, &v, NULL, NULL, NULL) == SALTA_OK);
  CHECK_NEAR(v, value_exact, 1e-8);
  salta_loss_stats_get(loss, &st);
  CHECK(st.events == 0 && st.steps > 0);
  check_outputs(salta_loss_sim(loss), times, 2, p[0]);
  CHECK(salta_loss_eval(loss, p, NULL, &v, &g, NULL, NULL) == SALTA_OK);
  CHECK_NEAR(g, grad_exact, 1e-7);
  check_outputs(salta_loss_sim(loss), times, 2, p[0]);
  {
    const double *S, *dy;
    CHECK(salta_sim_out_sens(salta_loss_sim(loss), 1, &S, &dy) == SALTA_OK);
    CHECK_NEAR(dy[0], -times[1] * exp(-p[0] * times[1]), 1e-7);
    CHECK_NEAR(dy[1], -2 * times[1] * exp(-2 * p[0] * times[1]), 1e-7);
  }

  /* the adjoint and the differences agree */
  CHECK(salta_loss_eval_adjoint(loss, p, NULL, 0, 1, &v, &ga) == SALTA_OK);
  CHECK_NEAR(ga, grad_exact, 1e-6);
  CHECK(salta_loss_grad_fd(loss, p, NULL, NULL, &gf, NULL) == SALTA_OK);
  CHECK_NEAR(gf, grad_exact, 1e-7);
  {
    /* its discrete trajectory's residuals on two trapezoidal steps of 0.5:
    ** x_n = ((1 - h k / 2) / (1 + h k / 2))^n, 7/9 per step for x, 3/5 for y;
    ** r = (yhat - d) / sqrt(4) */
    const double want[] = {(7.0 / 9 - 0.7) / 2, 0, (49.0 / 81 - 0.6) / 2, (0.36 - 0.4) / 2};
    double r[4], va, vr = 0;
    CHECK(salta_loss_nresid(loss) == 4);
    CHECK(salta_loss_eval_adjoint_residuals(loss, p, NULL, 2, 1, &va, NULL, r) == SALTA_OK);
    for (i = 0; i < 4; ++i) {
      CHECK_NEAR(r[i], want[i], 1e-13);
      vr += r[i] * r[i];
    }
    CHECK_NEAR(va, vr, 1e-15);
    CHECK(salta_loss_eval_adjoint(loss, p, NULL, 2, 1, &v, NULL) == SALTA_OK);
    CHECK(v == va);
  }

  /* the continuous adjoint, by name and as the route salta_loss_eval takes:
  ** one free direction is below the crossover, so AUTO takes sens */
  CHECK(salta_loss_eval_adjoint_cont(loss, p, NULL, &v, &ga) == SALTA_OK);
  CHECK_NEAR(v, value_exact, 1e-8);
  CHECK_NEAR(ga, grad_exact, 1e-7);
  CHECK(salta_loss_route(loss) == SALTA_ROUTE_SENS);
  CHECK(salta_route_for(SALTA_ROUTE_CROSSOVER - 1, 2) == SALTA_ROUTE_SENS);
  CHECK(salta_route_for(SALTA_ROUTE_CROSSOVER, 2) == SALTA_ROUTE_ADJOINT_CONT);
  CHECK(salta_loss_set_route(loss, SALTA_ROUTE_ADJOINT_CONT) == SALTA_OK);
  CHECK(salta_loss_route(loss) == SALTA_ROUTE_ADJOINT_CONT);
  CHECK(salta_loss_eval(loss, p, NULL, &v, &g, NULL, NULL) == SALTA_OK);
  CHECK(g == ga);
  CHECK(salta_loss_set_route(loss, SALTA_ROUTE_AUTO) == SALTA_OK);
  CHECK(salta_loss_route(loss) == SALTA_ROUTE_SENS);
  {
    /* in log k: the derivative by log k is k dL/dk */
    salta_fd_options fd;
    const int log_k = 1;
    salta_fd_options_init(&fd);
    fd.log = &log_k;
    CHECK(salta_loss_grad_fd(loss, p, NULL, &fd, &gf, NULL) == SALTA_OK);
    CHECK_NEAR(gf, p[0] * grad_exact, 1e-7);
  }

  salta_loss_free(&loss);
  salta_model_free(&m);
  return check_summary("loss");
}
