/*
** sim.c -- a hybrid DAE simulation: input checks, the consistent start,
** the single segment loop that drives any integrator through the events,
** and the recorded results.
*/
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "errors.h"
#include "integrator.h"
#include "options.h"
#include "sim_impl.h"
#include "sparselu.h"
#include "start.h"
#include "tol.h"

/* ---- results --------------------------------------------------------------- */

/* Output at t from a consistent w and S (z rows filled). */
static void store_output(salta_sim *s, double t, const double *w, const double *S) {
  salta__results *r = &s->res;
  const salta__dae *a = &s->dae;
  int k = r->nout++, ny = s->d->ny;
  size_t nS = (size_t)s->n * s->ns;
  r->t[k] = t;
  memcpy(r->w + (size_t)k * s->n, w, sizeof(double) * (size_t)s->n);
  if (ny) s->d->h.eval(t, w, w + s->nx, a->p, r->y + (size_t)k * ny);
  if (s->ns > 0) {
    memcpy(r->S + (size_t)k * nS, S, sizeof(double) * nS);
    salta__sens_output(&s->sens, t, w, S, r->dy + (size_t)k * ny * s->ns);
  }
  if (s->run.plan_y) salta__plan_record(s, k);
}

static int store_step(salta_sim *s, double t, const double *w) {
  if (!s->run.o->record_steps) return SALTA_OK;
  int st;
  if ((st = salta__dbuf_push(&s->res.step_t, &t, 1, s->err))) return st;
  return salta__dbuf_push(&s->res.step_w, w, (size_t)s->n, s->err);
}

/* The sensitivity data of the group just fired, per member: tau_p always
** (event times are data of a loss), the rest when the run records event
** outputs. */
static int store_jump(salta_sim *s, int nfire) {
  salta__results *r = &s->res;
  const salta__jump *j = &s->run.jump;
  size_t ns = (size_t)s->ns, nS = (size_t)s->n * ns, ny = (size_t)s->d->ny;
  char *err = s->err;
  int q, st;
  for (q = 0; q < nfire; ++q)
    if ((st = salta__dbuf_push(&r->tau_p, j->tau_p + (size_t)q * ns, ns, err))) return st;
  for (q = 0; q < nfire && j->outputs; ++q)
    if ((st = salta__dbuf_push(&r->S_minus, s->run.S_step, nS, err)) ||
        (st = salta__dbuf_push(&r->S_plus, s->run.S, nS, err)) ||
        (st = salta__dbuf_push(&r->y_minus, j->y_minus, ny, err)) ||
        (st = salta__dbuf_push(&r->dy_minus, j->dy_minus, ny * ns, err)) ||
        (st = salta__dbuf_push(&r->y_plus, j->y_plus, ny, err)) ||
        (st = salta__dbuf_push(&r->dy_plus, j->dy_plus, ny * ns, err)))
      return st;
  return SALTA_OK;
}

static void clear_results(salta_sim *s) {
  salta__results *r = &s->res;
  r->nout = 0;
  r->step_t.n = r->step_w.n = 0;
  r->tau_p.n = r->S_minus.n = r->S_plus.n = r->y_minus.n = r->dy_minus.n = r->y_plus.n = r->dy_plus.n = 0;
  r->t_end_p.n = 0;
  s->events.nlog = 0;
}

/* ---- the state inside a step -------------------------------------------------- */

/* Interpolated algebraics are re-solved from g (Newton from the
** interpolated value, which is kept if Newton fails), so outputs and event
** limits satisfy g = 0 to round-off; S's z rows come from its x rows by the
** implicit function theorem (IDAS leaves algebraic components out of its
** error test). */
static int consistent(salta_sim *s, const salta__integrator *it, double t, double *w, double *S) {
  if (!it->ops->exact_z && s->nz > 0) salta__dae_polish_z(&s->dae, t, w);
  if (s->ns > 0 && salta__sens_fill_z(&s->sens, t, w, S))
    return salta__fail(s->err, SALTA_ESOLVER, "model '%s': g_z is singular at t = %.17g", s->d->name, t);
  return SALTA_OK;
}

static int state_in_step(salta_sim *s, const salta__integrator *it, double t, double *w, double *S) {
  int st;
  if ((st = it->ops->at(it->self, t, w, NULL, 0))) return st;
  if (s->ns > 0 && (st = it->ops->sens_at(it->self, t, S))) return st;
  return consistent(s, it, t, w, S);
}

/* Outputs at the target times before t_to (up to it when inclusive). */
static int outputs_in_step(salta_sim *s, const salta__integrator *it, const double *times, int nt, int *k,
                           double t_to, int inclusive) {
  int st, first = *k;
  while (*k < nt && (times[*k] < t_to || (inclusive && times[*k] <= t_to))) {
    if (s->run.plan_x) {
      if ((st = salta__plan_store(s, it, times[*k], *k == first))) return st;
    } else {
      if ((st = state_in_step(s, it, times[*k], s->run.w_step, s->run.S_step))) return st;
      store_output(s, times[*k], s->run.w_step, s->run.S_step);
    }
    ++*k;
  }
  return SALTA_OK;
}

