/*
** locate.c -- crossing location on an integrator's interpolant: each
** step's guards are sampled until no crossing can hide between samples,
** guards are armed along the step, and the earliest crossing is refined to
** a few ulps (see events.h).
**
** The resolution bound: within a step every guard is sampled until,
** between consecutive samples a and b (w = b - a apart), min(|e(a)|,
** |e(b)|) > K w^2 / 8 when both values lie on one side of zero, and
** |e(b) - e(a)| > K w^2 when they lie on either side, where K is twice the
** largest change of the guard's rate per unit time seen in the step (its
** rates at the step's ends, its mean rates between samples), and at least
** its largest rate squared over its largest value (the curvature of a
** sinusoid, or twice that of a body in free flight); for a guard that
** reads time itself, also its rates at the interior samples (a schedule
** may turn between samples the states' error control spaces). A guard whose
** curvature stays below K cannot reach zero unseen in the first case (its
** chord sags by K w^2 / 8 at most), nor cross zero more than once in the
** second (its rate keeps one sign). A guard that bends faster than K allows
** while matching every sample is not seen; nor is an interval halved more
** than MAX_SPLITS times, or below the time tolerance.
*/
#include <float.h>
#include <math.h>
#include <string.h>

#include "errors.h"
#include "events.h"
#include "tol.h"
#include "wide.h"

/* The base samples of a step, at fractions of it that no period a user
** writes divides (a schedule of 1 s against steps of 4 s). */
static const double FRACTION[SALTA__SAMPLES + 1] = {0, 0.2113248654051871, 0.4512431844, 0.7071067811865476, 1};

#define MAX_SPLITS 16     /* an interval is halved at most this often */
#define MAX_PROBES 64     /* extra probes of one guard in one step */
#define RATE_STEP (1.0 / 64)   /* the end rates: differences over this fraction of the step */

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
  if (reads_z && !ip->exact_z) salta__dae_polish_z(a, t, w);
  return SALTA_OK;
}

/* Every guard at t on the interpolant, into out: the states they read
** interpolated, or the state. */
static int probe_all(salta__events *ev, const salta__interp *ip, double t, double *out) {
  const salta__dae *a = ev->dae;
  double *w = ev->w_probe;
  int j, st;
  st = ev->nread >= 0 ? ip->at(ip->ctx, t, w, ev->read_cols, ev->nread)
                      : state_at(ev, ip, t, ev->d->e.d[SALTA_WRT_Z].nnz > 0);
  if (st) return st;
  ev->d->e.eval(t, w, w + a->nx, a->p, out);
  ev->probes++;
  if (!salta__all_finite(out, (size_t)ev->ne))
    for (j = 0; j < ev->ne; ++j)
      if (!isfinite(out[j])) note_bad(ev, j, t, out[j]);
  return SALTA_OK;
}

/* Guard j alone at t: its states interpolated (every state for one with
** hidden reads) and its own kernel, where the model has them. */
static int probe_one(salta__events *ev, const salta__interp *ip, int j, double t, double *e) {
  const salta__dae *a = ev->dae;
  const salta_model_def *d = ev->d;
  double *w = ev->w_probe;
  int st;
  if (a->nz == 0 && !salta__hidden_reads(ev, j))
    st = ip->at(ip->ctx, t, w, ev->cols + ev->col_ptr[j], ev->col_ptr[j + 1] - ev->col_ptr[j]);
  else st = state_at(ev, ip, t, a->guard_row_ptr[SALTA_WRT_Z][j + 1] > a->guard_row_ptr[SALTA_WRT_Z][j]);
  if (st) return st;
  if (d->e_one) {
    *e = d->e_one(j, t, w, w + a->nx, a->p);
  } else {
    d->e.eval(t, w, w + a->nx, a->p, ev->g_work);
    *e = ev->g_work[j];
  }
  ev->probes++;
  if (!isfinite(*e)) note_bad(ev, j, t, *e);
  return SALTA_OK;
}

/* ---- refinement ---------------------------------------------------------------- */

/* The first time in (lo, hi] where guard j is on its firing side, given it
** is not at lo (value elo) and is at hi (value ehi): regula falsi with the
** Illinois modification, its trial points kept half a tolerance inside the
** bracket so that it closes from both sides, down to the time tolerance.
** Returns the side past the crossing. */
static int first_crossing(salta__events *ev, const salta__interp *ip, salta__bracket *b);

