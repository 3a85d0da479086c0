/*
** events.c -- arming, crossing location, groups, the log and the Zeno
** checks (see events.h).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "events.h"
#include "tol.h"

/* Samples of the interpolant per step. A guard that dips into its firing
** side and back within one step (two balls grazing past each other in one
** long ballistic step) shows between them: through every three consecutive
** samples a parabola is fitted whose vertex, when it lies inside and on the
** firing side, is checked too (exact for guards quadratic in time). */
#define SAMPLES 4

int salta__events_init(salta__events *ev, salta__dae *dae) {
  const salta_model_def *d = dae->d;
  const salta_sparse_def *ex = &d->e.d[SALTA_WRT_X];
  size_t m = (size_t)d->ne + 1, n = (size_t)dae->n + 1;
  double *p;
  int *q, k;
  memset(ev, 0, sizeof *ev);
  ev->dae = dae;
  ev->d = d;
  ev->ne = d->ne;
  /* one block of per-guard flags, one of values */
  q = ev->armed = calloc(9 * m, sizeof(int));
  p = ev->stuck_t = calloc((13 + SAMPLES + 1) * m + 4 * n, sizeof(double));
  ev->brackets = calloc(m, sizeof(salta__bracket));
  ev->cols = malloc(sizeof(int) * ((size_t)ex->nnz + 1));
  ev->ejac[SALTA_WRT_X] = malloc(sizeof(double) * ((size_t)d->e.d[SALTA_WRT_X].nnz + (size_t)d->e.d[SALTA_WRT_Z].nnz +
                                                    (size_t)d->e.d[SALTA_WRT_T].nnz + 1));
  if (!q || !p || !ev->brackets || !ev->cols || !ev->ejac[SALTA_WRT_X]) {
    salta__events_free(ev);
    return salta__fail(dae->err, SALTA_EMEM, "out of memory");
  }
  ev->stuck = q + m, ev->leaving = q + 2 * m, ev->crossing = q + 3 * m, ev->fire = q + 4 * m;
  ev->stuck_list = q + 5 * m;
  ev->next = q + 6 * m, ev->armed_pre = q + 7 * m, ev->in_group = q + 8 * m;
  p += m;
  ev->leave_t = p, p += m;
  ev->band0 = p, p += m;
  ev->band = p, p += m;
  ev->g_start = p, p += m;
  ev->g_probe = p, p += m;
  ev->rate = p, p += m;
  ev->rscale = p, p += m;
  ev->rate_p = p, p += m;
  ev->clear_sign = p, p += m;
  ev->rscale_p = p, p += m;
  ev->quiet_margin = p, p += m;
  ev->g_pre = p, p += m;
  ev->samples = p, p += (SAMPLES + 1) * m;
  ev->w_probe = p, p += n;
  ev->flow = p, p += n;
  ev->flow_p = p, p += n;
  ev->z_polish = p;
  for (k = 0; k < d->ne; ++k) ev->clear_sign[k] = -(double)d->e_direction[k];
  ev->ejac[SALTA_WRT_Z] = ev->ejac[SALTA_WRT_X] + d->e.d[SALTA_WRT_X].nnz;
  ev->ejac[SALTA_WRT_T] = ev->ejac[SALTA_WRT_Z] + d->e.d[SALTA_WRT_Z].nnz;
  ev->col_ptr = dae->guard_row_ptr[SALTA_WRT_X];
  for (k = 0; k < ex->nnz; ++k) ev->cols[k] = ex->col[dae->guard_row_ent[SALTA_WRT_X][k]];
  return SALTA_OK;
}

void salta__events_free(salta__events *ev) {
  free(ev->armed);
  free(ev->stuck_t);
  free(ev->brackets);
  free(ev->cols);
  free(ev->ejac[SALTA_WRT_X]);
  free(ev->log);
  salta__dbuf_free(&ev->w_minus);
  salta__dbuf_free(&ev->w_plus);
  memset(ev, 0, sizeof *ev);
}

/* ---- sides ------------------------------------------------------------------ */

static int on_firing_side(const salta__events *ev, int j, double e) {
  switch (ev->d->e_direction[j]) {
    case SALTA_DIR_DOWN: return e <= 0;
    case SALTA_DIR_UP: return e >= 0;
    default: return e * ev->g_start[j] <= 0;
  }
}

