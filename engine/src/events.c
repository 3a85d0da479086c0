/*
** events.c -- arming, groups and their resets, event iteration, sliding
** modes, the log and the Zeno checks (see events.h; location is locate.c).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "errors.h"
#include "events.h"
#include "tol.h"

/* The per-guard and per-unknown arrays, each an allocation of its own
** (listed once here, for the allocation and for the release). */
#define EVENT_ARRAYS 38
static size_t event_arrays(salta__events *ev, size_t m, size_t n, salta__array *list) {
  const salta_sparse_def *e = ev->d ? ev->d->e.d : NULL;
  size_t nnz[4] = {e ? (size_t)e[SALTA_WRT_X].nnz : 0, e ? (size_t)e[SALTA_WRT_Z].nnz : 0, 0,
                   e ? (size_t)e[SALTA_WRT_T].nnz : 0};
  salta__array all[EVENT_ARRAYS] = {
    SALTA__ARRAY(ev->ejac[SALTA_WRT_X], nnz[SALTA_WRT_X]), SALTA__ARRAY(ev->ejac[SALTA_WRT_Z], nnz[SALTA_WRT_Z]),
    SALTA__ARRAY(ev->ejac[SALTA_WRT_T], nnz[SALTA_WRT_T]),
    SALTA__ARRAY(ev->arming, m), SALTA__ARRAY(ev->arming_pre, m), SALTA__ARRAY(ev->crossing, m),
    SALTA__ARRAY(ev->fire, m), SALTA__ARRAY(ev->stuck_list, m), SALTA__ARRAY(ev->next, m),
    SALTA__ARRAY(ev->in_group, m), SALTA__ARRAY(ev->fired_now, m), SALTA__ARRAY(ev->entering, m),
    SALTA__ARRAY(ev->stuck_t, m), SALTA__ARRAY(ev->leave_t, m), SALTA__ARRAY(ev->arm_t, m),
    SALTA__ARRAY(ev->band0, m), SALTA__ARRAY(ev->band, m), SALTA__ARRAY(ev->side, m), SALTA__ARRAY(ev->g_start, m),
    SALTA__ARRAY(ev->g_probe, m), SALTA__ARRAY(ev->g_work, m), SALTA__ARRAY(ev->rate, m),
    SALTA__ARRAY(ev->rscale, m), SALTA__ARRAY(ev->rate_p, m), SALTA__ARRAY(ev->rscale_p, m),
    SALTA__ARRAY(ev->quiet_margin, m), SALTA__ARRAY(ev->g_pre, m), SALTA__ARRAY(ev->rate0, m),
    SALTA__ARRAY(ev->rate1, m), SALTA__ARRAY(ev->kbound, m), SALTA__ARRAY(ev->ahead, m), SALTA__ARRAY(ev->w_probe, n),
    SALTA__ARRAY(ev->flow, n), SALTA__ARRAY(ev->flow_p, n), SALTA__ARRAY(ev->samples, (SALTA__SAMPLES + 1) * m),
    SALTA__ARRAY(ev->brackets, m), SALTA__ARRAY(ev->cols, nnz[SALTA_WRT_X]), SALTA__ARRAY(ev->read_cols, n)};
  memcpy(list, all, sizeof all);
  return EVENT_ARRAYS;
}

/* The states the guards read, when that is all a probe of every guard
** needs: no algebraics (solved from every state) and no hidden reads. */
static void read_states(salta__events *ev) {
  const salta__dae *a = ev->dae;
  const salta_sparse_def *ex = &ev->d->e.d[SALTA_WRT_X];
  int j, k;
  ev->nread = -1;
  if (a->nz > 0) return;
  for (j = 0; j < ev->ne; ++j)
    if (salta__hidden_reads(ev, j)) return;
  for (k = 0; k < a->nx; ++k) ev->read_cols[k] = 0;
  for (k = 0; k < ex->nnz; ++k) ev->read_cols[ex->col[k]] = 1;
  for (k = 0, ev->nread = 0; k < a->nx; ++k)
    if (ev->read_cols[k]) ev->read_cols[ev->nread++] = k;
}

