/*
** cauer_gradient.c -- salta embedded in a C program, with no Lua and no JIT:
** the Cauer ladder compiled ahead of time (salta compile models/cauer.lua
** -o cauer_model.c), simulated at its nominal parameters to make data, then
** the least-squares loss and its gradient by forward sensitivities at the
** seed paper's biased start, checked against differences.
**
**   salta compile models/cauer.lua -o cauer_model.c
**   cc cauer_gradient.c cauer_model.c $(pkg-config --cflags --libs salta) -o cauer_gradient
*/
#include <stdio.h>
#include <string.h>

#include <salta.h>

extern const salta_model_def salta_model_cauer;

#define NT 101
#define NFREE 7

static int index_of(const salta_model_def *d, const char *name) {
  int j;
  for (j = 0; j < d->np; ++j)
    if (strcmp(d->p_names[j], name) == 0) return j;
  return -1;
}

int main(void) {
  static const char *const free_names[NFREE] = {"C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L"};
  static const double start[NFREE] = {1.10177047, 0.25193102, 1.53445960, 0.75943693,
                                      0.77315497, 1.41621466, 0.87710816};
  const int outputs[5] = {0, 1, 2, 3, 4};   /* the five states */
  salta_model *model = NULL;
  salta_sim *sim = NULL;
  salta_loss *loss = NULL;
  salta_sim_options o;
  salta_fd_options fd;
  salta_check_options co;
  salta_check_result routes[SALTA_CHECK_NROUTES];
  salta_verdict verdict;
  static const char *const verdict_names[] = {"ok", "ill-conditioned", "uncertain", "inconclusive", "disagree",
                                              "not differentiable", "refused", "skipped"};
  double ref[NFREE], ref_err[NFREE], route_grad[SALTA_CHECK_NROUTES * NFREE];
  const salta_model_def *d = &salta_model_cauer;
  double times[NT], data[NT * 5], p[64], value, grad[NFREE], grad_fd[NFREE];
  int dirs[NFREE], k, j, st, rc = 1;

  /* the library loaded at run time must be the one this was compiled for */
  if (strcmp(salta_version(), SALTA_VERSION) != 0) {
    fprintf(stderr, "libsalta %s, but salta.h %s\n", salta_version(), SALTA_VERSION);
    return 1;
  }
  printf("version %s\n", salta_version());
  if ((st = salta_model_create(&model, d)) != SALTA_OK) {
    fprintf(stderr, "model: %s\n", salta_model_errmsg(model));
    goto done;
  }
  for (k = 0; k < NT; ++k) times[k] = 20.0 * k / (NT - 1);
  salta_sim_options_init(&o, 0.0, 20.0);
  o.rtol = 1e-10;
  o.atol = 1e-12;
  o.method = SALTA_METHOD_ERK;
  /* data: the outputs at the nominal parameters */
  if (salta_sim_create(&sim, model) || salta_sim_run(sim, &o, d->p_nominal, NULL, times, NT)) {
    fprintf(stderr, "simulation: %s\n", salta_sim_errmsg(sim));
    goto done;
  }
  for (k = 0; k < NT; ++k) {
    const double *y;
    salta_sim_out(sim, k, NULL, NULL, NULL, &y);
    for (j = 0; j < 5; ++j) data[k * 5 + j] = y[outputs[j]];
  }
  printf("events %d\n", salta_sim_nevents(sim));
  /* the loss and its gradient at the biased start */
  memcpy(p, d->p_nominal, sizeof(double) * (size_t)d->np);
  for (j = 0; j < NFREE; ++j) {
    dirs[j] = index_of(d, free_names[j]);
    p[dirs[j]] = start[j];
  }
  o.rtol = 1e-8;
  o.atol = 1e-10;
  if (salta_loss_create(&loss, model, times, NT, outputs, 5, data, NULL) ||
      salta_loss_set_options(loss, &o) || salta_loss_set_free(loss, dirs, NFREE) ||
      salta_loss_eval(loss, p, NULL, &value, grad, NULL, NULL)) {
    fprintf(stderr, "loss: %s\n", salta_loss_errmsg(loss));
    goto done;
  }
  printf("loss %.12e\n", value);
  for (j = 0; j < NFREE; ++j) printf("grad %s %.12e\n", free_names[j], grad[j]);
  /* the same gradient by central differences, as a check */
  salta_fd_options_init(&fd);
  fd.h = 1e-4;
  if (salta_loss_grad_fd(loss, p, NULL, &fd, grad_fd, NULL)) {
    fprintf(stderr, "loss: %s\n", salta_loss_errmsg(loss));
    goto done;
  }
  for (j = 0; j < NFREE; ++j) printf("fd %s %.12e\n", free_names[j], grad_fd[j]);
  /* the whole check: sensitivities and the continuous adjoint against
  ** Richardson differences at a tighter tolerance, with a verdict */
  salta_check_options_init(&co);
  co.routes = 1u << SALTA_CHECK_SENS | 1u << SALTA_CHECK_ADJOINT_CONT;
  if (salta_loss_check(loss, p, NULL, &co, ref, ref_err, route_grad, routes, &verdict)) {
    fprintf(stderr, "loss: %s\n", salta_loss_errmsg(loss));
    goto done;
  }
  printf("check %s\n", verdict_names[verdict]);
  for (k = 0; k < SALTA_CHECK_NROUTES; ++k)
    if (routes[k].verdict != SALTA_VERDICT_SKIPPED)
      printf("route %d %s worst %.3g\n", k, verdict_names[routes[k].verdict], routes[k].worst);
  rc = 0;
done:
  salta_loss_free(&loss);
  salta_sim_free(&sim);
  salta_model_free(&model);
  return rc;
}