/* ---- the segment loop ------------------------------------------------------------ */

static int interp_at(void *ctx, double t, double *w, const int *cols, int ncols) {
  const salta__integrator *it = ctx;
  return it->ops->at(it->self, t, w, cols, ncols);
}

/* The first terminal event of the group that fired at tau, if any, ends
** the run there. */
static void note_terminal(salta_sim *s, double tau) {
  const unsigned char *flags = s->d->e_flags;
  int q;
  for (q = 0; flags && q < s->events.nfire && s->stats.terminal_event < 0; ++q)
    if (flags[s->events.fire[q]] & SALTA_EVENT_TERMINAL) s->stats.terminal_event = s->events.fire[q], s->stats.t_end = tau;
}

/* One round at tau: the group in events.fire from run->w_minus (whose
** sensitivities are in S_step) into w_plus and run->S. */
static int fire_round(salta_sim *s, double tau) {
  salta__run *run = &s->run;
  salta__events *ev = &s->events;
  int st, nfire = ev->nfire, cascade = ev->cascade;
  if ((st = salta__events_fire(ev, tau, run->w_minus, run->w_plus))) return st;
  if (s->ns > 0) {
    const salta__left_limit lm = {run->w_minus, ev->flow, ev->flow + s->nx, ev->rate, ev->rscale, ev->ejac};
    memcpy(run->S, run->S_step, sizeof(double) * (size_t)s->n * s->ns);
    if ((st = salta__sens_jump(&s->sens, tau, &lm, run->w_plus, ev->fire, nfire, cascade ? run->tau_p0 : NULL,
                               run->S, &run->jump)) ||
        (st = salta__sens_check(&s->sens, run->S, s->n, s->n, tau, run->w_plus)) || (st = store_jump(s, nfire)))
      return st;
    /* the first round's instant, which event iteration keeps */
    if (!cascade) memcpy(run->tau_p0, run->jump.tau_p, sizeof(double) * (size_t)s->ns);
  }
  return store_step(s, tau, run->w_plus);
}

/* The located group at tau and the rounds of event iteration after it. */
static int fire_group(salta_sim *s, const salta__integrator *it, double tau, const double *times, int nt, int *k) {
  salta__run *run = &s->run;
  int st;
  if ((st = outputs_in_step(s, it, times, nt, k, tau, 0))) return st;
  if ((st = state_in_step(s, it, tau, run->w_minus, run->S_step))) return st;
  if ((st = store_step(s, tau, run->w_minus))) return st;
  for (;;) {
    if ((st = fire_round(s, tau))) return st;
    note_terminal(s, tau);
    if (s->stats.terminal_event >= 0 || (st = salta__events_next_round(&s->events, tau)) == 0) break;
    if (st < 0) return st;
    memcpy(run->w_minus, run->w_plus, sizeof(double) * (size_t)s->n);
    if (s->ns > 0) memcpy(run->S_step, run->S, sizeof(double) * (size_t)s->n * s->ns);
  }
  memcpy(run->w, run->w_plus, sizeof(double) * (size_t)s->n);
  run->t = tau;
  while (*k < nt && times[*k] <= tau) store_output(s, times[*k], run->w, run->S), ++*k;
  return SALTA_OK;
}

/* A state beyond this after a step is a blow-up, not a value to go on with. */
#define BLOWUP 1e100

static int largest_state(const salta_sim *s, const double *w) {
  int i, at = 0;
  for (i = 0; i < s->nx; ++i)
    if (!(fabs(w[i]) <= fabs(w[at]))) at = i;
  return at;
}

/* The largest state where the integrator's last step ended (in w_step,
** *at): SALTA_OK, or the integrator's failure to give that state. */
static int largest_at_end(salta_sim *s, const salta__integrator *it, int *at) {
  int st = it->ops->end_state(it->self, s->run.w_step, NULL);
  *at = st == SALTA_OK ? largest_state(s, s->run.w_step) : 0;
  return st;
}

/* The state where a step ended, unless it blew up. */
static int check_blowup(salta_sim *s, const salta__integrator *it, double t) {
  const double *w = s->run.w_step;
  int at, st;
  if ((st = largest_at_end(s, it, &at))) return st;
  if (fabs(w[at]) <= BLOWUP) return SALTA_OK;
  return salta__fail(s->err, SALTA_ESOLVER, "model '%s': state '%s' reached %g at t = %.17g: the solution blows up "
                     "(a finite escape time)", s->d->name, s->d->x_names[at], w[at], t);
}

