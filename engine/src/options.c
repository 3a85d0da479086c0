/*
** options.c -- the simulation's options, declared once: each option's
** name (the salta_sim_options field it sets), type, default, range and
** help. salta_sim_options_init takes the defaults from here, the engine
** checks a run's options against the ranges here, and salta.core exports
** the table to Lua, whose option checker, help() and doc/options.md are
** made from it.
*/
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "options.h"

/* One option: what the API shows, and how it reads and writes its field. */
typedef struct option {
  salta_option_info info;
  void (*set)(salta_sim_options *o, double v);
  double (*get)(const salta_sim_options *o);
} option;

/* The accessors of field f, of C type T; OPTION(f, ...) declares the
** option named after f, so that a name and its field cannot drift. */
#define ACCESSORS(f, T)                                                          \
  static void set_##f(salta_sim_options *o, double v) { o->f = (T)v; }           \
  static double get_##f(const salta_sim_options *o) { return (double)o->f; }
#define OPTION(f, ...) {{.name = #f, __VA_ARGS__}, set_##f, get_##f}

ACCESSORS(t0, double)
ACCESSORS(tf, double)
ACCESSORS(rtol, double)
ACCESSORS(atol, double)
ACCESSORS(method, salta_method)
ACCESSORS(linear_solver, salta_linear_solver)
ACCESSORS(max_step, double)
ACCESSORS(init_step, double)
ACCESSORS(max_order, int)
/* max_steps has no upper bound: a count past what a long holds is as
** many steps as it holds */
static void set_max_steps(salta_sim_options *o, double v) { o->max_steps = v < (double)LONG_MAX ? (long)v : LONG_MAX; }
static double get_max_steps(const salta_sim_options *o) { return (double)o->max_steps; }
ACCESSORS(max_events, int)
ACCESSORS(zeno_count, int)
ACCESSORS(zeno_window, double)
ACCESSORS(record_steps, int)
ACCESSORS(terminal_output, int)
ACCESSORS(adjoint_rtol, double)
ACCESSORS(adjoint_atol, double)
ACCESSORS(quad_rtol, double)
ACCESSORS(quad_atol, double)
ACCESSORS(checkpoint_steps, int)

#define STR_(x) #x
#define STR(x) STR_(x)

static const char *const METHODS[] = {"bdf", "erk", "auto", NULL};         /* by salta_method */
static const char *const SOLVERS[] = {"dense", "klu", "auto", NULL};       /* by salta_linear_solver */

