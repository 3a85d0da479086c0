/*
** cadj.c -- the continuous adjoint's entry (see cadj.h): the forward run
** and the loss, the backward problems' options, the working arrays. The
** backward sweep is cadj_sweep.c's.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "cadj_impl.h"
#include "errors.h"
#include "sim_plan.h"
#include "sparselu.h"

/* ---- the forward run and the loss --------------------------------------------- */

/* The first prediction that is not finite, by output and time. */
static int nonfinite(salta__cadj *a) {
  const salta__targets *tg = a->tg;
  int k, j;
  for (k = 0; k < tg->nk; ++k) {
    salta__cadj_target(a, k, 0);
    for (j = 0; j < tg->nout; ++j)
      if (!salta__targets_missing(tg, (size_t)k * tg->nout + j) && !isfinite(a->yk[j]))
        return salta__fail(a->err, SALTA_ESOLVER, "model '%s': output '%s' is %g at t = %g", a->d->name,
                           a->d->y_names[tg->outputs[j]], a->yk[j], tg->times[k]);
  }
  return salta__fail(a->err, SALTA_ESOLVER, "model '%s': the loss is not finite", a->d->name);
}

/* The event data's share of the loss: each datum's firing time (the run's
** end t_end for one it did not reach), and dL / d that time into
** a->rec_bar by the record whose time it is (none for the end at tf). */
static int event_data(salta__cadj *a, double t_end, double *L) {
  const salta__targets *tg = a->tg;
  int i, nev = salta_sim_nevents(a->sim), end = salta__sim_end_record(a->sim);
  if (tg->ned == 0) return SALTA_OK;
  if (!(a->rec_bar = calloc((size_t)nev + 1, sizeof(double)))) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  for (i = 0; i < tg->ned; ++i) {
    int rec = tg->ed[i].rec >= 0 ? tg->ed[i].rec : end;
    double tau = t_end, r, dLdtau;
    salta_event_record er;
    if (tg->ed[i].rec >= 0) salta_sim_event(a->sim, rec, &er), tau = er.t;
    r = salta__targets_event_residual(tg, i, tau, &dLdtau);
    *L += r * r;
    if (rec >= 0) a->rec_bar[rec] += dLdtau;
  }
  return SALTA_OK;
}

/* The forward run at the target times and the loss, at a hundredth of
** the tolerances: the gradient is as accurate as the event data this run
** gives (event times, left and right limits) and the re-runs' states
** (backward.h: a tenth), and as its backward problem's tolerance (below)
** allows. Measured on the thermostat, the spring latch and the RC network
** at rtol 1e-8: this run at rtol takes the gradient 2e-5 from the truth,
** at rtol / 10 2e-7 to 4e-6; on the 10,002-equation Cauer ladder (its
** forward sensitivities 8.4e-7 off): this run at rtol / 10 and re-runs at
** rtol 7.9e-6, re-runs at rtol / 10 2.0e-6, and this run at rtol / 100
** 4.7e-7, for 7-8 % more time on the bench's ladders of 150 and 1,500
** equations. */
#define FORWARD_TIGHTER 0.01

static int forward(salta__cadj *a, double *value) {
  salta_sim_stats stats;
  salta_sim_options o = *a->o;
  salta__out_plan plan = {NULL, 0, 1, NULL, 0, 0};   /* every output, and the targets' stop rule */
  double L = 0;
  int k, st;
  o.record_steps = 0;
  o.rtol = fmax(o.rtol * FORWARD_TIGHTER, 1e-14), o.atol *= FORWARD_TIGHTER;
  salta__targets_plan_stop(a->tg, &plan);
  if ((st = salta__sim_run_planned(a->sim, &o, a->p, a->x0, a->tg->times, a->tg->nt, &plan)))
    return salta__fail(a->err, st, "%s", salta_sim_errmsg(a->sim));
  salta_sim_stats_get(a->sim, &stats);
  if ((st = salta__targets_match_events(a->tg, a->sim, &o, a->err)) ||
      (st = salta__targets_reach(a->tg, salta_sim_nout(a->sim), &stats, a->err)))
    return st;
  for (k = 0; k < a->tg->nk; ++k) L = salta__cadj_target(a, k, L);
  if ((st = event_data(a, stats.t_end, &L))) return st;
  if (!isfinite(L)) return nonfinite(a);
  *value = L;
  return SALTA_OK;
}

/* ---- the backward problems ------------------------------------------------------------ */

/* The explicit backward problem's default tolerances against the loss's:
** its global error on a fast transient is many times its tolerance (the
** stiff relay at rtol 1e-8, a datum inside its 0.1 ms transient: the
** gradient 2.6e-6 from the closed form's at the loss's tolerances, 6.9e-8
** at a tenth of them), and its steps cost little (a tenth: about 1.6
** times the steps, as steps go with the tolerance to the power -1/5). */
#define ERK_BACKWARD_TIGHTER 0.1

/* Their tolerances and solver, from the options (explicit: a run by ERK). */
static void backward_options(salta__cadj *a, int explicit) {
  const salta_sim_options *o = a->o;
  salta__backward_opts *io = &a->bop;
  double f = explicit ? ERK_BACKWARD_TIGHTER : 1;
  int k;
  io->o = o;
  io->linear_solver = salta__use_klu(o, a->n) ? SALTA_LS_KLU : SALTA_LS_DENSE;
  io->rtol_b = o->adjoint_rtol > 0 ? o->adjoint_rtol : f * o->rtol;
  io->atol_b = o->adjoint_atol > 0 ? o->adjoint_atol : f * o->atol;
  io->rtol_q = o->quad_rtol > 0 ? o->quad_rtol : io->rtol_b;
  io->atol_q = o->quad_atol > 0 ? o->quad_atol : io->atol_b;
  io->checkpoint_steps = o->checkpoint_steps;
  io->nq = 0;
  for (k = 0; k < a->ns; ++k)
    if (a->dirs[k] >= 0) a->qpar[io->nq++] = a->dirs[k];
  io->qpar = a->qpar;
}

