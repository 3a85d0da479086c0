/*
** test_swap.c -- a live model takes new kernels of its own source
** (salta_model_swap_def): simulations and losses made before the swap run
** on the new kernels from their next run on, with the same results; other
** kernels are refused; and with threads simulating while another thread
** swaps back and forth, every run uses one set of kernels from its start
** to its end.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "check.h"
#include "salta.h"

/* Calls of each set's kernels, per thread: which kernels a run used. */
static _Thread_local long calls[2];

/* x' = -k x, y = x: the same kernels twice (set 0 and set 1), counting. */
#define KERNELS(s)                                                                                           \
  static int f##s(double t, const double *x, const double *z, const double *p, double *o) {                \
    (void)t, (void)z, ++calls[s], o[0] = -p[0] * x[0];                                                    \
    return 0;                                                                                                \
  }                                                                                                          \
  static int fx##s(double t, const double *x, const double *z, const double *p, double *o) {               \
    (void)t, (void)x, (void)z, ++calls[s], o[0] = -p[0];                                                  \
    return 0;                                                                                                \
  }                                                                                                          \
  static int fp##s(double t, const double *x, const double *z, const double *p, double *o) {               \
    (void)t, (void)z, (void)p, ++calls[s], o[0] = -x[0];                                                  \
    return 0;                                                                                                \
  }                                                                                                          \
  static int h##s(double t, const double *x, const double *z, const double *p, double *o) {                \
    (void)t, (void)z, (void)p, ++calls[s], o[0] = x[0];                                                   \
    return 0;                                                                                                \
  }                                                                                                          \
  static int hx##s(double t, const double *x, const double *z, const double *p, double *o) {               \
    (void)t, (void)x, (void)z, (void)p, ++calls[s], o[0] = 1;                                             \
    return 0;                                                                                                \
  }
KERNELS(0)
KERNELS(1)

static int none(double t, const double *x, const double *z, const double *p, double *o) {
  (void)t; (void)x; (void)z; (void)p; (void)o; return 0;
}
static const int zero[] = {0};
static const char *const xn[] = {"x"}, *const pn[] = {"k"};
static const double xs[] = {1}, pnom[] = {0.5};

