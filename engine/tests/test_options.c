/*
** test_options.c -- the declared simulation options: each names its own
** field, salta_sim_options_init fills its default, set and get agree,
** values outside its range are refused with a message naming it, and the
** choices' names stand at their enum values.
*/
#include <stdlib.h>

#include "check.h"
#include "salta.h"

static void each_default(void) {
  salta_sim_options o;
  int k;
  salta_sim_options_init(&o, 2.0, 12.0);
  CHECK(o.atol_vec == NULL);
  for (k = 0; k < salta_sim_option_count(); ++k) {
    const salta_option_info *i = salta_sim_option_info(k);
    double v = -1, want = i->def;
    CHECK(salta_sim_options_get(&o, i->name, &v) == SALTA_OK);
    if (i->flags & SALTA_OPTION_INTERVAL) want = i->name[1] == '0' ? 2.0 : 12.0;
    if (i->flags & SALTA_OPTION_SPAN) want = i->def * 10.0;
    CHECK_NEAR(v, want, 0);
    CHECK(i->help && i->help[0]);
  }
  CHECK(salta_sim_option_info(-1) == NULL && salta_sim_option_info(salta_sim_option_count()) == NULL);
}

/* The fields as C sees them, after setting through the declarations. */
static void fields(void) {
  salta_sim_options o;
  salta_sim_options_init(&o, 0, 1);
  CHECK(salta_sim_options_set(&o, "rtol", 1e-9, NULL, 0) == SALTA_OK && o.rtol == 1e-9);
  CHECK(salta_sim_options_set(&o, "max_steps", 12345, NULL, 0) == SALTA_OK && o.max_steps == 12345);
  CHECK(salta_sim_options_set(&o, "max_order", 2, NULL, 0) == SALTA_OK && o.max_order == 2);
  CHECK(salta_sim_options_set(&o, "record_steps", 1, NULL, 0) == SALTA_OK && o.record_steps == 1);
  CHECK(salta_sim_options_set(&o, "method", SALTA_METHOD_ERK, NULL, 0) == SALTA_OK && o.method == SALTA_METHOD_ERK);
  CHECK(salta_sim_options_set(&o, "linear_solver", SALTA_LS_KLU, NULL, 0) == SALTA_OK
        && o.linear_solver == SALTA_LS_KLU);
  CHECK(salta_sim_options_set(&o, "zeno_window", 0.5, NULL, 0) == SALTA_OK && o.zeno_window == 0.5);
}

static void refusals(void) {
  salta_sim_options o;
  char buf[200], *err = buf;
  salta_sim_options_init(&o, 0, 1);
  CHECK(salta_sim_options_set(&o, "max_order", 7, err, sizeof buf) == SALTA_EINPUT);
  CHECK_CONTAINS(err, "option 'max_order' must be an integer from 1 to 5, got 7");
  CHECK(o.max_order == 5);
  CHECK(salta_sim_options_set(&o, "max_events", 2.5, err, sizeof buf) == SALTA_EINPUT);
  CHECK_CONTAINS(err, "must be an integer from 0 to 2147483647, got 2.5");
  CHECK(salta_sim_options_set(&o, "rtol", 1e-300, err, sizeof buf) == SALTA_EINPUT);
  CHECK_CONTAINS(err, "option 'rtol' must be >= 1e-14 and < 1, got 1e-300");
  CHECK(salta_sim_options_set(&o, "atol", 0, err, sizeof buf) == SALTA_EINPUT);
  CHECK_CONTAINS(err, "option 'atol' must be > 0, got 0");
  CHECK(salta_sim_options_set(&o, "max_step", NAN, err, sizeof buf) == SALTA_EINPUT);
  CHECK(salta_sim_options_set(&o, "max_step", INFINITY, err, sizeof buf) == SALTA_EINPUT);
  CHECK(salta_sim_options_set(&o, "method", 3, err, sizeof buf) == SALTA_EINPUT);
  CHECK_CONTAINS(err, "option 'method' must be one of \"bdf\", \"erk\", \"auto\", got 3");
  CHECK(salta_sim_options_set(&o, "atol_vec", 1, err, sizeof buf) == SALTA_EINPUT);
  CHECK_CONTAINS(err, "no option 'atol_vec'");
  CHECK(salta_sim_options_set(&o, "rtol", 1, NULL, 0) == SALTA_EINPUT);   /* no message asked */
}

static void choices(void) {
  int k;
  for (k = 0; k < salta_sim_option_count(); ++k) {
    const salta_option_info *i = salta_sim_option_info(k);
    if (!strcmp(i->name, "method")) {
      CHECK(!strcmp(i->choices[SALTA_METHOD_BDF], "bdf") && !strcmp(i->choices[SALTA_METHOD_ERK], "erk")
            && !strcmp(i->choices[SALTA_METHOD_AUTO], "auto") && i->choices[3] == NULL);
    }
    if (!strcmp(i->name, "linear_solver")) {
      CHECK(!strcmp(i->choices[SALTA_LS_DENSE], "dense") && !strcmp(i->choices[SALTA_LS_KLU], "klu")
            && !strcmp(i->choices[SALTA_LS_AUTO], "auto") && i->choices[3] == NULL);
    }
  }
}

int main(void) {
  each_default();
  fields();
  refusals();
  choices();
  return check_summary("options");
}