/* Too many steps: says where the solution is and how fast it moved, since
** a blow-up (a finite escape time) and a stiff model both end here. */
static int too_many_steps(salta_sim *s, const salta__integrator *it, double t_old, double t_new) {
  const salta_model_def *d = s->d;
  const double *w = s->run.w_step;
  int at, st;
  if ((st = largest_at_end(s, it, &at))) return st;
  return salta__fail(s->err, SALTA_ESOLVER,
                     "model '%s': more than max_steps = %ld steps at t = %.17g, the last %g long, with state '%s' "
                     "at %g: the solution may blow up there (a finite escape time), f may switch there without an "
                     "event (chattering), or the model is stiff for this method",
                     d->name, s->run.o->max_steps, t_new, t_new - t_old, d->x_names[at], w[at]);
}

/* Steps below round-off, many in a row: the integrator cannot pass a
** singularity of f (sqrt or log of a state at 0, a division by one). */
#define STALL_STEPS 50

static int stalled(salta_sim *s, const salta__integrator *it, double t_old, double t_new) {
  const double *w = s->run.w_step;
  int at, st;
  if ((st = largest_at_end(s, it, &at))) return st;
  return salta__fail(s->err, SALTA_ESOLVER,
                     "model '%s': the step size fell below round-off (%g) at t = %.17g for %d steps, with state "
                     "'%s' at %g: f is singular there (e.g. sqrt, log or a division reaching 0 or a negative "
                     "argument), or the solution blows up (a finite escape time)",
                     s->d->name, t_new - t_old, t_new, STALL_STEPS, s->d->x_names[at], w[at]);
}

/* Steps the integrator to tf: after each step the events module looks for
** the earliest crossing on its interpolant; outputs come from the
** interpolant before it, the group fires at it, and the integrator
** restarts from the right limit. */
static int segment_loop(salta_sim *s, const salta__integrator *it, const double *times, int nt) {
  salta__run *run = &s->run;
  const salta_sim_options *o = run->o;
  salta__interp ip = {interp_at, (void *)it, it->ops->exact_z};
  long steps = 0;
  int k = 0, st, nfire, final, tiny = 0, nlog_before;
  while (k < nt && times[k] <= o->t0) store_output(s, o->t0, run->w, run->S), ++k;
  for (;;) {
    double t_old = o->t0, t_new = o->t0, tau = 0;
    if (salta_interrupted())
      return salta__fail(s->err, SALTA_EINTR, "model '%s': interrupted at t = %.17g", s->d->name, run->t);
    if ((st = it->ops->step(it->self, o->tf, &t_old, &t_new)) || (st = check_blowup(s, it, t_new))) return st;
    if (++steps > o->max_steps) return too_many_steps(s, it, t_old, t_new);
    tiny = t_new - t_old <= 4 * DBL_EPSILON * fabs(t_new) ? tiny + 1 : 0;
    if (tiny >= STALL_STEPS) return stalled(s, it, t_old, t_new);
    nlog_before = s->events.nlog;
    nfire = salta__events_locate(&s->events, &ip, run->t, fmax(run->t, t_old), t_new, &tau);
    if (nfire < 0) return nfire;
    if (nfire > 0) {
      if ((st = fire_group(s, it, tau, times, nt, &k))) return st;
      if (s->stats.terminal_event >= 0) {   /* no outputs past it; with terminal_output, one at it */
        if (o->terminal_output && (s->res.nout == 0 || s->res.t[s->res.nout - 1] < tau) && !run->plan_y)
          store_output(s, tau, run->w, run->S);
        return SALTA_OK;
      }
      if (run->stop_counts && salta__plan_stop_reached(s, tau, nlog_before)) {
        s->stats.t_end = tau;
        return SALTA_OK;
      }
      if (salta__at_end(tau, o->tf)) break;
      if ((st = it->ops->restart(it->self, tau, run->w, run->S, s->events.t_next))) return st;
      continue;
    }
    if ((st = outputs_in_step(s, it, times, nt, &k, t_new, 1))) return st;
    if ((st = salta__events_step_done(&s->events, t_new))) return st;
    run->t = t_new;
    final = t_new >= o->tf || salta__at_end(t_new, o->tf);
    if (final || o->record_steps) {
      if ((st = it->ops->end_state(it->self, run->w, final && s->ns > 0 ? run->S : NULL)) ||
          (st = store_step(s, t_new, run->w)))
        return st;
    }
    if (final) {
      if ((st = consistent(s, it, t_new, run->w, run->S))) return st;
      break;
    }
  }
  while (k < nt) store_output(s, times[k], run->w, run->S), ++k;   /* at tf, or past an event there */
  return SALTA_OK;
}

/* ---- the run ------------------------------------------------------------------------ */