static int refine(salta__events *ev, const salta__interp *ip, salta__bracket b, double *t_cross) {
  int side = 0, it, j = b.guard, st;
  if (!b.narrowed && (st = first_crossing(ev, ip, &b))) return st;
  for (it = 0; it < 200; ++it) {
    double tol = salta__time_tol(b.hi), tm, e;
    if (b.hi - b.lo <= tol) break;
    tm = b.ehi != b.elo ? b.hi - b.ehi * (b.hi - b.lo) / (b.ehi - b.elo) : 0.5 * (b.lo + b.hi);
    if (!(tm > b.lo + 0.5 * tol)) tm = b.lo + 0.5 * tol;
    if (!(tm < b.hi - 0.5 * tol)) tm = b.hi - 0.5 * tol;
    if ((st = probe_one(ev, ip, j, tm, &e))) return st;
    if (ev->bad_guard >= 0) break;
    if (salta__on_firing_side(ev, j, e)) {
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

/* ---- sampling -------------------------------------------------------------------- */

/* The base samples (rows of ev->samples; the first known when the step
** starts where the last one ended) and each guard's rate at both ends of
** the step (the start's carried over from the last step when it ended
** here), from differences along the interpolant. */
static int sample_step(salta__events *ev, const salta__interp *ip, double t_start, double t_from, double t_end,
                       double *ts) {
  const int ne = ev->ne;
  double eps = RATE_STEP * (t_end - t_from), *last = ev->samples + (size_t)SALTA__SAMPLES * ne;
  int i, j, st;
  for (i = 0; i <= SALTA__SAMPLES; ++i) {
    double *row = ev->samples + (size_t)i * ne;
    ts[i] = i == SALTA__SAMPLES ? t_end : t_from + (t_end - t_from) * FRACTION[i];
    if (i == 0 && t_from == t_start) {
      memcpy(row, ev->g_start, sizeof(double) * (size_t)ne);
      continue;
    }
    if ((st = probe_all(ev, ip, ts[i], row))) return st;
  }
  if (!ev->rate0_valid || t_from != t_start) {   /* the run's first step */
    if ((st = probe_all(ev, ip, t_from + eps, ev->g_work))) return st;
    for (j = 0; j < ne; ++j) ev->rate0[j] = (ev->g_work[j] - ev->samples[j]) / eps;
  }
  if ((st = probe_all(ev, ip, t_end - eps, ev->g_work))) return st;
  for (j = 0; j < ne; ++j) ev->rate1[j] = (last[j] - ev->g_work[j]) / eps;
  return SALTA_OK;
}

#define MAXD(a, b) ((a) > (b) ? (a) : (b))   /* fmax is a libm call the loops cannot vectorise */
#define MIND(a, b) ((a) < (b) ? (a) : (b))

/* The curvature an oscillation of the largest rate rmax and the largest
** value vmax must have: a floor of K, where rates sampled along the step
** may alias. */
static inline double oscillation_bound(double rmax, double vmax) { return rmax * rmax / MAXD(vmax, DBL_MIN); }

/* How far a guard with values ga and gb at an interval's ends stays on one
** side of zero when its chord may sag by sag (K w^2 / 8): -1 when the ends
** are not on one side. Both branches computed: a select, which vectorises. */
static inline double side_margin(double ga, double gb, double sag) {
  double m = MIND(fabs(ga), fabs(gb)) - sag;
  return ga * gb > 0 ? m : -1.0;
}

/* Whether guard j is quadratic in time along the step (bodies in free
** flight): the parabola through samples 0, 2 and 4 predicts samples 1 and
** 3 to 1e-9 of the guard's scale. Its range over the step is then known
** exactly: the distance of that range from zero when it keeps one side
** (its quiet margin), else 0. */
static double quadratic_margin(const salta__events *ev, int j, const double *ts) {
  const double *G = ev->samples;
  const size_t ne = (size_t)ev->ne;
  const double h = ts[SALTA__SAMPLES] - ts[0], t2 = ts[2] - ts[0], u1 = ts[1] - ts[0], u3 = ts[3] - ts[0];
  const double g0 = G[j], g1 = G[ne + j], g2 = G[2 * ne + j], g3 = G[3 * ne + j], g4 = G[4 * ne + j];
  double d1 = (g2 - g0) / t2, c2 = ((g4 - g2) / (h - t2) - d1) / h, c1 = d1 - c2 * t2;
  double scale = 1e-9 * MAXD(MAXD(fabs(g0), fabs(g2)), fabs(g4)), lo = MIND(g0, g4), hi = MAXD(g0, g4), tv;
  if (!(fabs(g0 + u1 * (c1 + c2 * u1) - g1) <= scale && fabs(g0 + u3 * (c1 + c2 * u3) - g3) <= scale)) return 0;
  tv = c2 != 0 ? -0.5 * c1 / c2 : -1;
  if (tv > 0 && tv < h) {
    double pv = g0 + tv * (c1 + c2 * tv);
    lo = MIND(lo, pv), hi = MAXD(hi, pv);
  }
  return lo * hi > 0 ? MIND(fabs(lo), fabs(hi)) : 0;
}

/* One base interval [a, b] of a guard (values ga, gb; width 1 / iw): its
** mean rate against the last one (*prev), into *K, and the largest rate and
** value so far. */
static inline void bound_interval(double ga, double gb, double iw, double idt, double *K, double *prev, double *rmax,
                                  double *vmax) {
  double r = (gb - ga) * iw;
  *K = MAXD(*K, fabs(r - *prev) * idt);
  *rmax = MAXD(*rmax, fabs(r));
  *vmax = MAXD(*vmax, fabs(gb));
  *prev = r;
}

/* Every guard's curvature bound and quiet margin (mark_quiet) from its
** samples G (rows of ne) and end rates r0, r1, given the base intervals'
** inverse widths iw, the inverse half-distances idt between the rates'
** times, and the sags per unit K. One pass over the guards, the four base
** intervals written out inside it, so that it vectorises. */
_Static_assert(SALTA__SAMPLES == 4, "bound_guards writes out four base intervals");
SALTA__WIDE static void bound_guards(int ne, const double *restrict G, const double *restrict r0, const double *restrict r1,
                         const double *iw, const double *idt, const double *sag, double *restrict Kout,
                         double *restrict mgout) {
  const double *g0 = G, *g1 = g0 + ne, *g2 = g1 + ne, *g3 = g2 + ne, *g4 = g3 + ne;
  int j;
  for (j = 0; j < ne; ++j) {
    double prev = r0[j], K = 0, rmax = MAXD(fabs(r0[j]), fabs(r1[j])), vmax = fabs(g0[j]), mg;
    bound_interval(g0[j], g1[j], iw[0], idt[0], &K, &prev, &rmax, &vmax);
    bound_interval(g1[j], g2[j], iw[1], idt[1], &K, &prev, &rmax, &vmax);
    bound_interval(g2[j], g3[j], iw[2], idt[2], &K, &prev, &rmax, &vmax);
    bound_interval(g3[j], g4[j], iw[3], idt[3], &K, &prev, &rmax, &vmax);
    /* with an oscillation the rates alias */
    K = MAXD(MAXD(K, fabs(r1[j] - prev) * idt[4]), oscillation_bound(rmax, vmax));
    mg = side_margin(g0[j], g1[j], K * sag[0]);
    mg = MIND(mg, side_margin(g1[j], g2[j], K * sag[1]));
    mg = MIND(mg, side_margin(g2[j], g3[j], K * sag[2]));
    mg = MIND(mg, side_margin(g3[j], g4[j], K * sag[3]));
    Kout[j] = K, mgout[j] = mg;
  }
}

/* Each guard's curvature bound K: twice the largest change of its rate per
** unit time between the rates known along the step (at its ends, and each
** interval's mean rate at its middle), and at least its largest rate
** squared over its largest value. Then whether it is quiet: every base
** interval lies on one side of zero by more than the chord's sag K w^2 / 8,
** so that no crossing hides in the step. */
static void mark_quiet(salta__events *ev, const double *ts) {
  enum { S = SALTA__SAMPLES };
  double iw[S], sag[S], idt[S + 1], pt[S + 2];
  int i;
  pt[0] = ts[0], pt[S + 1] = ts[S];
  for (i = 0; i < S; ++i) {
    double w = ts[i + 1] - ts[i];
    iw[i] = 1 / w, sag[i] = 0.125 * w * w, pt[i + 1] = ts[i] + 0.5 * w;
  }
  for (i = 0; i <= S; ++i) idt[i] = 2 / (pt[i + 1] - pt[i]);
  bound_guards(ev->ne, ev->samples, ev->rate0, ev->rate1, iw, idt, sag, ev->kbound, ev->quiet_margin);
}

/* Whether guard j reads time other than through the states: a schedule
** such as sin(2 pi t / P) is bent by its own clock, not by the states
** the step's error control follows, and may turn several times between
** base samples while matching each of them. */
static int reads_time(const salta__events *ev, int j) {
  const int *ptr = ev->dae->guard_row_ptr[SALTA_WRT_T];
  return ptr[j + 1] > ptr[j];
}

/* Raises K for a guard that reads time by its rates at the interior base
** samples (differences along the interpolant, as at the ends): the change
** between each and the mean rates beside it, and the largest rate squared
** over the largest value, as in mark_quiet; then its quiet margin again. */
static int bound_time_guard(salta__events *ev, const salta__interp *ip, int j, const double *ts) {
  const double *G = ev->samples;
  const size_t ne = (size_t)ev->ne;
  double eps = RATE_STEP * (ts[SALTA__SAMPLES] - ts[0]), K = ev->kbound[j], rmax = 0, vmax = 0, mg = INFINITY;
  int i, st;
  for (i = 1; i < SALTA__SAMPLES; ++i) {
    double e, r, wl = ts[i] - ts[i - 1], wr = ts[i + 1] - ts[i], g = G[i * ne + j];
    double ml = (g - G[(i - 1) * ne + j]) / wl, mr = (G[(i + 1) * ne + j] - g) / wr;
    if ((st = probe_one(ev, ip, j, ts[i] + eps, &e))) return st;
    r = (e - g) / eps;
    K = fmax(K, fmax(4 * fabs(r - ml) / wl, 4 * fabs(mr - r) / wr));
    rmax = fmax(rmax, fabs(r));
  }
  for (i = 0; i <= SALTA__SAMPLES; ++i) vmax = fmax(vmax, fabs(G[i * ne + j]));
  K = fmax(K, oscillation_bound(rmax, vmax));
  for (i = 0; i < SALTA__SAMPLES; ++i) {
    double w = ts[i + 1] - ts[i];
    mg = fmin(mg, side_margin(G[i * ne + j], G[(i + 1) * ne + j], 0.125 * K * w * w));
  }
  ev->kbound[j] = K, ev->quiet_margin[j] = mg;
  return SALTA_OK;
}

/* ---- one guard along the step ------------------------------------------------------ */

/* Whether guard j, not armed, becomes armed at (t, e): clear of its firing
** side; clear of its band when a reset left it at zero; clear after the
** instant it was turned around when it is leaving zero. */
static int arms_at(const salta__events *ev, int j, double t, double e) {
  if (ev->arming[j] == SALTA__LEAVING) return t > ev->leave_t[j] && salta__is_clear(ev, j, e);
  if (ev->arming[j] == SALTA__STUCK) return salta__is_clear_of_band(ev, j, e);
  return salta__is_clear(ev, j, e);
}

typedef struct span { double a, ga, b, gb; int depth; } span;

/* Whether a span may hide a change of side from a guard whose curvature
** stays below K: across zero, when the rate could change sign (the mean
** rate is under K w); on one side of zero, when none of these keeps it
** there: the chord (its sag is K w^2 / 8 at most), or the guard's rate at
** the step's end, or at its start for a guard a reset left at zero, and K
** (it cannot turn back before that rate is spent: a guard leaving zero, or
** nearing it). */
static int unresolved(const salta__events *ev, int j, span s, double K, const double *ts) {
  double w = s.b - s.a, sg = s.ga > 0 ? 1 : -1;
  if (s.ga * s.gb <= 0) return fabs(s.gb - s.ga) <= K * w * w;
  if (fmin(fabs(s.ga), fabs(s.gb)) > 0.125 * K * w * w) return 0;
  if (s.a == ts[0] && fabs(s.ga) <= ev->band[j] && sg * ev->rate0[j] * w - 0.5 * K * w * w > 0) return 0;
  if (s.b == ts[SALTA__SAMPLES] && fabs(s.gb) - sg * ev->rate1[j] * w - 0.5 * K * w * w > 0) return 0;
  return 1;
}

/* Whether the parabola through the ends of s and its midpoint (m, gm),
** all on one side of zero, has its vertex inside s on the other side: the
** vertex time in *tv (exact for guards quadratic in time, such as two
** bodies in free flight grazing past each other). */
static int dip_at(span s, double m, double gm, double *tv) {
  double qa = 0.5 * (s.gb - 2 * gm + s.ga), qb = 0.5 * (s.gb - s.ga), u;
  if (!(s.ga * gm > 0 && gm * s.gb > 0) || qa * s.ga >= 0) return 0;
  u = -qb / (2 * qa);
  if (!(fabs(u) < 1) || (gm + qb * u + qa * u * u) * s.ga > 0) return 0;
  *tv = m + u * (s.b - m);
  return *tv > s.a && *tv < s.b;
}

/* The curvature a split of s at m shows: the change between the mean
** rates of its halves. */
static double split_curvature(span s, double m, double gm) {
  double h = m - s.a;
  return 2 * fabs((s.gb - gm) / (s.b - m) - (gm - s.ga) / h) / (0.5 * (s.b - s.a));
}

/* Guard j along the step: the base intervals in turn, each halved while
** the guard could change sides inside it unseen (the resolution bound
** above). Arms the guard where it is first clear (ev->arm_t[j]) and finds
** its earliest crossing after that (*found, b). */
static int scan_guard(salta__events *ev, const salta__interp *ip, int j, const double *ts, salta__bracket *b,
                      int *found) {
  const double *G = ev->samples;
  const int ne = ev->ne;
  span stack[3 * MAX_SPLITS + 3];
  double K = ev->kbound[j];
  int armed = ev->arming[j] == SALTA__ARMED, i, probes = 0, st;
  *found = 0;
  ev->arm_t[j] = armed ? ts[0] : INFINITY;
  if (!armed && arms_at(ev, j, ts[0], G[j])) armed = 1, ev->arm_t[j] = ts[0], salta__note_side(ev, j, G[j]);
  for (i = 0; i < SALTA__SAMPLES; ++i) {
    int top = 0;
    stack[top++] = (span){ts[i], G[(size_t)i * ne + j], ts[i + 1], G[(size_t)(i + 1) * ne + j], 0};
    while (top > 0) {
      span s = stack[--top];
      if (!(armed && s.ga * s.gb <= 0) && unresolved(ev, j, s, K, ts) && s.depth < MAX_SPLITS && probes < MAX_PROBES &&
          s.b - s.a > 4 * salta__time_tol(s.b)) {
        double m = 0.5 * (s.a + s.b), gm, tv, gv;
        if ((st = probe_one(ev, ip, j, m, &gm))) return st;
        if (ev->bad_guard >= 0) return SALTA_OK;
        ++probes;
        K = fmax(K, split_curvature(s, m, gm));
        if (dip_at(s, m, gm, &tv)) {   /* the parabola through the three dips across zero */
          if ((st = probe_one(ev, ip, j, tv, &gv))) return st;
          ++probes;
          if (gv * s.ga <= 0) {
            double lo = fmin(tv, m), hi = fmax(tv, m), glo = tv < m ? gv : gm, ghi = tv < m ? gm : gv;
            stack[top++] = (span){hi, ghi, s.b, s.gb, s.depth + 1};
            stack[top++] = (span){lo, glo, hi, ghi, s.depth + 1};
            stack[top++] = (span){s.a, s.ga, lo, glo, s.depth + 1};
            continue;
          }
        }
        stack[top++] = (span){m, gm, s.b, s.gb, s.depth + 1};
        stack[top++] = (span){s.a, s.ga, m, gm, s.depth + 1};
        continue;
      }
      if (armed && salta__on_firing_side(ev, j, s.gb)) {
        b->guard = j, b->refined = 0, b->narrowed = 0;
        b->lo = s.a, b->elo = s.ga, b->hi = s.b, b->ehi = s.gb;
        *found = 1;
        return SALTA_OK;
      }
      if (!armed && arms_at(ev, j, s.b, s.gb)) armed = 1, ev->arm_t[j] = s.b, salta__note_side(ev, j, s.gb);
    }
  }
  return SALTA_OK;
}

/* Narrows guard j's bracket to its first crossing: a span across zero is
** halved while its rate could change sign in it (three crossings could
** hide there), and a span on the clear side while it could dip across
** unseen (the resolution bound above, with the step's K). */
static int first_crossing(salta__events *ev, const salta__interp *ip, salta__bracket *b) {
  span stack[2 * MAX_SPLITS + 2];
  const int j = b->guard;
  double K = ev->kbound[j];
  int top = 0, probes = 0, st;
  stack[top++] = (span){b->lo, b->elo, b->hi, b->ehi, 0};
  while (top > 0) {
    span s = stack[--top];
    double w = s.b - s.a, m, gm;
    int across = salta__on_firing_side(ev, j, s.gb) && !salta__on_firing_side(ev, j, s.ga);
    if (!across && salta__on_firing_side(ev, j, s.ga)) continue;   /* past the first crossing */
    if ((across ? fabs(s.gb - s.ga) > K * w * w : fmin(fabs(s.ga), fabs(s.gb)) > 0.125 * K * w * w) ||
        s.depth >= MAX_SPLITS || probes >= MAX_PROBES || w <= 4 * salta__time_tol(s.b)) {
      if (!across) continue;
      b->lo = s.a, b->elo = s.ga, b->hi = s.b, b->ehi = s.gb;
      return SALTA_OK;
    }
    m = 0.5 * (s.a + s.b);
    if ((st = probe_one(ev, ip, j, m, &gm))) return st;
    if (ev->bad_guard >= 0) return SALTA_OK;
    ++probes;
    K = fmax(K, split_curvature(s, m, gm));
    stack[top++] = (span){m, gm, s.b, s.gb, s.depth + 1};
    stack[top++] = (span){s.a, s.ga, m, gm, s.depth + 1};
  }
  return SALTA_OK;   /* every piece resolved or cut off: the bracket stands */
}

/* A guard whose samples keep one side of zero that its curvature bound
** cannot leave (quiet_margin > 0) crosses nothing in the step: armed, it
** stays so if that side is the clear one; not armed, it becomes armed at
** the first sample that arms it, or stays disarmed. Whether that settles
** it (else scan_guard follows it). */
static int quiet_arming(salta__events *ev, int j, int armed, const double *ts) {
  int i;
  if (armed) {
    ev->arm_t[j] = ts[0];
    return !salta__on_firing_side(ev, j, ev->samples[j]);
  }
  ev->arm_t[j] = INFINITY;
  for (i = 0; i <= SALTA__SAMPLES; ++i)
    if (arms_at(ev, j, ts[i], ev->samples[(size_t)i * ev->ne + j])) {
      ev->arm_t[j] = ts[i];
      salta__note_side(ev, j, ev->samples[(size_t)i * ev->ne + j]);
      break;
    }
  return 1;
}

/* ---- the earliest group ---------------------------------------------------------- */

/* A guard on its firing side at t whose value is within what its rate
** moves in the time tolerance crossed with the earliest one. */
static int simultaneous(const salta__bracket *b, double e, double t) {
  double slope = (b->ehi - b->elo) / (b->hi - b->lo);
  return fabs(e) <= 4 * fabs(slope) * salta__time_tol(t);
}

/* Sorts the brackets by the time they close, and refines the earliest; a
** later bracket reaching past the best time costs one shared probe there,
** and is refined (up to the best time) only when its guard is past zero
** there: a guard that dipped and returned before would have closed its
** bracket first. */
static int earliest(salta__events *ev, const salta__interp *ip, int nb, double *best, int *winner) {
  salta__bracket *br = ev->brackets;
  int k, st, changed;
  for (k = 1; k < nb; ++k) {
    salta__bracket b = br[k];
    int q = k;
    while (q > 0 && br[q - 1].hi > b.hi) br[q] = br[q - 1], --q;
    br[q] = b;
  }
  if ((st = refine(ev, ip, br[0], best))) return st;
  *winner = br[0].guard;
  br[0].refined = 1;
  do {
    changed = 0;
    if ((st = probe_all(ev, ip, *best, ev->g_probe))) return st;
    if (ev->bad_guard >= 0) return bad_guard_error(ev);
    for (k = 1; k < nb; ++k) {
      double e = ev->g_probe[br[k].guard], t_k;
      if (br[k].refined || !(br[k].lo < *best)) continue;
      /* to its first crossing first: the guard may cross and come back
      ** inside a bracket that reaches past the best time */
      if (!br[k].narrowed) {
        if ((st = first_crossing(ev, ip, &br[k]))) return st;
        if (ev->bad_guard >= 0) return bad_guard_error(ev);
        br[k].narrowed = 1;
        if (!(br[k].lo < *best)) continue;
      }
      if (br[k].hi > *best) {
        if (!salta__on_firing_side(ev, br[k].guard, e) || simultaneous(&br[k], e, *best)) continue;
        br[k].hi = *best, br[k].ehi = e;
      }
      if ((st = refine(ev, ip, br[k], &t_k))) return st;
      if (ev->bad_guard >= 0) return bad_guard_error(ev);
      br[k].refined = 1;
      if (t_k < *best) *best = t_k, *winner = br[k].guard, changed = 1;
    }
  } while (changed);
  return SALTA_OK;
}

/* The crossings expected after the step (its located instant tau, or its
** end): each guard's bracket end past tau in this step, else its earlier
** one past the step's end (t_end), except for the group's members. The
** earliest of them, into ev->t_next: the resets may move it; a step that
** the integrator cuts there meets the next crossing with few others. */
static void expect_next(salta__events *ev, int nb, double tau, double t_end) {
  double *ahead = ev->ahead, next = INFINITY;
  int k, j, q;
  for (k = 0; k < ev->nfire; ++k) ahead[ev->fire[k]] = INFINITY;
  for (j = 0; j < ev->ne; ++j) {
    double a = ahead[j] <= t_end ? INFINITY : ahead[j];
    ahead[j] = a, next = MIND(next, a);
  }
  for (k = 0; k < nb; ++k) {
    const salta__bracket *b = &ev->brackets[k];
    for (q = 0; q < ev->nfire && ev->fire[q] != b->guard; ++q) {}
    if (b->hi > tau && q == ev->nfire) ahead[b->guard] = b->hi, next = MIND(next, b->hi);
  }
  ev->t_next = next;
}

int salta__events_locate(salta__events *ev, const salta__interp *ip, double t_start, double t_from,
                         double t_end, double *tau) {
  const int ne = ev->ne, any_time = ev->dae->guard_row_ptr[SALTA_WRT_T][ne] > 0;
  double ts[SALTA__SAMPLES + 1], best;
  int nb = 0, j, st, winner;
  ev->nfire = 0;
  ev->t_next = INFINITY;
  if (ne == 0) return 0;
  if (!(t_end > t_from)) {
    memcpy(ev->g_probe, ev->g_start, sizeof(double) * (size_t)ne);
    for (j = 0; j < ne; ++j) ev->arm_t[j] = INFINITY;
    return 0;
  }
  ev->bad_guard = -1;
  if ((st = sample_step(ev, ip, t_start, t_from, t_end, ts))) return st;
  if (ev->bad_guard >= 0) return bad_guard_error(ev);
  mark_quiet(ev, ts);
  memset(ev->crossing, 0, sizeof(int) * (size_t)ne);
  for (j = 0; j < ne; ++j) {
    int found = 0, armed = ev->arming[j] == SALTA__ARMED;
    if (any_time && reads_time(ev, j)) {
      if ((st = bound_time_guard(ev, ip, j, ts))) return st;
      if (ev->bad_guard >= 0) return bad_guard_error(ev);
    }
    if (!(ev->quiet_margin[j] > 0)) ev->quiet_margin[j] = quadratic_margin(ev, j, ts);   /* the few the chord did not settle */
    if (ev->quiet_margin[j] > 0 && quiet_arming(ev, j, armed, ts)) continue;
    if ((st = scan_guard(ev, ip, j, ts, &ev->brackets[nb], &found))) return st;
    if (ev->bad_guard >= 0) return bad_guard_error(ev);
    if (found) ev->crossing[j] = 1, ++nb;
  }
  if (nb == 0) {
    memcpy(ev->g_probe, ev->samples + (size_t)SALTA__SAMPLES * ne, sizeof(double) * (size_t)ne);
    expect_next(ev, 0, t_end, t_end);
    return 0;
  }
  if ((st = earliest(ev, ip, nb, &best, &winner))) return st;
  /* the group: every guard armed before the instant and past zero at it;
  ** one armed at the instant only with a crossing of its own; and the
  ** arming the guards gained along the step up to it */
  for (j = 0; j < ne; ++j) {
    const double at = ev->arm_t[j];
    if ((at < best && salta__on_firing_side(ev, j, ev->g_probe[j])) || j == winner ||
        (ev->crossing[j] && at <= best && salta__on_firing_side(ev, j, ev->g_probe[j])))
      ev->fire[ev->nfire++] = j;
    if (at <= best) ev->arming[j] = SALTA__ARMED;
  }
  expect_next(ev, nb, best, t_end);
  *tau = best;
  return ev->nfire;
}
