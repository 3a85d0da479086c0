/*
** test_robust.c -- robust losses and event windows against their closed
** forms on a sawtooth: x' = 1 from x = 0, and event "wrap" at x = p puts
** x back to 0, so x(t) = t - p floor(t / p) and the events are at m p.
** The output x jumps at every event. Every route (forward sensitivities,
** the discrete adjoint, differences) against the closed-form gradient;
** the residuals' squares sum to the loss and 2 J^T r is its gradient.
*/
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "salta.h"

static int f_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = 1; return 0;
}
static int h_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = x[0]; return 0;
}
static int e_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; o[0] = x[0] - p[0]; return 0;
}
static double e_one(int j, double t, const double *x, const double *z, const double *p) {
  (void)j; (void)t; (void)z; return x[0] - p[0];
}
static int r_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = 0; return 0;
}
static int one(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = 1; return 0;
}
static int minus_one(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = -1; return 0;
}
static int none(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; (void)o; return 0;
}
static const int zero1[] = {0};
static const char *const xn[] = {"x"}, *const pn[] = {"p"}, *const en[] = {"wrap"};
static const double xs[] = {0}, pnom[] = {0.4};
static const int edir[] = {SALTA_DIR_UP}, assign_ptr[] = {0, 1}, assign_rows[] = {0};
static const salta_function_def resets[] = {{.n = 1, .eval = r_eval}};

static const salta_model_def def = {
  .abi = SALTA_ABI_VERSION, .name = "sawtooth", .hash = "0",
  .nx = 1, .np = 1, .ny = 1, .ne = 1,
  .x_names = xn, .p_names = pn, .y_names = xn, .e_names = en,
  .x_start = xs, .p_nominal = pnom, .e_direction = edir,
  .f = {.n = 1, .eval = f_eval},
  .g = {.eval = none},
  .h = {.n = 1, .eval = h_eval, .d = {[SALTA_WRT_X] = {.nnz = 1, .row = zero1, .col = zero1, .eval = one}}},
  .e = {.n = 1, .eval = e_eval,
        .d = {[SALTA_WRT_X] = {.nnz = 1, .row = zero1, .col = zero1, .eval = one},
              [SALTA_WRT_P] = {.nnz = 1, .row = zero1, .col = zero1, .eval = minus_one}}},
  .r = resets, .r_assign_ptr = assign_ptr, .r_assign_rows = assign_rows,
  .e_one = e_one,
};

#define NT 40

/* rho and rho' of scipy's loss functions */
static double rho(int kind, double z, double *d) {
  switch (kind) {
    case SALTA_ROBUST_SOFT_L1: *d = 1 / sqrt(1 + z); return 2 * (sqrt(1 + z) - 1);
    case SALTA_ROBUST_HUBER: *d = z <= 1 ? 1 : 1 / sqrt(z); return z <= 1 ? z : 2 * sqrt(z) - 1;
    case SALTA_ROBUST_CAUCHY: *d = 1 / (1 + z); return log(1 + z);
    default: *d = 1; return z;
  }
}

/* the window factor at distance dist and its derivative by the distance */
static double phi(double a, double b, double dist, double *d) {
  double s;
  *d = 0;
  if (dist <= a) return 0;
  if (dist >= a + b) return 1;
  s = (dist - a) / b;
  *d = (30 * pow(s, 4) - 60 * pow(s, 3) + 30 * s * s) / b;
  return 6 * pow(s, 5) - 15 * pow(s, 4) + 10 * pow(s, 3);
}

/* The closed-form loss at p over the targets, and dL/dp. */
static double closed_form(int kind, double C, double a, double b, double p, const double *T, const double *data,
                          double tf, double *grad) {
  double L = 0, G = 0;
  int k, m;
  for (k = 0; k < NT; ++k) {
    double y = T[k] - p * floor(T[k] / p), dy = -floor(T[k] / p), v = 1, dv = 0, u = y - data[k], r1, r;
    for (m = 1; m * p <= tf; ++m) {   /* events at m p: d(m p)/dp = m */
      double dphi, f = a + b > 0 ? phi(a, b, fabs(T[k] - m * p), &dphi) : 1, others = v;
      int q;
      for (q = m + 1; q * p <= tf; ++q) {
        double unused;
        others *= a + b > 0 ? phi(a, b, fabs(T[k] - q * p), &unused) : 1;
      }
      dv += others * dphi * (T[k] > m * p ? -m : m);
      v *= f;
    }
    r = C * C * rho(kind, u * u / (C * C), &r1);
    L += v * v * r / NT;
    G += (2 * v * dv * r + v * v * r1 * 2 * u * dy) / NT;
  }
  *grad = G;
  return L;
}

