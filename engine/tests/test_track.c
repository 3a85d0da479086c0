/*
** test_track.c -- the structural checks on a synthetic model: x' = 1 and
** one algebraic a with g = a^3 - a - x (three roots for |x| < 2/sqrt(27),
** folds where 3 a^2 = 1), a as a Newton block; and a pivot, a itself,
** standing for a dummy derivative's. The integrator is played by hand: each
** accepted point is given, on the branch or off it.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "errors.h"
#include "track.h"

static int f_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p;
  o[0] = 1;
  return 0;
}
static int g_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)p;
  o[0] = z[0] * z[0] * z[0] - z[0] - x[0];
  return 0;
}
static const int r0[] = {0}, c0[] = {0};
static int gx_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p;
  o[0] = -1;
  return 0;
}
static int gz_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)p;
  o[0] = 3 * z[0] * z[0] - 1;
  return 0;
}
static int none(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; (void)o;
  return 0;
}
static int pivots(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)p;
  o[0] = z[0], o[1] = 1;
  return 0;
}

#define NO_JAC {.indep = 15}   /* an empty Jacobian: its values depend on nothing */
static const char *const xn[] = {"x"}, *const zn[] = {"a"}, *const dummy[] = {"a"}, *const eq[] = {"0 = a"};
static const double xs[] = {0}, zs[] = {0};
static const int z_block[] = {0}, block_stage[] = {0};
static salta_model_def def = {
  .abi = SALTA_ABI_VERSION, .name = "cubic", .hash = "0",
  .nx = 1, .nz = 1,
  .x_names = xn, .z_names = zn, .x_start = xs, .z_start = zs,
  .f = {.n = 1, .eval = f_eval, .d = {NO_JAC, NO_JAC, NO_JAC, NO_JAC}},
  .g = {.n = 1, .eval = g_eval,
        .d = {[SALTA_WRT_X] = {.nnz = 1, .row = r0, .col = c0, .eval = gx_eval},
              [SALTA_WRT_Z] = {.nnz = 1, .row = r0, .col = c0, .eval = gz_eval}, NO_JAC, NO_JAC}},
  .h = {.eval = none, .d = {NO_JAC, NO_JAC, NO_JAC, NO_JAC}},
  .e = {.eval = none, .d = {NO_JAC, NO_JAC, NO_JAC, NO_JAC}},
  .start = {.d = {NO_JAC, NO_JAC, NO_JAC, NO_JAC}},
  .nblocks = 1, .z_block = z_block, .block_stage = block_stage,
};

/* The root of a^3 - a = x by Newton from a0. */
static double root(double x, double a0) {
  int it;
  for (it = 0; it < 100; ++it) a0 -= (a0 * a0 * a0 - a0 - x) / (3 * a0 * a0 - 1);
  return a0;
}