#define DEF(s, key)                                                                                          \
  {.abi = SALTA_ABI_VERSION, .name = "decay", .hash = key,  .nx = 1, .np = 1, .ny = 1,                      \
   .x_names = xn, .p_names = pn, .y_names = xn, .x_start = xs, .p_nominal = pnom,                            \
   .f = {.n = 1, .eval = f##s,                                                                               \
         .d = {[SALTA_WRT_X] = {.nnz = 1, .row = zero, .col = zero, .eval = fx##s},                          \
               [SALTA_WRT_P] = {.nnz = 1, .row = zero, .col = zero, .eval = fp##s}}},                        \
   .g = {.n = 0, .eval = none},                                                                              \
   .h = {.n = 1, .eval = h##s, .d = {[SALTA_WRT_X] = {.nnz = 1, .row = zero, .col = zero, .eval = hx##s}}},  \
   .e = {.n = 0, .eval = none}}
static const salta_model_def defs[2] = {DEF(0, "decay 1"), DEF(1, "decay 1")};
static const salta_model_def other = DEF(1, "decay 2");

/* y(2) = exp(-2 k) by a simulation; which kernels it used in *used (0, 1,
** or -1 for both or none). */
static int simulate(salta_sim *sim, double *y2, int *used) {
  salta_sim_options o;
  double times[] = {2}, p[] = {0.5}, t;
  const double *y;
  int st;
  salta_sim_options_init(&o, 0, 2);
  o.rtol = 1e-10;
  o.atol = 1e-12;
  calls[0] = calls[1] = 0;
  st = salta_sim_run(sim, &o, p, NULL, times, 1);
  if (!st) st = salta_sim_out(sim, 0, &t, NULL, NULL, &y);
  if (!st) *y2 = y[0];
  *used = calls[0] > 0 && calls[1] == 0 ? 0 : calls[1] > 0 && calls[0] == 0 ? 1 : -1;
  return st;
}

#define ROUNDS 300      /* runs per thread, at least */
#define MAX_ROUNDS 50000 /* at most, waiting for runs on both sets */
static salta_model *shared;
static pthread_barrier_t start;
static atomic_int finished;
typedef struct job { int runs[2], mixed, wrong; } job;

/* Simulations one after another, each on one set of kernels, until this
** thread has seen both sets. */
static void *simulate_often(void *arg) {
  job *j = arg;
  salta_sim *sim = NULL;
  int r, used;
  double y;
  if (salta_sim_create(&sim, shared)) ++j->wrong;
  pthread_barrier_wait(&start);
  for (r = 0; sim && r < MAX_ROUNDS && (r < ROUNDS || !j->runs[0] || !j->runs[1]); ++r) {
    if (simulate(sim, &y, &used) || fabs(y - exp(-1.0)) > 1e-8) ++j->wrong;
    if (used < 0) ++j->mixed;
    else ++j->runs[used];
  }
  salta_sim_free(&sim);
  atomic_fetch_add(&finished, 1);
  return NULL;
}

int main(void) {
  salta_model *m = NULL;
  salta_sim *sim = NULL;
  salta_loss *loss = NULL;
  double y_before, y_after, times[] = {1, 2}, data[] = {0.6, 0.37}, p[] = {0.5}, v0, v1, g0, g1;
  int outputs[] = {0}, dir = 0, used, k;
  CHECK(salta_model_create(&m, &defs[0]) == SALTA_OK);
  CHECK(salta_sim_create(&sim, m) == SALTA_OK);
  CHECK(salta_loss_create(&loss, m, times, 2, outputs, 1, data, NULL) == SALTA_OK);
  CHECK(salta_loss_set_free(loss, &dir, 1) == SALTA_OK);
  CHECK(simulate(sim, &y_before, &used) == SALTA_OK && used == 0);
  calls[0] = calls[1] = 0;
  CHECK(salta_loss_eval(loss, p, NULL, &v0, &g0, NULL, NULL) == SALTA_OK);
  CHECK(calls[0] > 0 && calls[1] == 0);

  /* kernels of another source are refused, with the reason */
  CHECK(salta_model_swap_def(m, &other) == SALTA_EINPUT);
  CHECK_CONTAINS(salta_model_errmsg(m), "the new kernels are not the model's");
  CHECK(salta_model_def_get(m) == &defs[0]);

  /* the simulation and the loss made before the swap run on the new ones */
  CHECK(salta_model_swap_def(m, &defs[1]) == SALTA_OK);
  CHECK(salta_model_def_get(m) == &defs[1]);
  CHECK(simulate(sim, &y_after, &used) == SALTA_OK && used == 1);
  CHECK(y_after == y_before);
  calls[0] = calls[1] = 0;
  CHECK(salta_loss_eval(loss, p, NULL, &v1, &g1, NULL, NULL) == SALTA_OK);
  CHECK(calls[1] > 0 && calls[0] == 0);
  CHECK(v1 == v0 && g1 == g0);
  calls[0] = calls[1] = 0;
  CHECK(salta_loss_eval_adjoint(loss, p, NULL, 0, 1, &v1, &g1) == SALTA_OK);
  CHECK(calls[1] > 0 && calls[0] == 0);
  CHECK_NEAR(g1, g0, 1e-3);
  salta_loss_free(&loss);
  salta_sim_free(&sim);
  salta_model_free(&m);

  /* threads simulate while this one swaps back and forth: every run uses
  ** one set, and both sets are used */
  {
    pthread_t th[3];
    job jobs[3] = {{{0, 0}, 0, 0}};
    int swaps = 0;
    CHECK(salta_model_create(&shared, &defs[0]) == SALTA_OK);
    pthread_barrier_init(&start, NULL, 4);
    for (k = 0; k < 3; ++k) CHECK(pthread_create(&th[k], NULL, simulate_often, &jobs[k]) == 0);
    pthread_barrier_wait(&start);
    while (atomic_load(&finished) < 3)
      if (salta_model_swap_def(shared, &defs[++swaps % 2]) != SALTA_OK) break;
    for (k = 0; k < 3; ++k) {
      pthread_join(th[k], NULL);
      CHECK(jobs[k].wrong == 0);
      CHECK(jobs[k].mixed == 0);
      CHECK(jobs[k].runs[0] > 0 && jobs[k].runs[1] > 0);
    }
    salta_model_free(&shared);
    pthread_barrier_destroy(&start);
  }
  return check_summary("swap");
}