int salta__sim_check_options(const salta_sim_options *o, const salta_model_def *d, char *err) {
  int st;
  if (!(o->t0 < o->tf) || !isfinite(o->t0) || !isfinite(o->tf))
    return salta__fail(err, SALTA_EINPUT, "model '%s': need finite t0 < tf, got [%g, %g]", d->name, o->t0, o->tf);
  if ((st = salta__options_check(o, d->name, err))) return st;
  {
    /* far from 0, doubles are spaced too widely for steps and event times to
    ** meet the tolerance over the run (t0 = 1e15: 0.125 s apart) */
    double big = fmax(fabs(o->t0), fabs(o->tf)), ulp = nextafter(big, INFINITY) - big;
    if (ulp > o->rtol * (o->tf - o->t0))
      return salta__fail(err, SALTA_EINPUT,
                         "model '%s': the run [%.17g, %.17g] cannot be resolved in time: doubles there are %g apart, "
                         "more than rtol x (tf - t0) = %g, so steps and event times cannot meet the tolerance; "
                         "shift the time axis to start near 0", d->name, o->t0, o->tf, ulp, o->rtol * (o->tf - o->t0));
  }
  return SALTA_OK;
}

static int check_inputs(salta_sim *s, const salta_sim_options *o, const double *p, const double *x0,
                        const double *times, int nt) {
  const salta_model_def *d = s->d;
  double slack;
  int j, st;
  if ((st = salta__sim_check_options(o, d, s->err))) return st;
  for (j = 0; j < d->np; ++j)
    if (!isfinite(p[j]))
      return salta__fail(s->err, SALTA_EINPUT, "model '%s': parameter '%s' is %g", d->name, d->p_names[j], p[j]);
  for (j = 0; j < s->nx; ++j)
    if (!isfinite(x0[j]))
      return salta__fail(s->err, SALTA_EINPUT, "model '%s': initial state '%s' is %g", d->name, d->x_names[j], x0[j]);
  if (o->atol_vec)
    for (j = 0; j < s->n; ++j)
      if (!(o->atol_vec[j] > 0) || !isfinite(o->atol_vec[j]))
        return salta__fail(s->err, SALTA_EINPUT, "model '%s': atol for '%s' must be positive and finite, got %g",
                           d->name, j < s->nx ? d->x_names[j] : d->z_names[j - s->nx], o->atol_vec[j]);
  /* a grid computed as tf * i / n may overshoot tf by an ulp: allow it */
  slack = 1e-12 * fmax(1.0, fmax(fabs(o->t0), fabs(o->tf)));
  for (j = 0; j < nt; ++j)
    if (!(times[j] >= o->t0 - slack && times[j] <= o->tf + slack) || (j > 0 && times[j] < times[j - 1]))
      return salta__fail(s->err, SALTA_EINPUT, "model '%s': output time %d (%g) is not sorted inside [%g, %g]",
                         d->name, j + 1, times[j], o->t0, o->tf);
  return SALTA_OK;
}

/* Room for nt + 1 outputs (kept across runs while it suffices). */
static int alloc_results(salta_sim *s, int nt) {
  salta__results *r = &s->res;
  size_t n = (size_t)s->n, ns = (size_t)s->ns, ny = (size_t)s->d->ny, cap = (size_t)nt + 1;
  salta__array list[] = {SALTA__ARRAY(r->t, cap), SALTA__ARRAY(r->w, cap * n), SALTA__ARRAY(r->y, cap * ny),
                         SALTA__ARRAY(r->S, cap * n * ns), SALTA__ARRAY(r->dy, cap * ny * ns),
                         SALTA__ARRAY(r->w_start, n)};
  if ((int)cap <= r->cap && s->ns == r->cap_ns) return SALTA_OK;
  salta__arrays_free(list, SALTA__COUNT(list));
  r->cap = r->cap_ns = 0;
  if (salta__arrays_alloc(list, SALTA__COUNT(list))) return SALTA_EMEM;
  r->cap = (int)cap;
  r->cap_ns = s->ns;
  return SALTA_OK;
}

/* The working arrays of a run (lengths for the allocation). */
#define RUN_ARRAYS 13
static size_t run_arrays(salta_sim *s, salta__array *list) {
  salta__run *run = &s->run;
  size_t n = (size_t)s->n, ns = (size_t)s->ns, ny = (size_t)s->d->ny, ne = (size_t)s->d->ne;
  salta__array all[RUN_ARRAYS] = {
    SALTA__ARRAY(run->w, n), SALTA__ARRAY(run->x0, n), SALTA__ARRAY(run->w_minus, n), SALTA__ARRAY(run->w_plus, n),
    SALTA__ARRAY(run->w_step, n), SALTA__ARRAY(run->S, n * ns), SALTA__ARRAY(run->S_step, n * ns),
    SALTA__ARRAY(run->tau_p0, ns), SALTA__ARRAY(run->jump.tau_p, ne * ns), SALTA__ARRAY(run->jump.y_minus, ny),
    SALTA__ARRAY(run->jump.dy_minus, ny * ns), SALTA__ARRAY(run->jump.y_plus, ny),
    SALTA__ARRAY(run->jump.dy_plus, ny * ns)};
  memcpy(list, all, sizeof all);
  return RUN_ARRAYS;
}