int salta__events_init(salta__events *ev, salta__dae *dae) {
  const salta_model_def *d = dae->d;
  const salta_sparse_def *ex = &d->e.d[SALTA_WRT_X];
  salta__array list[EVENT_ARRAYS];
  int k;
  memset(ev, 0, sizeof *ev);
  ev->dae = dae;
  ev->d = d;
  ev->ne = d->ne;
  if (salta__arrays_alloc(list, event_arrays(ev, (size_t)d->ne + 1, (size_t)dae->n + 1, list))) {
    salta__events_free(ev);
    return salta__fail(dae->err, SALTA_EMEM, "out of memory");
  }
  ev->col_ptr = dae->guard_row_ptr[SALTA_WRT_X];
  for (k = 0; k < ex->nnz; ++k) ev->cols[k] = ex->col[dae->guard_row_ent[SALTA_WRT_X][k]];
  read_states(ev);
  return SALTA_OK;
}

void salta__events_free(salta__events *ev) {
  salta__array list[EVENT_ARRAYS];
  salta__arrays_free(list, event_arrays(ev, 0, 0, list));
  free(ev->log);
  salta__dbuf_free(&ev->w_minus);
  salta__dbuf_free(&ev->w_plus);
  memset(ev, 0, sizeof *ev);
}

/* ---- firing ------------------------------------------------------------------------- */

static int log_group(salta__events *ev, double tau, const double *wm, const double *wp) {
  int k, st, n = ev->dae->n, first = ev->nlog;
  for (k = 0; k < ev->nfire; ++k) {
    salta__event_rec *r;
    if (ev->nlog == ev->log_cap) {
      int cap = ev->log_cap ? 2 * ev->log_cap : 64;
      salta__event_rec *nl = realloc(ev->log, sizeof *nl * (size_t)cap);
      if (!nl) return salta__fail(ev->dae->err, SALTA_EMEM, "out of memory");
      ev->log = nl;
      ev->log_cap = cap;
    }
    if ((st = salta__dbuf_push(&ev->w_minus, wm, (size_t)n, ev->dae->err)) ||
        (st = salta__dbuf_push(&ev->w_plus, wp, (size_t)n, ev->dae->err)))
      return st;
    r = &ev->log[ev->nlog++];
    r->t = tau, r->event = ev->fire[k], r->group = first, r->group_size = ev->nfire, r->cascade = ev->cascade;
    r->rate = ev->rate[ev->fire[k]], r->rscale = ev->rscale[ev->fire[k]];
  }
  return SALTA_OK;
}

static int is_breakpoint(const salta__events *ev, int j) {
  return ev->d->e_flags && (ev->d->e_flags[j] & SALTA_EVENT_BREAKPOINT);
}

/* Whether the logged group starting at record first holds a model event
** (not only input breakpoints, which are the engine's own). */
static int group_counts(const salta__events *ev, int first) {
  int k;
  for (k = first; k < first + ev->log[first].group_size; ++k)
    if (!is_breakpoint(ev, ev->log[k].event)) return 1;
  return 0;
}

/* The time of the counted group count counted groups before the last one,
** or NAN when the log holds fewer. */
static double group_time_back(const salta__events *ev, int count) {
  int i = ev->log[ev->nlog - 1].group, k = 0;
  while (k < count) {
    if (i == 0) return NAN;
    i = ev->log[i - 1].group;
    k += group_counts(ev, i);
  }
  return ev->log[i].t;
}

/* Too many events, or zeno_count groups (event instants: a network's
** buses switching together are one) within zeno_window; input breakpoints
** count toward neither. */
static int check_counts(salta__events *ev, double tau) {
  const salta_sim_options *o = ev->o;
  const salta_model_def *d = ev->d;
  const char *last = d->e_names[ev->fire[ev->nfire - 1]];
  double t_back;
  int k;
  for (k = 0; k < ev->nfire; ++k) ev->ncounted += !is_breakpoint(ev, ev->fire[k]);
  if (!group_counts(ev, ev->log[ev->nlog - 1].group)) return SALTA_OK;
  if (ev->ncounted > o->max_events)
    return salta__fail(ev->dae->err, SALTA_ESOLVER,
                       "model '%s': more than max_events = %d events: event '%s' at t = %.17g was number %d",
                       d->name, o->max_events, last, tau, ev->ncounted);
  if (o->zeno_count > 0 && (t_back = group_time_back(ev, o->zeno_count - 1), tau - t_back <= o->zeno_window))
    return salta__fail(ev->dae->err, SALTA_ESOLVER,
                       "model '%s': Zeno cascade: %d event instants within %g s up to t = %.17g (last: event '%s', "
                       "event count %d)",
                       d->name, o->zeno_count, tau - t_back, tau, last, ev->ncounted);
  return SALTA_OK;
}