/* Strictly off the side a guard fires from; two-sided guards clear of
** zero by a tenth of their band. */
static int is_clear(const salta__events *ev, int j, double e) {
  switch (ev->d->e_direction[j]) {
    case SALTA_DIR_DOWN: return e > 0;
    case SALTA_DIR_UP: return e < 0;
    default: return fabs(e) > 0.1 * ev->band[j];
  }
}

/* Off its firing side by more than its band: a guard a reset left at zero
** has left it, and is not just the interpolant's noise around it (IDAS's
** first steps after a restart at t = 1e5 are an ulp long). */
static int is_clear_of_band(const salta__events *ev, int j, double e) {
  switch (ev->d->e_direction[j]) {
    case SALTA_DIR_DOWN: return e > ev->band[j];
    case SALTA_DIR_UP: return e < -ev->band[j];
    default: return fabs(e) > 0.1 * ev->band[j];
  }
}

/* ---- probes -------------------------------------------------------------------- */

static void note_bad(salta__events *ev, int j, double t, double v) {
  if (ev->bad_guard >= 0) return;
  ev->bad_guard = j, ev->bad_t = t, ev->bad_v = v;
}

static int bad_guard_error(salta__events *ev) {
  const salta_model_def *d = ev->d;
  return salta__fail(ev->dae->err, SALTA_ESOLVER, "model '%s': the guard of event '%s' is %g at t = %.17g",
                     d->name, d->e_names[ev->bad_guard], ev->bad_v, ev->bad_t);
}

/* The state at t for guards that read z: z solved from g (from the
** interpolated value, kept if Newton fails), so that event times are those
** of the consistent trajectory. */
static int state_at(salta__events *ev, const salta__interp *ip, double t, int reads_z) {
  salta__dae *a = ev->dae;
  double *w = ev->w_probe;
  int st;
  if ((st = ip->at(ip->ctx, t, w, NULL, 0))) return st;
  if (reads_z && !ip->exact_z) {
    memcpy(ev->z_polish, w + a->nx, sizeof(double) * (size_t)a->nz);
    if (salta__dae_solve_z(a, t, w, ev->z_polish, NULL) == 0)
      memcpy(w + a->nx, ev->z_polish, sizeof(double) * (size_t)a->nz);
  }
  return SALTA_OK;
}

/* Every guard at t on the interpolant, into g_probe. */
static int probe_all(salta__events *ev, const salta__interp *ip, double t) {
  const salta__dae *a = ev->dae;
  double *w = ev->w_probe;
  int j, st;
  if ((st = state_at(ev, ip, t, ev->d->e.d[SALTA_WRT_Z].nnz > 0))) return st;
  ev->d->e.eval(t, w, w + a->nx, a->p, ev->g_probe);
  ev->probes++;
  for (j = 0; j < ev->ne; ++j)
    if (!isfinite(ev->g_probe[j])) note_bad(ev, j, t, ev->g_probe[j]);
  return SALTA_OK;
}

/* Guard j alone at t: its states interpolated and its own kernel, where the
** model has them. */
static int probe_one(salta__events *ev, const salta__interp *ip, int j, double t, double *e) {
  const salta__dae *a = ev->dae;
  const salta_model_def *d = ev->d;
  double *w = ev->w_probe;
  int st;
  if (a->nz == 0) st = ip->at(ip->ctx, t, w, ev->cols + ev->col_ptr[j], ev->col_ptr[j + 1] - ev->col_ptr[j]);
  else st = state_at(ev, ip, t, a->guard_row_ptr[SALTA_WRT_Z][j + 1] > a->guard_row_ptr[SALTA_WRT_Z][j]);
  if (st) return st;
  if (d->e_one) {
    *e = d->e_one(j, t, w, w + a->nx, a->p);
  } else {
    d->e.eval(t, w, w + a->nx, a->p, ev->g_probe);
    *e = ev->g_probe[j];
  }
  ev->probes++;
  if (!isfinite(*e)) note_bad(ev, j, t, *e);
  return SALTA_OK;
}

/* ---- location ---------------------------------------------------------------------- */

