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

static void dirs_none(double t, const double *x, const double *z, const double *p, const double *V, int ldv, int ns,
                      double *R, int ldr) {
  (void)t; (void)x; (void)z; (void)p; (void)V; (void)ldv; (void)ns; (void)R; (void)ldr;
}
static void dirs_p_none(double t, const double *x, const double *z, const double *p, const int *col, int ns, double *R,
                        int ldr) {
  (void)t; (void)x; (void)z; (void)p; (void)col; (void)ns; (void)R; (void)ldr;
}

static const char *const xn[] = {"x", "v"}, *const zn[] = {"z"}, *const pn[] = {"k", "c"};
static const char *const en[] = {"cross"};
static const double xs[] = {1, 0}, zs[] = {0}, pnom[] = {2, 0.5};
static const int edir[] = {SALTA_DIR_DOWN};
static const salta_function_def resets[] = {{.n = 2, .eval = r_eval}};

#define F_DEF {.n = 2, .eval = f_eval, \
  .d = {[SALTA_WRT_X] = {.nnz = 2, .row = fx_row, .col = fx_col, .eval = fx_eval}, \
        [SALTA_WRT_Z] = {.nnz = 1, .row = fz_row, .col = fz_col, .eval = fz_eval}, \
        [SALTA_WRT_P] = {.nnz = 1, .row = fp_row, .col = fp_col, .eval = fp_eval}}}
static salta_model_def def = {
  .abi = SALTA_ABI_VERSION, .name = "toy", .hash = "0",
  .nx = 2, .nz = 1, .np = 2, .ny = 2, .ne = 1,
  .x_names = xn, .z_names = zn, .p_names = pn, .y_names = xn, .e_names = en,
  .x_start = xs, .z_start = zs, .p_nominal = pnom, .e_direction = edir,
  .f = F_DEF,
  .g = {.n = 1, .eval = g_eval,
        .d = {[SALTA_WRT_X] = {.nnz = 1, .row = gx_row, .col = gx_col, .eval = gx_eval},
              [SALTA_WRT_Z] = {.nnz = 1, .row = one_row, .col = one_col, .eval = one_eval},
              [SALTA_WRT_P] = {.nnz = 1, .row = gp_row, .col = gp_col, .eval = gp_eval}}},
  .h = F_DEF,   /* y = f */
  .e = {.n = 1, .eval = e_eval, .d = {[SALTA_WRT_X] = {.nnz = 1, .row = one_row, .col = one_col, .eval = one_eval}}},
  .r = resets, .r_assign_ptr = (const int[]){0, 1}, .r_assign_rows = (const int[]){1},
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
  def.p_nominal = pnom;
  def.reduced_dx = dirs_none;   /* without reduced_dp */
  CHECK(salta_model_create(&m, &def) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_model_errmsg(m), "one of the reduced right-hand side's kernels without the other");
  salta_model_free(&m);
  def.reduced_dx = NULL, def.reduced_dp = dirs_p_none;   /* the other way round */
  CHECK(salta_model_create(&m, &def) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_model_errmsg(m), "one of the reduced right-hand side's kernels without the other");
  salta_model_free(&m);
  def.reduced_dx = dirs_none;   /* both, but z is no assignment's */
  CHECK(salta_model_create(&m, &def) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_model_errmsg(m), "z_assign does not compute every algebraic");
  salta_model_free(&m);
  def.reduced_dx = NULL, def.reduced_dp = NULL;
  def.abi = 99;
  CHECK(salta_model_create(&m, &def) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_model_errmsg(m), "ABI 99");
  salta_model_free(&m);
  return check_summary("model");
}