/* The flow at (t, w) and the rates along it of the guards rows[0 .. nrows)
** (rows NULL: all). */
static int rates_at(salta__events *ev, double t, const double *w, const char *where, const int *rows, int nrows,
                    double *flow, double *rate, double *rscale, double *const *jac) {
  salta__dae *a = ev->dae;
  if (salta__dae_flow(a, t, w, flow, flow + a->nx))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': g_z is singular %s at t = %.17g", ev->d->name, where, t);
  salta__dae_guard_rates(a, t, w, flow, flow + a->nx, rows, nrows, rate, rscale, jac);
  return SALTA_OK;
}

/* A guard found crossing against its direction (a ball "landing" while it
** still rises) is the numerical trace of events accumulating at a Zeno
** point or of a grazing contact: an error, not an event. The rates also
** set each guard's "at zero" band: the location's time tolerance times
** the rate, at least its value scale. */
static int check_directions(salta__events *ev, double tau, const double *wm) {
  const salta_model_def *d = ev->d;
  int k, j, st;
  if ((st = rates_at(ev, tau, wm, "at an event", NULL, 0, ev->flow, ev->rate, ev->rscale, ev->ejac))) return st;
  for (k = 0; k < ev->nfire && ev->cascade == 0; ++k) {   /* a cascade's guards did not cross in time */
    int dir;
    j = ev->fire[k];
    dir = d->e_direction[j];
    if (dir != SALTA_DIR_BOTH && ev->rate[j] * dir < 0)
      return salta__fail(ev->dae->err, SALTA_ESOLVER,
                         "model '%s': Zeno limit or grazing contact: event '%s' at t = %.17g has its guard "
                         "crossing zero against its direction (rate %g); events accumulate there (event count %d)",
                         d->name, d->e_names[j], tau, ev->rate[j], ev->ncounted);
  }
  for (j = 0; j < ev->ne; ++j) {
    double moved = 16 * fabs(ev->rate[j]) * salta__time_tol(tau);
    ev->band[j] = moved > ev->band0[j] ? moved : ev->band0[j];
  }
  return SALTA_OK;
}

/* A sliding mode: guard j, which fired earlier at this instant, is again
** at zero with the flow driving it into its firing side: the switches
** send the flow straight back across each other's surface. */
static int sliding_error(salta__events *ev, double tau, int j) {
  const salta_model_def *d = ev->d;
  char names[512];
  size_t len = 0;
  int k;
  names[0] = '\0';
  for (k = 0; k < ev->nfire && len + 1 < sizeof names; ++k)
    len += (size_t)snprintf(names + len, sizeof names - len, "%s'%s'", k ? ", " : "", d->e_names[ev->fire[k]]);
  return salta__fail(ev->dae->err, SALTA_ESOLVER,
                     "model '%s': sliding mode at t = %.17g: the resets of %s send the flow straight back across the "
                     "guard of event '%s', which fired at this instant already (its rate %g before them, %g after: "
                     "both sides push toward the surface), so the trajectory would slide along it; give the switch "
                     "hysteresis or a smooth transition",
                     d->name, tau, names, d->e_names[j], ev->rate[j], ev->rate_p[j]);
}