/* The first time in (lo, hi] where guard j is on its firing side, given it
** is not at lo (value elo) and is at hi (value ehi): regula falsi with the
** Illinois modification, its trial points kept half a tolerance inside the
** bracket so that it closes from both sides, down to the time tolerance.
** Returns the side past the crossing. */
static int refine(salta__events *ev, const salta__interp *ip, salta__bracket b, double *t_cross) {
  int side = 0, it, j = b.guard, st;
  for (it = 0; it < 200; ++it) {
    double tol = salta__time_tol(b.hi), tm, e;
    if (b.hi - b.lo <= tol) break;
    tm = b.ehi != b.elo ? b.hi - b.ehi * (b.hi - b.lo) / (b.ehi - b.elo) : 0.5 * (b.lo + b.hi);
    if (!(tm > b.lo + 0.5 * tol)) tm = b.lo + 0.5 * tol;
    if (!(tm < b.hi - 0.5 * tol)) tm = b.hi - 0.5 * tol;
    if ((st = probe_one(ev, ip, j, tm, &e))) return st;
    if (ev->bad_guard >= 0) break;
    if (on_firing_side(ev, j, e)) {
      b.hi = tm, b.ehi = e;
      if (side == 1) b.elo *= 0.5;
      side = 1;
    } else {
      b.lo = tm, b.elo = e;
      if (side == -1) b.ehi *= 0.5;
      side = -1;
    }
  }
  *t_cross = b.hi;
  return SALTA_OK;
}

/* A guard armed while leaving zero can only cross after it has been
** clear: from the point along the flow where it is seen clear, the first
** sample on its firing side brackets the crossing. */
static int leaving_bracket(salta__events *ev, const salta__interp *ip, int j, const double *ts, salta__bracket *b,
                           int *found) {
  const double *G = ev->samples;
  const int ne = ev->ne;
  double tl = fmax(ev->leave_t[j], ts[0]), el;
  int i, st;
  *found = 0;
  if (tl >= ts[SAMPLES]) return SALTA_OK;
  if (tl == ts[0]) el = G[j];
  else if ((st = probe_one(ev, ip, j, tl, &el))) return st;
  if (!is_clear(ev, j, el)) return SALTA_OK;
  for (i = 1; i <= SAMPLES; ++i)
    if (ts[i] > tl && on_firing_side(ev, j, G[(size_t)i * ne + j])) {
      /* the latest point known clear before sample i */
      int prev_clear = ts[i - 1] > tl && !on_firing_side(ev, j, G[(size_t)(i - 1) * ne + j]);
      b->lo = prev_clear ? ts[i - 1] : tl;
      b->elo = prev_clear ? G[(size_t)(i - 1) * ne + j] : el;
      b->hi = ts[i];
      b->ehi = G[(size_t)i * ne + j];
      *found = 1;
      return SALTA_OK;
    }
  return SALTA_OK;
}

/* Guard j's earliest crossing among the samples: a sign change, or a dip
** between samples seen at a parabola's vertex. */
static int first_bracket(salta__events *ev, const salta__interp *ip, int j, const double *ts, salta__bracket *b,
                         int *found) {
  const double *G = ev->samples;
  const int ne = ev->ne, dir = ev->d->e_direction[j];
  int i, st;
  b->guard = j;
  b->refined = 0;
  if (ev->leaving[j]) return leaving_bracket(ev, ip, j, ts, b, found);
  *found = 0;
  for (i = 1; i <= SAMPLES; ++i) {
    double e0 = G[(size_t)(i - 1) * ne + j], e1 = G[(size_t)i * ne + j];
    if (on_firing_side(ev, j, e1) && !on_firing_side(ev, j, e0)) {
      b->lo = ts[i - 1], b->elo = e0, b->hi = ts[i], b->ehi = e1;
      *found = 1;
      return SALTA_OK;
    }
    if (i < SAMPLES && dir != SALTA_DIR_BOTH) {   /* a dip between samples i - 1 and i + 1 */
      double e2 = G[(size_t)(i + 1) * ne + j], qa = 0.5 * (e2 - 2 * e1 + e0), qb = 0.5 * (e2 - e0), u, tv, ev_;
      if (qa * dir >= 0 || on_firing_side(ev, j, e2)) continue;
      u = -qb / (2 * qa);
      if (!(fabs(u) < 1) || !on_firing_side(ev, j, e1 + qb * u + qa * u * u)) continue;
      tv = ts[i] + u * (ts[i + 1] - ts[i]);
      if ((st = probe_one(ev, ip, j, tv, &ev_))) return st;
      if (on_firing_side(ev, j, ev_)) {
        b->lo = u < 0 ? ts[i - 1] : ts[i];
        b->elo = u < 0 ? e0 : e1;
        b->hi = tv, b->ehi = ev_;
        *found = 1;
        return SALTA_OK;
      }
    }
  }
  return SALTA_OK;
}