/* Releases the run's working state. */
static void end_run(salta_sim *s) {
  salta__array list[RUN_ARRAYS];
  salta__arrays_free(list, run_arrays(s, list));
  free(s->run.plan_x);
  free(s->run.fired);
  memset(&s->run, 0, sizeof s->run);
}

/* Room for the results and the run's working state. */
static int alloc_run(salta_sim *s, int nt) {
  salta__array list[RUN_ARRAYS];
  if (alloc_results(s, nt)) return SALTA_EMEM;
  return salta__arrays_alloc(list, run_arrays(s, list));
}

/* x0 with z solved from g, f finite there, the guards armed. */
static int consistent_start(salta_sim *s, const salta_sim_options *o, const double *x0) {
  const salta_model_def *d = s->d;
  double *w = s->run.w, *xdot = s->run.w_step;
  salta__zfail why;
  int j, st;
  memcpy(w, x0, sizeof(double) * (size_t)s->nx);
  if (s->nz) memcpy(w + s->nx, d->z_start, sizeof(double) * (size_t)s->nz);
  if ((st = salta__start_modes(&s->dae, o->t0, w))) return st;
  if (salta__dae_solve_z(&s->dae, o->t0, w, w + s->nx, &why))
    return salta__fail(s->err, SALTA_EALGEBRAIC,
                       "model '%s': inconsistent initial state at t = %g: Newton on g did not converge; "
                       "algebraic equation g[%d] (for '%s') has the largest residual, %g",
                       d->name, o->t0, why.eq + 1, d->z_names[why.eq], why.residual);
  if (s->nz && salta__dae_factor_gz(&s->dae, o->t0, w))
    return salta__fail(s->err, SALTA_ESOLVER,
                       "model '%s': dg/dz is singular at the initial state (t = %g): the algebraic equations do not "
                       "determine the algebraic variables (an algebraic loop such as a = b, b = a has no unique "
                       "solution)", d->name, o->t0);
  d->f.eval(o->t0, w, w + s->nx, s->dae.p, xdot);
  for (j = 0; j < s->nx; ++j)
    if (!isfinite(xdot[j]))
      return salta__fail(s->err, SALTA_ESOLVER, "model '%s': f for state '%s' is %g at t = %g (initial state)",
                         d->name, d->x_names[j], xdot[j], o->t0);
  s->run.t = o->t0;
  memcpy(s->res.w_start, w, sizeof(double) * (size_t)s->n);
  return salta__events_start(&s->events, o, o->t0, w);
}

/* One run with the integrator method (BDF or ERK; watch: ERK returns
** SALTA__ESTIFF on a stiff model). */
static int run_with(salta_sim *s, const salta_sim_options *o, salta_method method, int watch, const double *x0,
                    const double *times, int nt) {
  salta__integrator it = {NULL, NULL};
  salta__integrator_env env;
  int st, ls = method == SALTA_METHOD_ERK ? SALTA_LS_NONE : salta__use_klu(o, s->n) ? SALTA_LS_KLU : SALTA_LS_DENSE;
  s->stats.method = method;
  s->stats.linear_solver = ls;   /* what the run used, for the caller */
  if ((st = consistent_start(s, o, x0)) || (st = store_step(s, o->t0, s->run.w))) return st;
  if (s->ns > 0 && ((st = salta__sens_init(&s->sens, &s->dae, s->dirs, s->ns)) ||
                    (st = salta__sens_initial(&s->sens, o->t0, s->run.w, s->run.start_follows_p, s->run.S)) ||
                    (st = salta__sens_check(&s->sens, s->run.S, s->n, s->n, o->t0, s->run.w))))
    return st;
  env.dae = &s->dae;
  env.sens = s->ns > 0 ? &s->sens : NULL;
  env.o = o;
  env.linear_solver = ls;
  env.stats = &s->stats, env.track = &s->track;
  env.watch_stiffness = watch;
  st = method == SALTA_METHOD_ERK ? salta__erk_create(&it, &env) : salta__ida_create(&it, &env);
  if (st == SALTA_OK) salta__plan_form(s, &it), st = it.ops->start(it.self, o->t0, s->run.w, s->run.S);
  if (st == SALTA_OK) st = segment_loop(s, &it, times, nt);
  if (it.ops) it.ops->free(it.self);
  return st;
}

int salta__sim_end_record(const salta_sim *s) {
  int k;
  for (k = s->events.nlog - 1; k >= 0 && (s->stats.terminal_event >= 0 || s->run.stopped); --k)
    if (s->run.stopped || s->events.log[k].event == s->stats.terminal_event) return k;
  return -1;
}

/* d t_end / dp: the end record's tau_p, or zeros when the run reached tf. */
static int store_t_end(salta_sim *s) {
  const salta__results *r = &s->res;
  size_t ns = (size_t)s->ns;
  int k = salta__sim_end_record(s);
  const double *src = k >= 0 && r->tau_p.n >= ((size_t)k + 1) * ns ? r->tau_p.v + (size_t)k * ns : NULL;
  return salta__dbuf_push(&s->res.t_end_p, src, ns, s->err);
}