/* After the resets: a guard left at zero is "stuck" until it leaves its
** firing side; one whose reset turned it around, so that the flow carries it
** off its firing side, is armed at once ("leaving"): its next crossing may
** come within the next step (a ball's re-bounce). An armed guard outside the
** group that the resets left where it was, short of its firing side, stays
** armed: it is still on its way to a crossing of its own, however close
** (the buses of a network reaching a threshold a few ulps apart). A guard
** outside the group at zero that the flow before the resets did not drive
** into its firing side and the flow after them does is crossing now: it
** fires in the next round ("entering"; a relay switching back), or, when
** it fired at this instant already, the switches chatter: a sliding mode. */
static int rearm_after(salta__events *ev, double tau, const double *wp) {
  const salta__dae *a = ev->dae;
  const salta_model_def *d = ev->d;
  int j, k, st, nstuck = 0;
  d->e.eval(tau, wp, wp + a->nx, a->p, ev->g_start);
  ev->probes++;
  for (j = 0; j < ev->ne; ++j) {
    double e = ev->g_start[j];
    if (!isfinite(e))
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': the guard of event '%s' is %g at t = %.17g (after the resets)",
                         d->name, d->e_names[j], e, tau);
    if (salta__is_clear_of_band(ev, j, e) || (salta__is_armed(ev->arming_pre[j]) && !ev->in_group[j] &&
                                              salta__is_clear(ev, j, e) && fabs(e - ev->g_pre[j]) <= ev->band[j]))
      ev->arming[j] = SALTA__ARMED;
    else
      ev->arming[j] = fabs(e) <= ev->band[j] ? SALTA__STUCK : SALTA__DISARMED;
    ev->entering[j] = 0;
    if (ev->in_group[j] && d->e_direction[j] == SALTA_DIR_BOTH) ev->side[j] = -ev->side[j];   /* it crossed */
    salta__note_side(ev, j, e);
    if (ev->arming[j] == SALTA__STUCK) ev->stuck_t[j] = tau;
    if (ev->arming[j] == SALTA__STUCK && d->e_direction[j] != SALTA_DIR_BOTH) ev->stuck_list[nstuck++] = j;
  }
  /* the next step starts from the rates before the resets (the curvature
  ** bound's first point), and from the exact ones after them for the
  ** guards left at zero, whose arming they decide */
  memcpy(ev->rate0, ev->rate, sizeof(double) * (size_t)ev->ne);
  ev->rate0_valid = 1;
  if (nstuck == 0) return SALTA_OK;
  if ((st = rates_at(ev, tau, wp, "after an event", ev->stuck_list, nstuck, ev->flow_p, ev->rate_p, ev->rscale_p,
                     NULL)))
    return st;
  for (k = 0; k < nstuck; ++k) {   /* the stuck one-sided guards, in order */
    int j = ev->stuck_list[k], dir = d->e_direction[j];
    ev->rate0[j] = ev->rate_p[j];
    if (ev->rate_p[j] * dir < 0) {   /* turned around */
      ev->arming[j] = SALTA__LEAVING;
      ev->leave_t[j] = tau + 1e-12 * fmax(1.0, fabs(tau));
    } else if (!ev->in_group[j] && ev->rate_p[j] * dir > SALTA_GRAZING_RATIO * ev->rscale_p[j] &&
               ev->rate[j] * dir < SALTA_GRAZING_RATIO * ev->rscale[j]) {
      if (ev->fired_now[j]) return sliding_error(ev, tau, j);
      ev->entering[j] = 1;
    }
  }
  return SALTA_OK;
}

/* Whether guard j went from g_pre (clear) to clearly past zero on its
** firing side at e: a reset pushed it across. */
static int pushed_across(const salta__events *ev, int j, double e) {
  double before = ev->g_pre[j];
  switch (ev->d->e_direction[j]) {
    case SALTA_DIR_DOWN: return before > 0 && e < -ev->band[j];
    case SALTA_DIR_UP: return before < 0 && e > ev->band[j];
    default: return before * e < 0 && fabs(e) > 0.1 * ev->band[j];
  }
}

/* The guards outside the group (in_group) that its resets pushed across
** (armed ones), or left entering their firing side. */
static void find_next(salta__events *ev) {
  int j;
  ev->nnext = 0;
  for (j = 0; j < ev->ne; ++j)
    if (!ev->in_group[j] && ((salta__is_armed(ev->arming_pre[j]) && pushed_across(ev, j, ev->g_start[j])) ||
                             ev->entering[j]))
      ev->next[ev->nnext++] = j;
}

int salta__events_fire(salta__events *ev, double tau, const double *wm, double *wp) {
  int st, k;
  /* the guards before the resets: at the located instant, or where the
  ** previous round's resets left them */
  memcpy(ev->g_pre, ev->cascade == 0 ? ev->g_probe : ev->g_start, sizeof(double) * (size_t)ev->ne);
  memcpy(ev->arming_pre, ev->arming, sizeof *ev->arming * (size_t)ev->ne);
  if (ev->cascade == 0) memset(ev->fired_now, 0, sizeof(int) * (size_t)ev->ne);
  if ((st = check_directions(ev, tau, wm))) return st;
  if ((st = salta__dae_reset(ev->dae, ev->fire, ev->nfire, tau, wm, wp))) return st;
  if ((st = log_group(ev, tau, wm, wp))) return st;
  if ((st = check_counts(ev, tau))) return st;
  for (k = 0; k < ev->nfire; ++k) ev->in_group[ev->fire[k]] = ev->fired_now[ev->fire[k]] = 1;
  if ((st = rearm_after(ev, tau, wp)) == SALTA_OK) find_next(ev);
  for (k = 0; k < ev->nfire; ++k) ev->in_group[ev->fire[k]] = 0;
  return st;
}