static const option OPTIONS[] = {
  OPTION(t0, .type = SALTA_OPTION_NUMBER, .lo = -INFINITY, .hi = INFINITY, .lo_open = 1, .hi_open = 1,
         .flags = SALTA_OPTION_INTERVAL, .help = "start time"),
  OPTION(tf, .type = SALTA_OPTION_NUMBER, .lo = -INFINITY, .hi = INFINITY, .lo_open = 1, .hi_open = 1,
         .flags = SALTA_OPTION_INTERVAL, .help = "end time"),
  OPTION(rtol, .type = SALTA_OPTION_NUMBER, .def = 1e-6, .lo = 1e-14, .hi = 1, .hi_open = 1,
         .help = "relative tolerance"),
  OPTION(atol, .type = SALTA_OPTION_NUMBER, .def = 1e-8, .lo = 0, .hi = INFINITY, .lo_open = 1, .hi_open = 1,
         .flags = SALTA_OPTION_PER_UNKNOWN, .help = "absolute tolerance"),
  OPTION(method, .type = SALTA_OPTION_CHOICE, .def = SALTA_METHOD_AUTO, .choices = METHODS,
         .help = "integrator: \"auto\" (ERK, BDF when it finds the model stiff), \"erk\" (Dormand-Prince 5(4)) "
                 "or \"bdf\" (IDAS)"),
  OPTION(linear_solver, .type = SALTA_OPTION_CHOICE, .def = SALTA_LS_AUTO, .choices = SOLVERS,
         .help = "the linear solver of BDF's Newton iterations: \"auto\" (KLU from " STR(SALTA_KLU_MIN_N)
                 " unknowns on), \"dense\" or \"klu\""),
  OPTION(max_step, .type = SALTA_OPTION_NUMBER, .lo = 0, .hi = INFINITY, .hi_open = 1, .def_text = "0 (none)",
         .help = "largest step"),
  OPTION(init_step, .type = SALTA_OPTION_NUMBER, .lo = 0, .hi = INFINITY, .hi_open = 1,
         .def_text = "0 (the integrator's choice)", .help = "first step"),
  OPTION(max_order, .type = SALTA_OPTION_INTEGER, .def = 5, .lo = 1, .hi = 5, .help = "BDF's highest order"),
  OPTION(max_steps, .type = SALTA_OPTION_INTEGER, .def = 1000000, .lo = 1, .hi = INFINITY, .hi_open = 1,
         .help = "internal steps in all before the run is refused"),
  OPTION(max_events, .type = SALTA_OPTION_INTEGER, .def = 10000, .lo = 0, .hi = INT_MAX,
         .help = "events before the run is refused"),
  OPTION(zeno_count, .type = SALTA_OPTION_INTEGER, .def = 100, .lo = 0, .hi = INT_MAX,
         .help = "this many event instants (groups) within zeno_window are a Zeno error (0: off)"),
  OPTION(zeno_window, .type = SALTA_OPTION_NUMBER, .def = 1e-9, .lo = 0, .hi = INFINITY, .hi_open = 1,
         .flags = SALTA_OPTION_SPAN, .def_text = "1e-9 (tf - t0)", .help = "see zeno_count"),
  OPTION(record_steps, .type = SALTA_OPTION_BOOLEAN, .hi = 1, .flags = SALTA_OPTION_SIM_ONLY,
         .help = "keep every internal step (t, x, z)"),
  OPTION(terminal_output, .type = SALTA_OPTION_BOOLEAN, .hi = 1, .flags = SALTA_OPTION_SIM_ONLY,
         .def_text = "false (model:simulate without times: true)",
         .help = "a run a terminal event ends gets one more output at its time, the state the event left"),
  OPTION(adjoint_rtol, .type = SALTA_OPTION_NUMBER, .lo = 0, .hi = 1, .hi_open = 1,
         .def_text = "0 (rtol; after a run by ERK, rtol / 10)", .flags = SALTA_OPTION_LOSS_ONLY,
         .help = "continuous adjoint: relative tolerance of its backward problem (0: rtol after a run by BDF, "
                 "rtol / 10 after a run by ERK)"),
  OPTION(adjoint_atol, .type = SALTA_OPTION_NUMBER, .lo = 0, .hi = INFINITY, .hi_open = 1,
         .def_text = "0 (atol; after a run by ERK, atol / 10)", .flags = SALTA_OPTION_LOSS_ONLY,
         .help = "continuous adjoint: absolute tolerance of its backward problem, whose solution is scaled to a "
                 "largest entry of 1 at each restart (0: atol after a run by BDF, atol / 10 after a run by ERK)"),
  OPTION(quad_rtol, .type = SALTA_OPTION_NUMBER, .lo = 0, .hi = 1, .hi_open = 1, .def_text = "0 (adjoint_rtol)",
         .flags = SALTA_OPTION_LOSS_ONLY,
         .help = "continuous adjoint: relative tolerance of the gradient's quadratures (0: adjoint_rtol)"),
  OPTION(quad_atol, .type = SALTA_OPTION_NUMBER, .lo = 0, .hi = INFINITY, .hi_open = 1, .def_text = "0 (adjoint_atol)",
         .flags = SALTA_OPTION_LOSS_ONLY,
         .help = "continuous adjoint: absolute tolerance of the gradient's quadratures, on the scaled adjoint "
                 "(0: adjoint_atol)"),
  OPTION(checkpoint_steps, .type = SALTA_OPTION_INTEGER, .def = 100, .lo = 1, .hi = INT_MAX,
         .flags = SALTA_OPTION_LOSS_ONLY,
         .help = "continuous adjoint: the re-run's steps between checkpoints (its memory holds about this many "
                 "steps besides one state per checkpoint)"),
};

#define NOPTIONS ((int)(sizeof OPTIONS / sizeof OPTIONS[0]))

int salta_sim_option_count(void) { return NOPTIONS; }

const salta_option_info *salta_sim_option_info(int k) {
  return k >= 0 && k < NOPTIONS ? &OPTIONS[k].info : NULL;
}

static const option *find(const char *name) {
  int k;
  for (k = 0; name && k < NOPTIONS; ++k)
    if (strcmp(OPTIONS[k].info.name, name) == 0) return &OPTIONS[k];
  return NULL;
}

