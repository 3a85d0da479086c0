/*
** test_model.c -- the model object on a hand-written definition: a
** pendulum-like DAE x' = v, v' = -k*x + z, 0 = z - c*x*x, one event.
*/
#include <stdlib.h>

#include "check.h"
#include "salta.h"

static int f_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; o[0] = x[1]; o[1] = -p[0] * x[0] + z[0]; return 0;
}
static const int fx_row[] = {1, 0}, fx_col[] = {0, 1};
static int fx_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; o[0] = -p[0]; o[1] = 1.0; return 0;
}
static const int fz_row[] = {1}, fz_col[] = {0};
static int fz_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = 1.0; return 0;
}
static const int fp_row[] = {1}, fp_col[] = {0};
static int fp_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = -x[0]; return 0;
}
static int g_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; o[0] = z[0] - p[1] * x[0] * x[0]; return 0;
}
static const int gx_row[] = {0}, gx_col[] = {0};
static int gx_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; o[0] = -2.0 * p[1] * x[0]; return 0;
}
static const int one_row[] = {0}, one_col[] = {0};
static int one_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = 1.0; return 0;
}
static const int gp_row[] = {0}, gp_col[] = {1};
static int gp_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = -x[0] * x[0]; return 0;
}
static int e_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = x[0]; return 0;
}
static int r_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = x[0]; o[1] = -0.5 * x[1]; return 1;  /* "fails" */
}

static const char *const xn[] = {"x", "v"}, *const zn[] = {"z"}, *const pn[] = {"k", "c"};
static const char *const en[] = {"cross"};
static const double xs[] = {1, 0}, zs[] = {0}, pnom[] = {2, 0.5};
static const int edir[] = {SALTA_DIR_DOWN};
static const salta_function_def resets[] = {{2, r_eval, {{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}}};

static salta_model_def def = {
  SALTA_ABI_VERSION, "toy", "0", 2, 1, 2, 2, 1, xn, zn, pn, xn, en, xs, zs, pnom, edir,
  {2, f_eval, {{2, fx_row, fx_col, fx_eval, 0}, {1, fz_row, fz_col, fz_eval, 0}, {1, fp_row, fp_col, fp_eval, 0}, {0, 0, 0, 0, 0}}},
  {1, g_eval, {{1, gx_row, gx_col, gx_eval, 0}, {1, one_row, one_col, one_eval, 0}, {1, gp_row, gp_col, gp_eval, 0}, {0, 0, 0, 0, 0}}},
  {2, f_eval, {{2, fx_row, fx_col, fx_eval, 0}, {1, fz_row, fz_col, fz_eval, 0}, {1, fp_row, fp_col, fp_eval, 0}, {0, 0, 0, 0, 0}}},
  {1, e_eval, {{1, one_row, one_col, one_eval, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}},
  resets, (const int[]){0, 1}, (const int[]){1}, NULL, NULL,
  {0, 0, {{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}}, NULL, NULL, 0, NULL, NULL, NULL, 0, NULL, NULL, NULL
};

int main(void) {
  salta_model *m = NULL;
  double x[] = {0.5, 2}, z[] = {3}, p[] = {2, 0.5}, out[4], dense[4];
  CHECK(salta_model_create(&m, &def) == SALTA_OK);
  CHECK(salta_model_rows(m, SALTA_FN_G) == 1);
  CHECK(salta_model_eval(m, SALTA_FN_F, 0, 0.0, x, z, p, out) == SALTA_OK);
  CHECK_NEAR(out[1], -2 * 0.5 + 3, 1e-15);
  CHECK(salta_model_jac_dense(m, SALTA_FN_F, 0, SALTA_WRT_X, 0.0, x, z, p, dense, 2) == SALTA_OK);
  CHECK(dense[0] == 0 && dense[1] == -2 && dense[2] == 1 && dense[3] == 0);
  CHECK(salta_model_eval(m, SALTA_FN_R, 0, 1.25, x, z, p, out) == SALTA_EKERNEL);
  CHECK_CONTAINS(salta_model_errmsg(m), "event 'cross' did not converge at t = 1.25");
  CHECK(salta_model_eval(m, SALTA_FN_R, 3, 0.0, x, z, p, out) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_model_errmsg(m), "no event 3");
  salta_model_free(&m);
  CHECK(m == NULL);
  salta_model_free(&m);  /* idempotent */

  /* a broken definition is refused with a message naming the element */
  def.f.d[0].row = fx_col;  /* rows 0,1 in col 0..1: still valid */
  def.e_direction = (const int[]){5};
  CHECK(salta_model_create(&m, &def) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_model_errmsg(m), "event 'cross' has direction 5");
  salta_model_free(&m);
  def.e_direction = edir;
  def.p_nominal = (const double[]){2, NAN};
  CHECK(salta_model_create(&m, &def) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_model_errmsg(m), "parameter 'c' has non-finite nominal value");
  salta_model_free(&m);
  def.abi = 99;
  CHECK(salta_model_create(&m, &def) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_model_errmsg(m), "ABI 99");
  salta_model_free(&m);
  return check_summary("model");
}