#define CADJ_ARRAYS 17
static size_t cadj_arrays(salta__cadj *a, salta__array *list) {
  size_t n = (size_t)a->n, np = (size_t)a->np, ne = (size_t)a->ne, ny = (size_t)a->d->ny, nout = (size_t)a->tg->nout;
  size_t ns = (size_t)a->ns;
  salta__array all[CADJ_ARRAYS] = {
    SALTA__ARRAY(a->qpar, ns), SALTA__ARRAY(a->lam, n), SALTA__ARRAY(a->gp, np), SALTA__ARRAY(a->q, ns),
    SALTA__ARRAY(a->gx0, (size_t)a->nx), SALTA__ARRAY(a->gy, ny), SALTA__ARRAY(a->yk, nout),
    SALTA__ARRAY(a->r, nout), SALTA__ARRAY(a->dr, nout), SALTA__ARRAY(a->dL, nout), SALTA__ARRAY(a->rs, nout),
    SALTA__ARRAY(a->flow, n), SALTA__ARRAY(a->rate, ne),
    SALTA__ARRAY(a->rscale, ne), SALTA__ARRAY(a->tau_bar, ne), SALTA__ARRAY(a->alt_v, 3 * n),
    SALTA__ARRAY(a->alt_g, 3 * np)};
  memcpy(list, all, sizeof all);
  return CADJ_ARRAYS;
}

/* The gradient once the forward run is made: backward by the explicit
** method where the run was explicit (the model is not stiff), else by
** IDAS. */
static int backward(salta__cadj *a, double *grad) {
  salta_sim_stats stats;
  int st;
  salta_sim_stats_get(a->sim, &stats);
  backward_options(a, stats.method == SALTA_METHOD_ERK);
  if ((st = salta__cadj_segments(a)) ||
      (st = stats.method == SALTA_METHOD_ERK ? salta__erk_adj_create(&a->bw, a->dae, &a->bop)
                                             : salta__ida_adj_create(&a->bw, a->dae, &a->bop)))
    return st;
  return salta__cadj_gradient(a, grad);
}

int salta__cadj_eval(salta__cadj_work *w, salta__targets *tg, salta_sim *sim, const salta_sim_options *o,
                     const double *p, const double *x0, const int *dirs, int ns, double *value, double *grad) {
  salta__array list[CADJ_ARRAYS];
  salta__cadj a;
  double v = 0;
  int st;
  memset(&a, 0, sizeof a);
  a.w = w, a.dae = &w->dae, a.d = w->dae.d, a.tg = tg, a.sim = sim, a.o = o, a.err = w->err;
  a.x0 = x0, a.dirs = dirs, a.ns = ns;
  a.nx = a.d->nx, a.n = a.d->nx + a.d->nz, a.np = a.d->np, a.ne = a.d->ne;
  if (tg->beta > 0)
    return salta__fail(a.err, SALTA_EINPUT, "model '%s': the continuous adjoint does not blend (blend = %g); use "
                       "method = \"sens\"", a.d->name, tg->beta);
  if (salta__targets_windowed(tg))
    return salta__fail(a.err, SALTA_EINPUT, "model '%s': the continuous adjoint does not follow event windows; use "
                       "method = \"sens\"", a.d->name);
  if (salta__arrays_alloc(list, cadj_arrays(&a, list))) return salta__fail(a.err, SALTA_EMEM, "out of memory");
  salta__dae_set_params(a.dae, p);
  a.p = a.dae->p;   /* with the derived values the kernels read */
  st = forward(&a, &v);
  if (st == SALTA_OK && grad) st = backward(&a, grad);
  if (st == SALTA_OK && value) *value = v;
  salta__backward_free(&a.bw);
  free(a.b), free(a.first), free(a.split), free(a.split_dir), free(a.rec_bar);
  salta__arrays_free(list, cadj_arrays(&a, list));
  salta__dae_set_params(a.dae, NULL);
  return st;
}

/* ---- the work ---------------------------------------------------------------------------- */

void salta__cadj_work_bind(salta__cadj_work *w, const salta_model_def *d) { salta__dae_bind(&w->dae, d); }

int salta__cadj_work_new(salta__cadj_work **out, const salta_model_def *d, char *err) {
  salta__cadj_work *w = calloc(1, sizeof *w);
  int st;
  *out = NULL;
  if (!w) return salta__fail(err, SALTA_EMEM, "out of memory");
  w->err = err;
  if ((st = salta__dae_init(&w->dae, d, err))) {
    free(w);
    return st;
  }
  if ((st = salta__sens_init(&w->sn, &w->dae, NULL, 0))) {
    salta__dae_free(&w->dae);
    free(w);
    return st;
  }
  *out = w;
  return SALTA_OK;
}

void salta__cadj_work_free(salta__cadj_work **w) {
  if (!w || !*w) return;
  salta__sens_free(&(*w)->sn);
  salta__dae_free(&(*w)->dae);
  free(*w);
  *w = NULL;
}