/* The quiet margin of each guard: positive when its samples hold no
** crossing for first_bracket to find (a one-sided guard whose every sample
** is clear of its firing side, and no parabola through three consecutive
** ones dips to it). With u the value turned so that clear is positive, a
** parabola convex in u (qa > 0) whose vertex lies between its outer
** samples stays above u1 - qa there, which must be clear of zero by more
** than the rounding of first_bracket's own test; for a concave one u1 - qa
** exceeds u1, so the bound is taken for every triple. Loops over the
** guards without branches, so that they vectorise. */
static void mark_quiet(salta__events *ev) {
  const double *G = ev->samples, *sgn = ev->clear_sign;
  double *mg = ev->quiet_margin;
  const int ne = ev->ne;
  int j, i;
  for (j = 0; j < ne; ++j) mg[j] = sgn[j] * G[j];
  for (i = 1; i <= SAMPLES; ++i) {
    const double *g = G + (size_t)i * ne;
    for (j = 0; j < ne; ++j) {
      double u = sgn[j] * g[j];
      mg[j] = u < mg[j] ? u : mg[j];
    }
  }
  for (i = 1; i < SAMPLES; ++i) {
    const double *g0 = G + (size_t)(i - 1) * ne, *g1 = g0 + ne, *g2 = g1 + ne;
    for (j = 0; j < ne; ++j) {
      double a = sgn[j] * g0[j], b = sgn[j] * g1[j], c = sgn[j] * g2[j],
             low = b - 0.5 * (c - 2 * b + a) - 1e-12 * (a + b + c);
      mg[j] = low < mg[j] ? low : mg[j];
    }
  }
}

/* Samples the step's guards at SAMPLES + 1 points (the first known when the
** interpolant starts where the last step ended). */
static int sample_step(salta__events *ev, const salta__interp *ip, double t_start, double t_from, double t_end,
                       double *ts) {
  int i, st;
  for (i = 0; i <= SAMPLES; ++i) {
    double *row = ev->samples + (size_t)i * ev->ne;
    ts[i] = i == SAMPLES ? t_end : t_from + (t_end - t_from) * i / SAMPLES;
    if (i == 0 && t_from == t_start) {
      memcpy(row, ev->g_start, sizeof(double) * (size_t)ev->ne);
      continue;
    }
    if ((st = probe_all(ev, ip, ts[i]))) return st;
    memcpy(row, ev->g_probe, sizeof(double) * (size_t)ev->ne);
  }
  return SALTA_OK;
}

/* A guard on its firing side at t whose value is within what its rate
** moves in the time tolerance crossed with the earliest one. */
static int simultaneous(const salta__bracket *b, double e, double t) {
  double slope = (b->ehi - b->elo) / (b->hi - b->lo);
  return fabs(e) <= 4 * fabs(slope) * salta__time_tol(t);
}