static void reset_stats(salta_sim *s, const salta_sim_options *o) {
  memset(&s->stats, 0, sizeof s->stats);
  s->stats.terminal_event = -1;
  s->stats.t_end = o->tf;
}

/* The run with the chosen integrator; AUTO's ERK that finds the model
** stiff starts over with BDF, which the simulation keeps. */
static int run_chosen(salta_sim *s, const salta_sim_options *o, const double *x0, const double *times, int nt) {
  salta_method method = o->method == SALTA_METHOD_AUTO ? s->auto_method : o->method;
  int st;
  st = run_with(s, o, method, o->method == SALTA_METHOD_AUTO && method == SALTA_METHOD_ERK, x0, times, nt);
  if (st != SALTA__ESTIFF) return st;
  if (s->ns > 0) salta__sens_free(&s->sens);
  clear_results(s);
  reset_stats(s, o);
  if (s->run.fired) memset(s->run.fired, 0, sizeof(int) * (size_t)s->d->ne), s->run.stopped = 0;
  s->dae.alg.newton_iters = 0;
  s->dae.bad.sp = NULL;
  s->auto_method = SALTA_METHOD_BDF;
  s->stats.stiff_restart = 1;
  return run_with(s, o, SALTA_METHOD_BDF, 0, x0, times, nt);
}

void salta__sim_bind(salta_sim *s, const salta_model_def *d) {
  if (s->d == d) return;
  s->d = s->events.d = d;
  salta__dae_bind(&s->dae, d);
}

int salta__sim_run(salta_sim *s, const salta_sim_options *o, const double *p, const double *x0,
                   const double *times, int nt) {
  static const salta__out_plan everything = {NULL, 0, 1, NULL, 0, 0};
  return salta__sim_run_planned(s, o, p, x0, times, nt, &everything);
}

int salta_sim_run(salta_sim *s, const salta_sim_options *o, const double *p, const double *x0,
                  const double *times, int nt) {
  if (!s) return SALTA_EINPUT;
  salta__sim_bind(s, salta_model_def_get(s->model));   /* once per run: a swap lands between runs */
  return salta__sim_run(s, o, p, x0, times, nt);
}

int salta__sim_run_planned(salta_sim *s, const salta_sim_options *o, const double *p, const double *x0,
                           const double *times, int nt, const salta__out_plan *plan) {
  const salta_model_def *d;
  int st;
  if (!s) return SALTA_EINPUT;
  d = s->d;
  if (!o || !p || (nt > 0 && !times) || nt < 0)
    return salta__fail(s->err, SALTA_EINPUT, "model '%s': salta_sim_run needs options, parameters and %s",
                       d->name, nt < 0 ? "a non-negative number of output times" : "the output times");
  clear_results(s);
  s->res.planned = plan->y != NULL;
  reset_stats(s, o);
  s->err[0] = '\0';
  s->stats.linear_solver = SALTA_LS_NONE;
  if ((st = check_inputs(s, o, p, x0 ? x0 : d->x_start, times, nt))) return st;
  if ((st = alloc_run(s, nt) ? SALTA_EMEM : salta__plan_start(s, plan, nt))) {
    end_run(s);
    return st == SALTA_EMEM ? salta__fail(s->err, st, "out of memory")
                            : salta__fail(s->err, st, "model '%s': a planned output is not an output", d->name);
  }
  s->run.o = o;
  s->run.jump.outputs = plan->event_outputs;
  if (plan->stop_counts && !(s->run.fired = calloc((size_t)d->ne + 1, sizeof(int)))) {
    end_run(s);
    return salta__fail(s->err, SALTA_EMEM, "out of memory");
  }
  s->run.stop_counts = plan->stop_counts, s->run.stop_after = plan->stop_after;
  salta__dae_set_params(&s->dae, p);
  s->dae.alg.newton_iters = 0;
  s->dae.bad.sp = NULL;
  s->run.start_follows_p = salta__start_follows_p(d, x0);
  st = salta__start_values(d, o->t0, o->tf, s->dae.p, x0, s->run.x0, s->err);
  if (st == SALTA_OK) st = run_chosen(s, o, s->run.x0, times, nt);
  if (st == SALTA_OK && s->ns > 0) st = store_t_end(s);
  s->stats.guard_evals = s->events.probes;
  s->stats.alg_newton_iters = s->dae.alg.newton_iters;
  s->stats.events = s->events.nlog;
  if (s->ns > 0) salta__sens_free(&s->sens);
  end_run(s);
  salta__dae_set_params(&s->dae, NULL);
  if (st == SALTA_OK) s->err[0] = '\0';   /* what a recovered failure wrote */
  return st;
}

/* ---- lifecycle and queries ------------------------------------------------------------ */

