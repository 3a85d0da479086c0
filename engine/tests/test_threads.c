/*
** test_threads.c -- one model shared by threads: evaluations write
** nothing of the model, and each thread reads the message of its own last
** failed evaluation while the others fail with theirs; simulations of the
** shared model run at once in several threads.
*/
#include <pthread.h>
#include <stdio.h>

#include "check.h"
#include "salta.h"

#include "decay.h"

#define ROUNDS 2000
static pthread_barrier_t start;   /* every thread starts at once */

typedef struct job { salta_model *model; int id, wrong; double y; } job;

/* Fails an evaluation with a message of its own (no event 1000 + id),
** evaluates f a while (the other threads fail meanwhile), and checks that
** the message it reads is still its own, round after round. */
static void *fail_often(void *arg) {
  job *j = arg;
  char want[64];
  int r, q;
  snprintf(want, sizeof want, "no event %d ", 1000 + j->id);
  pthread_barrier_wait(&start);
  for (r = 0; r < ROUNDS; ++r) {
    double out[1];
    if (salta_model_eval(j->model, SALTA_FN_R, 1000 + j->id, 0, decay_x0, NULL, decay_k, out) != SALTA_EINPUT) ++j->wrong;
    for (q = 0; q < 200; ++q) salta_model_eval(j->model, SALTA_FN_F, 0, 0, decay_x0, NULL, decay_k, out);
    if (!strstr(salta_model_errmsg(j->model), want)) ++j->wrong;
  }
  return NULL;
}

/* A simulation of the shared model: y(2) = exp(-2 k). */
static void *simulate(void *arg) {
  job *j = arg;
  salta_sim *sim = NULL;
  salta_sim_options o;
  double times[] = {2}, p[] = {0.5}, t;
  const double *y;
  pthread_barrier_wait(&start);
  salta_sim_options_init(&o, 0, 2);
  o.rtol = 1e-10;
  o.atol = 1e-12;
  if (salta_sim_create(&sim, j->model) || salta_sim_run(sim, &o, p, NULL, times, 1)
      || salta_sim_out(sim, 0, &t, NULL, NULL, &y))
    ++j->wrong;
  else
    j->y = y[0];
  salta_sim_free(&sim);
  return NULL;
}

int main(void) {
  salta_model *m = NULL;
  pthread_t th[6];
  job jobs[6];
  int k;
  CHECK(salta_model_create(&m, &decay_def) == SALTA_OK);
  pthread_barrier_init(&start, NULL, 6);
  for (k = 0; k < 6; ++k) {
    jobs[k] = (job){m, k, 0, 0};
    CHECK(pthread_create(&th[k], NULL, k < 4 ? fail_often : simulate, &jobs[k]) == 0);
  }
  for (k = 0; k < 6; ++k) {
    pthread_join(th[k], NULL);
    CHECK(jobs[k].wrong == 0);
    if (k >= 4) CHECK_NEAR(jobs[k].y, exp(-1.0), 1e-8);
  }
  /* this thread's own message: none failed here, so the creation's (empty) */
  CHECK(salta_model_errmsg(m)[0] == '\0');
  salta_model_free(&m);
  pthread_barrier_destroy(&start);
  return check_summary("threads");
}
