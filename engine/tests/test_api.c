/*
** test_api.c -- every failing call of the public API says why: a message
** of its own (never empty, never the previous call's) naming the argument
** and the value.
*/
#include <math.h>
#include <string.h>

#include "check.h"
#include "salta.h"

#include "decay.h"

/* The call failed with SALTA_EINPUT and a message of its own. */
#define CHECK_FAILS(call, errmsg, text)  \
  do {                                   \
    CHECK((call) == SALTA_EINPUT);       \
    CHECK_CONTAINS(errmsg, text);        \
  } while (0)

int main(void) {
  salta_model *m = NULL;
  salta_sim *sim = NULL;
  salta_loss *loss = NULL;
  salta_sim_options o;
  double times[] = {0.5, 1.0}, data[] = {0.7, 0.6}, p[] = {0.5}, g[1], v;
  int out = 0, dir = 0, neg = -2;
  CHECK(salta_model_create(&m, &decay_def) == SALTA_OK);
  CHECK(salta_sim_create(&sim, m) == SALTA_OK);
  salta_sim_options_init(&o, NAN, 1.0);
  CHECK_FAILS(salta_sim_run(sim, &o, p, NULL, times, 2), salta_sim_errmsg(sim), "need finite t0 < tf, got [nan, 1]");
  salta_sim_options_init(&o, 1e15, 1e15 + 10);
  CHECK_FAILS(salta_sim_run(sim, &o, p, NULL, NULL, 0), salta_sim_errmsg(sim), "cannot be resolved in time: doubles there are 0.125 apart");
  salta_sim_options_init(&o, 1e9, 1e9 + 10);
  CHECK(salta_sim_run(sim, &o, p, NULL, NULL, 0) == SALTA_OK);
  salta_sim_options_init(&o, 0, 1.0);
  o.max_events = -5;
  CHECK_FAILS(salta_sim_run(sim, &o, p, NULL, times, 2), salta_sim_errmsg(sim), "option 'max_events' must be an integer from 0 to 2147483647, got -5");
  salta_sim_options_init(&o, 0, 1.0);
  o.max_order = 9;
  CHECK_FAILS(salta_sim_run(sim, &o, p, NULL, times, 2), salta_sim_errmsg(sim), "option 'max_order' must be an integer from 1 to 5, got 9");
  CHECK_FAILS(salta_sim_set_sens(sim, &dir, -1), salta_sim_errmsg(sim), "got -1");
  CHECK_FAILS(salta_sim_set_sens(sim, &neg, 1), salta_sim_errmsg(sim), "direction -2");
  {
    /* a count above np + nx is refused before the array is read (one
    ** int here: reading 1000 would overrun it, which the sanitizer sees) */
    CHECK_FAILS(salta_sim_set_sens(sim, &dir, 1000), salta_sim_errmsg(sim), "1000 sensitivity directions, but the model has only 2");
  }
  salta_sim_options_init(&o, 0, 1.0);
  CHECK(salta_sim_run(sim, &o, p, NULL, times, 2) == SALTA_OK);
  {
    /* indices out of range name what they index and the range */
    salta_event_record rec;
    salta_event_sens es;
    const double *S;
    CHECK_FAILS(salta_sim_out(sim, 2, NULL, NULL, NULL, NULL), salta_sim_errmsg(sim), "output 2 is out of range (0 to 1)");
    CHECK_FAILS(salta_sim_out(sim, -1, NULL, NULL, NULL, NULL), salta_sim_errmsg(sim), "output -1 is out of range");
    CHECK_FAILS(salta_sim_event(sim, 0, &rec), salta_sim_errmsg(sim), "event record 0 asked for, but the run has none");
    CHECK_FAILS(salta_sim_event(sim, 0, NULL), salta_sim_errmsg(sim), "needs a record");
    CHECK_FAILS(salta_sim_step(sim, 3, NULL, NULL, NULL), salta_sim_errmsg(sim), "recorded step 3");
    CHECK_FAILS(salta_sim_out_sens(sim, 0, &S, NULL), salta_sim_errmsg(sim), "no sensitivities");
    CHECK_FAILS(salta_sim_event_sens(sim, 0, &es), salta_sim_errmsg(sim), "no sensitivities");
    CHECK(salta_sim_out(sim, 1, NULL, NULL, NULL, NULL) == SALTA_OK);
  }

  CHECK(salta_loss_create(&loss, m, times, 2, &out, 1, data, NULL) == SALTA_OK);
  CHECK_FAILS(salta_loss_set_blend(loss, NAN), salta_loss_errmsg(loss), "blend");
  CHECK_FAILS(salta_loss_set_blend(loss, -1), salta_loss_errmsg(loss), "got -1");
  salta_sim_options_init(&o, NAN, 1.0);
  CHECK_FAILS(salta_loss_set_options(loss, &o), salta_loss_errmsg(loss), "t0 < tf");
  CHECK(salta_loss_set_free(loss, &dir, 1) == SALTA_OK);
  CHECK_FAILS(salta_loss_eval_adjoint(loss, p, NULL, -3, 1, &v, g), salta_loss_errmsg(loss), "mesh_k (salta.lsq: option 'mesh') must be 0");
  CHECK_FAILS(salta_loss_eval_adjoint(loss, p, NULL, SALTA_MESH_MAX + 1, 1, &v, g), salta_loss_errmsg(loss), "got 1000001");
  CHECK_FAILS(salta_loss_eval(loss, NULL, NULL, &v, g, NULL, NULL), salta_loss_errmsg(loss), "needs parameters");
  {
    salta_fd_options fd;
    salta_fd_options_init(&fd);
    fd.h = 0;
    CHECK_FAILS(salta_loss_grad_fd(loss, p, NULL, &fd, g, NULL), salta_loss_errmsg(loss), "step h must be a finite number > 0, got 0");
  }
  CHECK(salta_loss_eval_adjoint(loss, p, NULL, 10, 1, &v, g) == SALTA_OK);
  CHECK(isfinite(v) && isfinite(g[0]));
  {
    /* the C host's gradient check: sensitivities against Richardson differences */
    double ref, err;
    salta_sim_options_init(&o, 0, 1.0);
    o.rtol = 1e-11, o.atol = 1e-13;
    CHECK(salta_loss_set_options(loss, &o) == SALTA_OK);
    CHECK(salta_loss_check_gradient(loss, p, NULL, 1e-4, g, &ref, &err) == SALTA_OK);
    CHECK(err < 1e-9 * fabs(ref));
    CHECK_NEAR(g[0], ref, 1e-7);
    CHECK_FAILS(salta_loss_check_gradient(loss, p, NULL, 1e-4, g, NULL, &err), salta_loss_errmsg(loss), "room");
  }
  {
    /* the whole check: every route against the closed form's gradient,
    ** mean (exp(-k t) - d)^2 over the two data; the loss's options as they
    ** were afterwards (its value at rtol 1e-8, not at the reference's) */
    salta_check_options co;
    salta_check_result res[SALTA_CHECK_NROUTES];
    salta_verdict verdict;
    double gr[SALTA_CHECK_NROUTES], ref, err, exact = 0, v0, v1;
    int r, i;
    for (i = 0; i < 2; ++i) {
      double y = exp(-p[0] * times[i]);
      exact += 2 * (y - data[i]) * (-times[i] * y) / 2;
    }
    salta_sim_options_init(&o, 0, 1.0);
    o.rtol = 1e-8, o.atol = 1e-8;
    CHECK(salta_loss_set_options(loss, &o) == SALTA_OK);
    CHECK(salta_loss_eval(loss, p, NULL, &v0, NULL, NULL, NULL) == SALTA_OK);
    salta_check_options_init(&co);
    CHECK(salta_loss_check(loss, p, NULL, &co, &ref, &err, gr, res, &verdict) == SALTA_OK);
    CHECK(verdict == SALTA_VERDICT_OK);
    CHECK_NEAR(ref, exact, 1e-9 * fabs(exact));
    for (r = 0; r < SALTA_CHECK_NROUTES; ++r) {
      CHECK(res[r].verdict == SALTA_VERDICT_OK && res[r].status == SALTA_OK);
      CHECK_NEAR(gr[r], exact, 1e-5 * fabs(exact));
    }
    CHECK(salta_loss_eval(loss, p, NULL, &v1, NULL, NULL, NULL) == SALTA_OK);
    CHECK(v0 == v1);
    co.routes = 1u << SALTA_CHECK_FD;
    CHECK(salta_loss_check(loss, p, NULL, &co, &ref, &err, gr, res, &verdict) == SALTA_OK);
    CHECK(res[SALTA_CHECK_SENS].verdict == SALTA_VERDICT_SKIPPED && res[SALTA_CHECK_FD].verdict == SALTA_VERDICT_OK);
    CHECK(res[SALTA_CHECK_FD].own > 0 && res[SALTA_CHECK_FD].own < 1e-6);
    co.h = -1;
    CHECK_FAILS(salta_loss_check(loss, p, NULL, &co, &ref, &err, gr, res, &verdict), salta_loss_errmsg(loss),
                "tol, h and rtol_ref must be finite numbers >= 0 (0: the default), got 0, -1 and 0");
    CHECK_FAILS(salta_loss_check(loss, p, NULL, NULL, &ref, NULL, gr, res, &verdict), salta_loss_errmsg(loss),
                "needs parameters and room for the reference, its error");
    {
      double bad[] = {NAN};   /* the reference fails (at rtol_ref): the options come back all the same */
      co.h = 0;
      CHECK(salta_loss_check(loss, bad, NULL, &co, &ref, &err, gr, res, &verdict) == SALTA_EINPUT);
      CHECK_CONTAINS(salta_loss_errmsg(loss), "nan");
    }
    CHECK(salta_loss_eval(loss, p, NULL, &v1, NULL, NULL, NULL) == SALTA_OK);
    CHECK(v0 == v1);
  }

  salta_loss_free(&loss);
  salta_sim_free(&sim);
  salta_model_free(&m);
  return check_summary("api");
}