int salta_sim_create(salta_sim **out, salta_model *model) {
  salta_sim *s;
  if (!out) return SALTA_EINPUT;
  *out = NULL;
  if (!model) return SALTA_EINPUT;
  s = calloc(1, sizeof *s);
  if (!s) return SALTA_EMEM;
  s->model = model;
  s->d = salta_model_def_get(model);
  s->nx = s->d->nx;
  s->nz = s->d->nz;
  s->n = s->nx + s->nz;
  s->auto_method = SALTA_METHOD_ERK;
  if (salta__dae_init(&s->dae, s->d, s->err) || salta__events_init(&s->events, &s->dae) ||
      salta__track_init(&s->track, &s->dae)) {
    salta_sim_free(&s);
    return SALTA_EMEM;
  }
  *out = s;
  return SALTA_OK;
}

void salta_sim_free(salta_sim **sim) {
  salta_sim *s;
  salta__results *r;
  if (!sim || !*sim) return;
  s = *sim;
  r = &s->res;
  salta__events_free(&s->events), salta__track_free(&s->track);
  salta__dae_free(&s->dae);
  free(r->t); free(r->w); free(r->y); free(r->S); free(r->dy); free(r->py); free(r->w_start);
  free(r->pstep); free(r->pth); free(r->prec); salta__dbuf_free(&r->pcoef);
  salta__dbuf_free(&r->step_t); salta__dbuf_free(&r->step_w);
  salta__dbuf_free(&r->tau_p); salta__dbuf_free(&r->S_minus); salta__dbuf_free(&r->S_plus);
  salta__dbuf_free(&r->y_minus); salta__dbuf_free(&r->dy_minus);
  salta__dbuf_free(&r->y_plus); salta__dbuf_free(&r->dy_plus); salta__dbuf_free(&r->t_end_p);
  free(s->dirs);
  free(s);
  *sim = NULL;
}

const char *salta_sim_errmsg(const salta_sim *s) { return s ? s->err : "no simulation"; }
int salta_sim_nout(const salta_sim *s) { return s && !s->res.planned ? s->res.nout : 0; }
int salta_sim_nevents(const salta_sim *s) { return s ? s->events.nlog : 0; }
int salta_sim_nsteps(const salta_sim *s) { return s ? (int)s->res.step_t.n : 0; }
void salta_sim_stats_get(const salta_sim *s, salta_sim_stats *stats) { if (s && stats) *stats = s->stats; }

/* An index outside [0, n): the message names what it indexes and the range. */
static int bad_index(salta_sim *s, const char *what, int k, int n) {
  if (n == 0) return salta__fail(s->err, SALTA_EINPUT, "model '%s': %s %d asked for, but the run has none", s->d->name, what, k);
  return salta__fail(s->err, SALTA_EINPUT, "model '%s': %s %d is out of range (0 to %d)", s->d->name, what, k, n - 1);
}

int salta_sim_out(salta_sim *s, int k, double *t, const double **x, const double **z, const double **y) {
  if (!s) return SALTA_EINPUT;
  if (k < 0 || k >= salta_sim_nout(s)) return bad_index(s, "output", k, salta_sim_nout(s));
  if (t) *t = s->res.t[k];
  if (x) *x = s->res.w + (size_t)k * s->n;
  if (z) *z = s->res.w + (size_t)k * s->n + s->nx;
  if (y) *y = s->res.y + (size_t)k * s->d->ny;
  return SALTA_OK;
}

int salta_sim_event(salta_sim *s, int k, salta_event_record *rec) {
  const salta__event_rec *e;
  if (!s) return SALTA_EINPUT;
  if (!rec) return salta__fail(s->err, SALTA_EINPUT, "model '%s': salta_sim_event needs a record to fill", s->d->name);
  if (k < 0 || k >= s->events.nlog) return bad_index(s, "event record", k, s->events.nlog);
  e = &s->events.log[k];
  rec->t = e->t, rec->event = e->event, rec->cascade = e->cascade;
  rec->group = e->group, rec->group_size = e->group_size;
  rec->rate = e->rate, rec->rate_scale = e->rscale;
  rec->x_minus = salta__events_w_minus(&s->events, k);
  rec->z_minus = rec->x_minus + s->nx;
  rec->x_plus = salta__events_w_plus(&s->events, k);
  rec->z_plus = rec->x_plus + s->nx;
  return SALTA_OK;
}

int salta_sim_step(salta_sim *s, int k, double *t, const double **x, const double **z) {
  if (!s) return SALTA_EINPUT;
  if (k < 0 || k >= salta_sim_nsteps(s)) return bad_index(s, "recorded step", k, salta_sim_nsteps(s));
  if (t) *t = s->res.step_t.v[k];
  if (x) *x = s->res.step_w.v + (size_t)k * s->n;
  if (z) *z = s->res.step_w.v + (size_t)k * s->n + s->nx;
  return SALTA_OK;
}

