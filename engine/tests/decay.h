/*
** decay.h -- a hand-written model for the C tests: x' = -k x, y = x, from
** x = 1 with k = 0.5 (its def by field name, kernels and Jacobians).
*/
#ifndef SALTA_TEST_DECAY_H
#define SALTA_TEST_DECAY_H

#include "salta.h"

static int decay_f(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; o[0] = -p[0] * x[0]; return 0;
}
static int decay_h(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = x[0]; return 0;
}
static int decay_fx(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; o[0] = -p[0]; return 0;
}
static int decay_fp(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)z; (void)p; o[0] = -x[0]; return 0;
}
static int decay_one(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; o[0] = 1; return 0;
}
static int decay_none(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; (void)o; return 0;
}
static const int decay_zero[] = {0};
static const char *const decay_x[] = {"x"}, *const decay_p[] = {"k"};
static const double decay_x0[] = {1}, decay_k[] = {0.5};

static const salta_model_def decay_def = {
  .abi = SALTA_ABI_VERSION, .name = "decay", .hash = "0",
  .nx = 1, .np = 1, .ny = 1,
  .x_names = decay_x, .p_names = decay_p, .y_names = decay_x, .x_start = decay_x0, .p_nominal = decay_k,
  .f = {.n = 1, .eval = decay_f,
        .d = {[SALTA_WRT_X] = {.nnz = 1, .row = decay_zero, .col = decay_zero, .eval = decay_fx},
              [SALTA_WRT_P] = {.nnz = 1, .row = decay_zero, .col = decay_zero, .eval = decay_fp}}},
  .g = {.eval = decay_none},
  .h = {.n = 1, .eval = decay_h, .d = {[SALTA_WRT_X] = {.nnz = 1, .row = decay_zero, .col = decay_zero, .eval = decay_one}}},
  .e = {.eval = decay_none},
};

#endif