static void check_case(salta_loss *loss, int kind, double C, double a, double b, const double *T,
                       const double *data, double tf, double tol_adj) {
  const double p[] = {0.4};
  double v, g, ga, gf, exact_g, exact = closed_form(kind, C, a, b, p[0], T, data, tf, &exact_g);
  double r[NT], J[NT], ss = 0, jr = 0;
  int k;
  CHECK(salta_loss_set_robust(loss, kind, C) == SALTA_OK);
  CHECK(salta_loss_set_event_windows(loss, a, b, NULL) == SALTA_OK);
  CHECK(salta_loss_eval(loss, p, NULL, &v, &g, r, J) == SALTA_OK);
  CHECK_NEAR(v, exact, 1e-9);
  CHECK_NEAR(g, exact_g, 1e-7);
  for (k = 0; k < NT; ++k) ss += r[k] * r[k], jr += 2 * J[k] * r[k];
  CHECK_NEAR(ss, v, 1e-12);
  CHECK_NEAR(jr, g, 1e-9);
  CHECK(salta_loss_eval_adjoint(loss, p, NULL, 0, 1, &v, &ga) == SALTA_OK);
  CHECK_NEAR(v, exact, tol_adj);
  CHECK_NEAR(ga, exact_g, tol_adj);
  CHECK(salta_loss_grad_fd(loss, p, NULL, NULL, &gf, NULL) == SALTA_OK);
  CHECK_NEAR(gf, exact_g, 1e-6);
}

int main(void) {
  salta_model *m = NULL;
  salta_loss *loss = NULL;
  salta_sim_options o;
  double T[NT], data[NT];
  const int out = 0, dir = 0;
  const double tf = 1.0;
  int k, kind;
  for (k = 0; k < NT; ++k) {   /* a sawtooth of period 0.41 measured with errors, and outliers */
    T[k] = (k + 0.5) * tf / NT;
    data[k] = T[k] - 0.41 * floor(T[k] / 0.41) + 0.03 * sin(7.0 * k) + (k % 9 == 4 ? 0.3 : 0);
  }
  CHECK(salta_model_create(&m, &def) == SALTA_OK);
  CHECK(salta_loss_create(&loss, m, T, NT, &out, 1, data, NULL) == SALTA_OK);
  salta_sim_options_init(&o, 0, tf);
  o.rtol = 1e-10, o.atol = 1e-12;
  CHECK(salta_loss_set_options(loss, &o) == SALTA_OK);
  CHECK(salta_loss_set_free(loss, &dir, 1) == SALTA_OK);

  for (kind = SALTA_ROBUST_LINEAR; kind <= SALTA_ROBUST_CAUCHY; ++kind) {
    check_case(loss, kind, 0.05, 0, 0, T, data, tf, 1e-5);          /* robust alone */
    check_case(loss, kind, 0.05, 0.03, 0.04, T, data, tf, 1e-5);    /* with windows */
  }
  check_case(loss, SALTA_ROBUST_LINEAR, 1, 0.0, 0.06, T, data, tf, 1e-5);   /* a ramp alone */
  check_case(loss, SALTA_ROBUST_SOFT_L1, 0.05, 0.03, 0, T, data, tf, 1e-5);  /* a hard drop: no motion */

  /* bad settings name the value; windows over events at which no output jumps change nothing */
  CHECK(salta_loss_set_robust(loss, SALTA_ROBUST_LINEAR, 1) == SALTA_OK);
  CHECK(salta_loss_set_robust(loss, SALTA_ROBUST_HUBER, 0) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_loss_errmsg(loss), "scale must be a finite number > 0, got 0");
  CHECK(salta_loss_set_robust(loss, 7, 1) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_loss_errmsg(loss), "robust loss 7");
  CHECK(salta_loss_set_event_windows(loss, -1, 0, NULL) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_loss_errmsg(loss), "width and ramp must be finite numbers >= 0, got -1 and 0");
  {
    const unsigned char none_jump[] = {0};
    double v, v0;
    CHECK(salta_loss_set_event_windows(loss, 0, 0, NULL) == SALTA_OK);
    CHECK(salta_loss_eval(loss, pnom, NULL, &v0, NULL, NULL, NULL) == SALTA_OK);
    CHECK(salta_loss_set_event_windows(loss, 0.05, 0.05, none_jump) == SALTA_OK);   /* no output jumps */
    CHECK(salta_loss_eval(loss, pnom, NULL, &v, NULL, NULL, NULL) == SALTA_OK);
    CHECK(v == v0);
  }
  salta_loss_free(&loss);
  salta_model_free(&m);
  return check_summary("robust");
}