int salta_sim_set_sens(salta_sim *s, const int *dirs, int ns) {
  int k, *copy = NULL;
  if (!s) return SALTA_EINPUT;
  if (ns < 0 || (ns > 0 && !dirs))
    return salta__fail(s->err, SALTA_EINPUT, "model '%s': salta_sim_set_sens needs ns >= 0 directions, got %d%s",
                       s->d->name, ns, ns > 0 ? " and no array" : "");
  if (ns > s->d->np + s->nx)   /* checked before dirs is read: a wrong count must not read past it */
    return salta__fail(s->err, SALTA_EINPUT, "model '%s': %d sensitivity directions, but the model has only %d "
                       "(%d parameters and %d states)", s->d->name, ns, s->d->np + s->nx, s->d->np, s->nx);
  for (k = 0; k < ns; ++k)
    if (dirs[k] >= s->d->np || dirs[k] < -s->nx)
      return salta__fail(s->err, SALTA_EINPUT, "model '%s': sensitivity direction %d is neither a parameter nor a state",
                         s->d->name, dirs[k]);
  if (ns > 0 && !(copy = malloc(sizeof(int) * (size_t)ns))) return salta__fail(s->err, SALTA_EMEM, "out of memory");
  if (ns > 0) memcpy(copy, dirs, sizeof(int) * (size_t)ns);
  free(s->dirs);
  s->dirs = copy;
  s->ns = ns;
  clear_results(s);   /* they were computed with the old directions */
  return SALTA_OK;
}

int salta_sim_nsens(const salta_sim *s) { return s ? s->ns : 0; }

int salta_sim_out_sens(salta_sim *s, int k, const double **S, const double **dy) {
  if (!s) return SALTA_EINPUT;
  if (s->ns == 0) return salta__fail(s->err, SALTA_EINPUT, "model '%s': the run has no sensitivities (salta_sim_set_sens)", s->d->name);
  if (k < 0 || k >= salta_sim_nout(s)) return bad_index(s, "output", k, salta_sim_nout(s));
  if (S) *S = s->res.S + (size_t)k * s->n * s->ns;
  if (dy) *dy = s->res.dy + (size_t)k * s->d->ny * s->ns;
  return SALTA_OK;
}

int salta_sim_event_sens(salta_sim *s, int k, salta_event_sens *rec) {
  const salta__results *r;
  size_t ns, nS, ny;
  if (!s) return SALTA_EINPUT;
  if (!rec) return salta__fail(s->err, SALTA_EINPUT, "model '%s': salta_sim_event_sens needs a record to fill", s->d->name);
  if (s->ns == 0) return salta__fail(s->err, SALTA_EINPUT, "model '%s': the run has no sensitivities (salta_sim_set_sens)", s->d->name);
  if (k < 0 || k >= s->events.nlog) return bad_index(s, "event record", k, s->events.nlog);
  r = &s->res;
  ns = (size_t)s->ns, nS = (size_t)s->n * ns, ny = (size_t)s->d->ny;
  if (r->S_minus.n < ((size_t)k + 1) * nS)   /* failed before its jump, or not recorded */
    return salta__fail(s->err, SALTA_EINPUT, "model '%s': event record %d has no sensitivities (the run failed before "
                       "its jump)", s->d->name, k);
  rec->tau_p = r->tau_p.v + (size_t)k * ns;
  rec->s_minus = r->S_minus.v + (size_t)k * nS;
  rec->s_plus = r->S_plus.v + (size_t)k * nS;
  rec->y_minus = r->y_minus.v + (size_t)k * ny;
  rec->dy_minus = r->dy_minus.v + (size_t)k * ny * ns;
  rec->y_plus = r->y_plus.v + (size_t)k * ny;
  rec->dy_plus = r->dy_plus.v + (size_t)k * ny * ns;
  return SALTA_OK;
}

int salta_sim_t_end_sens(salta_sim *s, const double **t_end_p) {
  if (!s) return SALTA_EINPUT;
  if (!t_end_p) return salta__fail(s->err, SALTA_EINPUT, "model '%s': salta_sim_t_end_sens needs a pointer to fill", s->d->name);
  if (s->ns == 0) return salta__fail(s->err, SALTA_EINPUT, "model '%s': the run has no sensitivities (salta_sim_set_sens)", s->d->name);
  if (s->res.t_end_p.n < (size_t)s->ns)
    return salta__fail(s->err, SALTA_EINPUT, "model '%s': no end time's sensitivities: the last run failed, or there "
                       "was none", s->d->name);
  *t_end_p = s->res.t_end_p.v;
  return SALTA_OK;
}

const double *salta__sim_event_tau_p(const salta_sim *s, int k) {
  size_t ns = (size_t)s->ns;
  if (ns == 0 || k < 0 || k >= s->events.nlog || s->res.tau_p.n < ((size_t)k + 1) * ns) return NULL;
  return s->res.tau_p.v + (size_t)k * ns;
}