int main(void) {
  static char err[SALTA_ERRMSG_SIZE];
  const char *msg = err;
  salta__dae dae;
  salta__track k;
  salta_sim_options o;
  double w[2], z, p = 0;
  salta_sim_options_init(&o, 0, 1);
  CHECK(salta__dae_init(&dae, &def, err) == SALTA_OK);
  salta__dae_set_params(&dae, &p);
  CHECK(salta__track_init(&k, &dae) == 0);

  /* on the middle branch (a = -x + ...), then a jump to the upper root */
  w[0] = 0, w[1] = 0;
  CHECK(salta__track_restart(&k, &o, 0, w) == SALTA_OK);
  w[0] = 0.1, w[1] = root(0.1, 0);
  CHECK(salta__track_accept(&k, 0.1, w, 1) == SALTA_OK);
  w[0] = 0.2, w[1] = root(0.2, 2);
  CHECK(w[1] > 1);
  CHECK(salta__track_accept(&k, 0.2, w, 1) == SALTA_ESOLVER);
  CHECK_CONTAINS(msg, "model 'cubic': the algebraic block solving 'a' left its branch between t = 0.10000000000000001 "
                      "and 0.20000000000000001: the integrator's solution has 'a' = 1.088");
  CHECK_CONTAINS(msg, "but the branch the run followed continues to 'a' = -0.209");
  CHECK_CONTAINS(msg, "jump to another root");
  /* a reset's re-consistency may jump: a restart is not compared */
  CHECK(salta__track_restart(&k, &o, 0.2, w) == SALTA_OK);
  w[0] = 0.3, w[1] = root(0.3, 2);
  CHECK(salta__track_accept(&k, 0.3, w, 1) == SALTA_OK);

  /* past the fold at x = 2 / sqrt(27) = 0.3849: no root continues the
  ** middle branch; Newton from it would land on the lower one */
  w[0] = 0.3, w[1] = root(0.3, 0);
  CHECK(salta__track_restart(&k, &o, 0.3, w) == SALTA_OK);
  w[0] = 0.45, w[1] = root(0.45, -2);
  CHECK(salta__track_accept(&k, 0.45, w, 1) == SALTA_EALGEBRAIC);   /* the algebraic equations fold */
  CHECK_CONTAINS(msg, "reach a fold (a turning point) near t = 0.38");
  CHECK_CONTAINS(msg, "(on the way from t = 0.29999999999999999): the block solving 'a' = -0.577");
  /* the same for a solve (ERK's stages): Newton from the middle branch
  ** converges to the lower root, the branch ends at the fold */
  w[0] = 0.3, w[1] = root(0.3, 0), z = w[1];
  CHECK(salta__track_restart(&k, &o, 0.3, w) == SALTA_OK);
  CHECK(salta__track_solve(&k, 0.45, (double[]){0.45}, &z) == SALTA__EBRANCH);
  CHECK_CONTAINS(msg, "reach a fold (a turning point) near t = 0.38");
  z = w[1];
  CHECK(salta__track_solve(&k, 0.35, (double[]){0.35}, &z) == SALTA_OK);
  CHECK_NEAR(z, root(0.35, 0), 1e-12);

  /* an integrator that failed after x = 0.38 (x' = 1): the fold ahead */
  w[0] = 0.38, w[1] = root(0.38, 0);
  CHECK(salta__track_restart(&k, &o, 0.38, w) == SALTA_OK);
  CHECK(salta__track_explain(&k, 1e-4, " (IDAS: IDA_CONV_FAIL)") == SALTA_EALGEBRAIC);
  CHECK_CONTAINS(msg, "reach a fold (a turning point) near t = 0.3849");
  CHECK_CONTAINS(msg, "(on the way from t = 0.38)");
  CHECK_CONTAINS(msg, "on this branch: check the equations, the parameters and the range the states reach (IDAS: "
                      "IDA_CONV_FAIL)");
  /* ... and none ahead of x = -0.3 within the probes (up to 1024 h) */
  w[0] = -0.3, w[1] = root(-0.3, 0);
  CHECK(salta__track_restart(&k, &o, -0.3, w) == SALTA_OK);
  CHECK(salta__track_explain(&k, 1e-4, "") == SALTA_OK);

  /* a as a dummy's pivot: vanishing at a point, or changing sign between two */
  def.npivots = 1, def.pivots = pivots, def.pivot_dummy = dummy, def.pivot_eq = eq;
  salta__track_free(&k);
  CHECK(salta__track_init(&k, &dae) == 0);
  w[0] = -1e-4, w[1] = root(-1e-4, 0);
  CHECK(salta__track_restart(&k, &o, 0, w) == SALTA_ESOLVER);
  CHECK_CONTAINS(msg, "index reduction's dummy derivative 'a' (of the constraint 0 = a) fails at t = 0: its pivot");
  w[0] = -0.1, w[1] = root(-0.1, 0);
  CHECK(salta__track_restart(&k, &o, 0, w) == SALTA_OK);
  w[0] = 0.1, w[1] = root(0.1, 0);
  CHECK(salta__track_accept(&k, 0.2, w, 0) == SALTA_ESOLVER);
  CHECK_CONTAINS(msg, "fails between t = 0 and 0.20000000000000001");
  CHECK_CONTAINS(msg, "changed sign from 0.1");

  salta__track_free(&k);
  salta__dae_free(&dae);
  return check_summary("track");
}
