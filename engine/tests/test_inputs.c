/*
** test_inputs.c -- a C host gets what the Lua front end used to add for
** input tables: every read checked inside its table before a run, and a
** given start state's piece indices set from its states.
**
** x' = -x, k' = 0, y = x: k is the piece index of a table on [0, 2] read
** at x (k = floor(x)); the argument t - p0 of another read, affine in t,
** must stay on [0, 2] over the whole run.
*/
#include <math.h>

#include "check.h"
#include "salta.h"

static int f_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = -x[0]; o[1] = 0; return 0;
}
static const int r0[] = {0};
static int fx_eval(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = -1; return 0;
}
static int none(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; (void)o; return 0;
}
static int args(double t, const double *x, const double *z, const double *p, double *o) {
  (void)z; o[0] = x[0]; o[1] = t - p[0]; return 0;
}
static int held(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[1] = floor(x[0]); return 0;
}
static const char *const xn[] = {"x", "k"}, *const pn[] = {"delay"};
static const char *const in_name[] = {"c", "u"}, *const in_arg[] = {"x", "t - delay"};
static const double xs[] = {1.5, 1}, pnom[] = {0.5}, lo[] = {0, 0}, hi[] = {2, 2};
static const unsigned char affine[] = {0, 1};

static const salta_model_def def = {
  .abi = SALTA_ABI_VERSION, .name = "reads", .hash = "0",
  .nx = 2, .np = 1,
  .x_names = xn, .p_names = pn, .x_start = xs, .p_nominal = pnom,
  .f = {.n = 2, .eval = f_eval, .d = {[SALTA_WRT_X] = {.nnz = 1, .row = r0, .col = r0, .eval = fx_eval}}},
  .g = {.eval = none}, .h = {.eval = none}, .e = {.eval = none},
  .ninputs = 2, .input_args = args, .input_lo = lo, .input_hi = hi, .input_affine = affine,
  .input_name = in_name, .input_arg = in_arg,
  .held = held,
};

int main(void) {
  salta_model *m = NULL;
  salta_sim *sim = NULL;
  salta_sim_options o;
  double p[] = {0.5}, x0[] = {0.7, 1}, times[] = {0.5};
  const double *x;
  CHECK(salta_model_create(&m, &def) == SALTA_OK);
  CHECK(salta_sim_create(&sim, m) == SALTA_OK);

  /* t - delay = -0.5 at t0 = 0: read before its table */
  salta_sim_options_init(&o, 0, 2);
  CHECK(salta_sim_run(sim, &o, p, NULL, times, 1) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_sim_errmsg(sim), "model 'reads': input 'u' is read at t - delay = -0.5 (at t = 0), outside "
                 "its table [0, 2]");
  /* on [0.5, 3]: beyond its end at tf */
  salta_sim_options_init(&o, 0.5, 3);
  CHECK(salta_sim_run(sim, &o, p, NULL, times, 1) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_sim_errmsg(sim), "read at t - delay = 2.5 (at t = 3)");
  /* a start state beyond the state's table */
  salta_sim_options_init(&o, 0.5, 2);
  x0[0] = 2.5;
  CHECK(salta_sim_run(sim, &o, p, x0, times, 1) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_sim_errmsg(sim), "input 'c' is read at x = 2.5 (at t = 0.5), outside its table [0, 2]");

  /* a given start state: its piece index follows its x (0 here, not the 1 given) */
  x0[0] = 0.7;
  CHECK(salta_sim_run(sim, &o, p, x0, times, 1) == SALTA_OK);
  CHECK(salta_sim_out(sim, 0, NULL, &x, NULL, NULL) == SALTA_OK);
  CHECK(x[1] == 0);
  CHECK_NEAR(x[0], 0.7, 1e-6);

  salta_sim_free(&sim);
  salta_model_free(&m);
  return check_summary("inputs");
}