void salta_sim_options_init(salta_sim_options *o, double t0, double tf) {
  int k;
  memset(o, 0, sizeof *o);
  o->t0 = t0;
  o->tf = tf;
  for (k = 0; k < NOPTIONS; ++k) {
    const salta_option_info *i = &OPTIONS[k].info;
    if (i->flags & SALTA_OPTION_INTERVAL) continue;
    OPTIONS[k].set(o, i->flags & SALTA_OPTION_SPAN ? i->def * (tf - t0) : i->def);
  }
}

/* v as short as it reads back exactly (-2147483648, not -2.14748e+09). */
static void number_text(double v, char *buf, size_t n) {
  int digits;
  for (digits = 6; digits < 17; ++digits) {
    snprintf(buf, n, "%.*g", digits, v);
    if (strtod(buf, NULL) == v) return;
  }
  snprintf(buf, n, "%.17g", v);
}

/* What an option's values must be, in words: "an integer from 1 to 5",
** ">= 1e-14 and < 1", "one of \"bdf\", \"erk\", \"auto\"". */
static void must_be(const salta_option_info *i, char *buf, size_t n) {
  char lo[32], hi[32];
  size_t len = 0;
  int k;
  if (i->type == SALTA_OPTION_BOOLEAN) { snprintf(buf, n, "0 or 1"); return; }
  if (i->type == SALTA_OPTION_CHOICE) {
    len = (size_t)snprintf(buf, n, "one of");
    for (k = 0; i->choices[k] && len < n; ++k)
      len += (size_t)snprintf(buf + len, n - len, "%s \"%s\"", k ? "," : "", i->choices[k]);
    return;
  }
  number_text(i->lo, lo, sizeof lo);
  number_text(i->hi, hi, sizeof hi);
  if (i->type == SALTA_OPTION_INTEGER && isfinite(i->lo) && isfinite(i->hi))
    snprintf(buf, n, "an integer from %s to %s", lo, hi);
  else if (isfinite(i->lo) && isfinite(i->hi))
    snprintf(buf, n, "%s %s and %s %s", i->lo_open ? ">" : ">=", lo, i->hi_open ? "<" : "<=", hi);
  else if (isfinite(i->lo))
    snprintf(buf, n, "%s %s", i->lo_open ? ">" : ">=", lo);
  else if (isfinite(i->hi))
    snprintf(buf, n, "%s %s", i->hi_open ? "<" : "<=", hi);
  else
    snprintf(buf, n, "finite");
}

/* Whether v is a value of option i. */
static int valid(const salta_option_info *i, double v) {
  if (isnan(v)) return 0;
  if (i->type == SALTA_OPTION_CHOICE) {
    int k = 0;
    while (i->choices[k]) ++k;
    return v >= 0 && v < k && v == floor(v);
  }
  if (i->type != SALTA_OPTION_NUMBER && v != floor(v)) return 0;
  if (i->lo_open ? !(v > i->lo) : !(v >= i->lo)) return 0;
  if (i->hi_open ? !(v < i->hi) : !(v <= i->hi)) return 0;
  return 1;
}

/* "option 'max_order' must be an integer from 1 to 5, got 7" into err. */
static void refusal(const salta_option_info *i, double v, char *err, size_t n) {
  char what[128], got[32];
  must_be(i, what, sizeof what);
  number_text(v, got, sizeof got);
  snprintf(err, n, "option '%s' must be %s, got %s", i->name, what, got);
}

int salta_sim_options_set(salta_sim_options *o, const char *name, double value, char *err, size_t n) {
  const option *opt = find(name);
  if (!o || !opt) {
    if (err && n) snprintf(err, n, "no option '%s'", name ? name : "(null)");
    return SALTA_EINPUT;
  }
  if (!valid(&opt->info, value)) {
    if (err && n) refusal(&opt->info, value, err, n);
    return SALTA_EINPUT;
  }
  opt->set(o, value);
  return SALTA_OK;
}

int salta_sim_options_get(const salta_sim_options *o, const char *name, double *value) {
  const option *opt = find(name);
  if (!o || !opt || !value) return SALTA_EINPUT;
  *value = opt->get(o);
  return SALTA_OK;
}

int salta__options_check(const salta_sim_options *o, const char *model_name, char *err) {
  char why[256];
  int k;
  for (k = 0; k < NOPTIONS; ++k) {
    double v = OPTIONS[k].get(o);
    if (!valid(&OPTIONS[k].info, v)) {
      refusal(&OPTIONS[k].info, v, why, sizeof why);
      return salta__fail(err, SALTA_EINPUT, "model '%s': %s", model_name, why);
    }
  }
  return SALTA_OK;
}