int salta__events_locate(salta__events *ev, const salta__interp *ip, double t_start, double t_from,
                         double t_end, double *tau) {
  const int ne = ev->ne;
  salta__bracket *br = ev->brackets;
  double ts[SAMPLES + 1], best;
  int nb = 0, j, k, st, changed, winner;
  ev->nfire = 0;
  if (ne == 0) return 0;
  if (!(t_end > t_from)) {
    memcpy(ev->g_probe, ev->g_start, sizeof(double) * (size_t)ne);
    return 0;
  }
  ev->bad_guard = -1;
  if ((st = sample_step(ev, ip, t_start, t_from, t_end, ts))) return st;
  if (ev->bad_guard >= 0) return bad_guard_error(ev);
  mark_quiet(ev);
  for (j = 0; j < ne; ++j) {
    int found = 0;
    ev->crossing[j] = 0;
    if (!ev->armed[j] || (ev->quiet_margin[j] > 0 && !ev->leaving[j])) continue;
    if ((st = first_bracket(ev, ip, j, ts, &br[nb], &found))) return st;
    if (found) ev->crossing[j] = 1, ++nb;
  }
  if (ev->bad_guard >= 0) return bad_guard_error(ev);
  if (nb == 0) {
    memcpy(ev->g_probe, ev->samples + (size_t)SAMPLES * ne, sizeof(double) * (size_t)ne);
    return 0;
  }
  for (k = 1; k < nb; ++k) {   /* the bracket closing first, first */
    salta__bracket b = br[k];
    int q = k;
    while (q > 0 && br[q - 1].hi > b.hi) br[q] = br[q - 1], --q;
    br[q] = b;
  }
  /* refine it; a later bracket reaching past the best time costs one shared
  ** probe there, and is refined (up to the best time) only when its guard is
  ** past zero there: a guard that dipped and returned before would have
  ** closed its bracket first */
  if ((st = refine(ev, ip, br[0], &best))) return st;
  winner = br[0].guard;
  br[0].refined = 1;
  do {
    changed = 0;
    if ((st = probe_all(ev, ip, best))) return st;
    if (ev->bad_guard >= 0) return bad_guard_error(ev);
    for (k = 1; k < nb; ++k) {
      double e = ev->g_probe[br[k].guard], t_k;
      if (br[k].refined || !(br[k].lo < best)) continue;
      if (br[k].hi > best) {
        if (!on_firing_side(ev, br[k].guard, e) || simultaneous(&br[k], e, best)) continue;
        br[k].hi = best, br[k].ehi = e;
      }
      if ((st = refine(ev, ip, br[k], &t_k))) return st;
      if (ev->bad_guard >= 0) return bad_guard_error(ev);
      br[k].refined = 1;
      if (t_k < best) best = t_k, winner = br[k].guard, changed = 1;
    }
  } while (changed);
  /* the group: every armed guard past zero at the instant; one leaving
  ** zero only with a crossing of its own (it may read -1e-17 there) */
  for (j = 0; j < ne; ++j)
    if (ev->armed[j] && (on_firing_side(ev, j, ev->g_probe[j]) || j == winner) &&
        (!ev->leaving[j] || ev->crossing[j]))
      ev->fire[ev->nfire++] = j;
  *tau = best;
  return ev->nfire;
}

/* ---- firing ------------------------------------------------------------------------- */