int salta__events_next_round(salta__events *ev, double tau) {
  const salta_model_def *d = ev->d;
  int k;
  if (ev->nnext == 0) {
    ev->cascade = 0;
    return 0;
  }
  if (ev->cascade >= SALTA__CASCADE_MAX) {
    char names[512];
    size_t len = 0;
    names[0] = '\0';
    for (k = 0; k < ev->nfire && len + 1 < sizeof names; ++k)
      len += (size_t)snprintf(names + len, sizeof names - len, "%s'%s'", k ? ", " : "", d->e_names[ev->fire[k]]);
    for (k = 0; k < ev->nnext && len + 1 < sizeof names; ++k)
      len += (size_t)snprintf(names + len, sizeof names - len, ", '%s'", d->e_names[ev->next[k]]);
    return salta__fail(ev->dae->err, SALTA_ESOLVER,
                       "model '%s': event iteration does not settle at t = %.17g: after %d rounds the resets of %s "
                       "keep pushing guards across zero (a loop of events)",
                       d->name, tau, SALTA__CASCADE_MAX, names);
  }
  memcpy(ev->fire, ev->next, sizeof(int) * (size_t)ev->nnext);
  ev->nfire = ev->nnext;
  ev->nnext = 0;
  return ++ev->cascade, ev->nfire;
}

/* A guard whose reset sent it off its firing side ("leaving") but which is
** found deeper on that side without ever having been clear has been lost
** to an accumulation of events (a ball at a Zeno limit falls through the
** floor): an error. A guard the reset did not turn around (a one-shot
** event) just stays disarmed until it is clear. */
int salta__events_step_done(salta__events *ev, double t) {
  const salta_model_def *d = ev->d;
  int j;
  for (j = 0; j < ev->ne; ++j) {
    double e = ev->g_probe[j];
    if (ev->arming[j] == SALTA__LEAVING && !(ev->arm_t[j] <= t) && fabs(e) > ev->band[j] && t > ev->leave_t[j] &&
        salta__on_firing_side(ev, j, e))
      return salta__fail(ev->dae->err, SALTA_ESOLVER,
                         "model '%s': Zeno limit: event '%s' fired at t = %.17g and its reset turned the "
                         "guard around, but the guard never got clear and is %g at t = %.17g (event count %d): "
                         "events accumulate there",
                         d->name, d->e_names[j], ev->stuck_t[j], e, t, ev->ncounted);
    if (ev->arm_t[j] <= t) ev->arming[j] = SALTA__ARMED;
    salta__note_side(ev, j, e);
  }
  memcpy(ev->g_start, ev->g_probe, sizeof(double) * (size_t)ev->ne);
  memcpy(ev->rate0, ev->rate1, sizeof(double) * (size_t)ev->ne);
  ev->rate0_valid = 1;
  return SALTA_OK;
}

int salta__events_start(salta__events *ev, const salta_sim_options *o, double t0, const double *w) {
  const salta__dae *a = ev->dae;
  const salta_model_def *d = ev->d;
  int j;
  ev->o = o;
  ev->nlog = ev->ncounted = ev->nfire = ev->nnext = ev->cascade = 0;
  ev->w_minus.n = ev->w_plus.n = 0;
  ev->probes = 0;
  ev->bad_guard = -1;
  ev->rate0_valid = 0;
  if (ev->ne == 0) return SALTA_OK;
  d->e.eval(t0, w, w + a->nx, a->p, ev->g_start);
  ev->probes++;
  for (j = 0; j < ev->ne; ++j) {
    double e = ev->g_start[j];
    if (!isfinite(e))
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': the guard of event '%s' is %g at t = %g", d->name,
                         d->e_names[j], e, t0);
    ev->band0[j] = ev->band[j] = 1e-9 * fmax(1.0, fabs(e));
    ev->arming[j] = salta__is_clear(ev, j, e) ? SALTA__ARMED : SALTA__DISARMED;
    ev->entering[j] = 0;
    ev->side[j] = 0;
    ev->ahead[j] = INFINITY;
    salta__note_side(ev, j, e);
  }
  return SALTA_OK;
}