static int log_group(salta__events *ev, double tau, const double *wm, const double *wp) {
  int k, n = ev->dae->n, first = ev->nlog;
  for (k = 0; k < ev->nfire; ++k) {
    salta__event_rec *r;
    if (ev->nlog == ev->log_cap) {
      int cap = ev->log_cap ? 2 * ev->log_cap : 64;
      salta__event_rec *nl = realloc(ev->log, sizeof *nl * (size_t)cap);
      if (!nl) return salta__fail(ev->dae->err, SALTA_EMEM, "out of memory");
      ev->log = nl;
      ev->log_cap = cap;
    }
    if (salta__dbuf_push(&ev->w_minus, wm, (size_t)n) || salta__dbuf_push(&ev->w_plus, wp, (size_t)n))
      return salta__fail(ev->dae->err, SALTA_EMEM, "out of memory");
    r = &ev->log[ev->nlog++];
    r->t = tau, r->event = ev->fire[k], r->group = first, r->group_size = ev->nfire, r->cascade = ev->cascade;
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

/* After the resets: a guard left at zero is "stuck" until it leaves its
** firing side; one whose reset turned it around, so that the flow carries it
** off its firing side, is armed at once ("leaving"): its next crossing may
** come within the next step (a ball's re-bounce). An armed guard outside the
** group that the resets left where it was, short of its firing side, stays
** armed: it is still on its way to a crossing of its own, however close
** (the buses of a network reaching a threshold a few ulps apart). */
static int rearm_after(salta__events *ev, double tau, const double *wp) {
  const salta__dae *a = ev->dae;
  const salta_model_def *d = ev->d;
  int j, st, nstuck = 0;
  d->e.eval(tau, wp, wp + a->nx, a->p, ev->g_start);
  ev->probes++;
  for (j = 0; j < ev->ne; ++j) {
    double e = ev->g_start[j];
    if (!isfinite(e))
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': the guard of event '%s' is %g at t = %.17g (after the resets)",
                         d->name, d->e_names[j], e, tau);
    ev->armed[j] = is_clear_of_band(ev, j, e) ||
                   (ev->armed_pre[j] && !ev->in_group[j] && is_clear(ev, j, e) && fabs(e - ev->g_pre[j]) <= ev->band[j]);
    ev->leaving[j] = 0;
    ev->stuck[j] = !ev->armed[j] && fabs(e) <= ev->band[j];
    if (ev->stuck[j]) ev->stuck_t[j] = tau;
    if (ev->stuck[j] && d->e_direction[j] != SALTA_DIR_BOTH) ev->stuck_list[nstuck++] = j;
  }
  if (nstuck == 0) return SALTA_OK;
  if ((st = rates_at(ev, tau, wp, "after an event", ev->stuck_list, nstuck, ev->flow_p, ev->rate_p, ev->rscale_p,
                     NULL)))
    return st;
  for (j = 0; j < ev->ne; ++j)
    if (ev->stuck[j] && d->e_direction[j] != SALTA_DIR_BOTH && ev->rate_p[j] * d->e_direction[j] < 0) {
      ev->armed[j] = 1;
      ev->stuck[j] = 0;
      ev->leaving[j] = 1;
      ev->leave_t[j] = tau + 1e-12 * fmax(1.0, fabs(tau));
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

/* An input breakpoint the resets left at zero heading into its firing
** side: its argument turned around at the breakpoint (a kink of a table
** it reads, a step that reverses it), so it crosses back at once. */
static int breakpoint_turned(const salta__events *ev, int j) {
  const int dir = ev->d->e_direction[j];
  return ev->stuck[j] && dir != SALTA_DIR_BOTH && is_breakpoint(ev, j) && ev->rate_p[j] * dir > 0;
}

/* The armed guards outside the group (in_group) that its resets pushed
** across, and the breakpoints they turned. */
static void find_next(salta__events *ev) {
  int j;
  ev->nnext = 0;
  for (j = 0; j < ev->ne; ++j)
    if (!ev->in_group[j] && ((ev->armed_pre[j] && pushed_across(ev, j, ev->g_start[j])) || breakpoint_turned(ev, j)))
      ev->next[ev->nnext++] = j;
}

int salta__events_fire(salta__events *ev, double tau, const double *wm, double *wp) {
  int st, k;
  /* the guards before the resets: at the located instant, or where the
  ** previous round's resets left them */
  memcpy(ev->g_pre, ev->cascade == 0 ? ev->g_probe : ev->g_start, sizeof(double) * (size_t)ev->ne);
  memcpy(ev->armed_pre, ev->armed, sizeof(int) * (size_t)ev->ne);
  if ((st = check_directions(ev, tau, wm))) return st;
  if ((st = salta__dae_reset(ev->dae, ev->fire, ev->nfire, tau, wm, wp))) return st;
  if ((st = log_group(ev, tau, wm, wp))) return st;
  if ((st = check_counts(ev, tau))) return st;
  for (k = 0; k < ev->nfire; ++k) ev->in_group[ev->fire[k]] = 1;
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
    if (ev->leaving[j]) {
      if (is_clear_of_band(ev, j, e))
        ev->leaving[j] = 0;
      else if (fabs(e) > ev->band[j] && t > ev->leave_t[j])
        return salta__fail(ev->dae->err, SALTA_ESOLVER,
                           "model '%s': Zeno limit: event '%s' fired at t = %.17g and its reset turned the "
                           "guard around, but the guard never got clear and is %g at t = %.17g (event count %d): "
                           "events accumulate there",
                           d->name, d->e_names[j], ev->stuck_t[j], e, t, ev->ncounted);
    }
    if (!ev->armed[j] && (ev->stuck[j] ? is_clear_of_band(ev, j, e) : is_clear(ev, j, e)))
      ev->armed[j] = 1, ev->stuck[j] = 0;
  }
  memcpy(ev->g_start, ev->g_probe, sizeof(double) * (size_t)ev->ne);
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
  if (ev->ne == 0) return SALTA_OK;
  d->e.eval(t0, w, w + a->nx, a->p, ev->g_start);
  ev->probes++;
  for (j = 0; j < ev->ne; ++j) {
    double e = ev->g_start[j];
    if (!isfinite(e))
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': the guard of event '%s' is %g at t = %g", d->name,
                         d->e_names[j], e, t0);
    ev->band0[j] = ev->band[j] = 1e-9 * fmax(1.0, fabs(e));
    ev->armed[j] = is_clear(ev, j, e);
    ev->stuck[j] = ev->leaving[j] = 0;
  }
  return SALTA_OK;
}
