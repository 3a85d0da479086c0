/*
** targets.h -- what a least-squares loss compares (internal): the target
** times, the outputs, the data (NaN: missing) and their weights, the
** residuals (least squares or a robust rho), the windows that drop data
** around the events where an output jumps, and sigmoid blending across
** event boundaries. Every gradient route (forward sensitivities, the
** discrete adjoint) computes its predictions from its own trajectory, a
** segment at a time, and hands them here: residual, window and blended
** prediction are stated once.
**
** Residual of a finite datum d_kj of output j at target time T_k, with
** u = w_kj (yhat_j(T_k) - d_kj) and z = (u / C)^2:
**   r_kj = v_kj u sqrt(rho(z) / z) / sqrt(N),   L = sum r_kj^2
**        = sum v_kj^2 C^2 rho(z) / N,
** N the number of finite data. rho is scipy.optimize.least_squares' loss
** function: z (least squares), 2 (sqrt(1 + z) - 1) (soft-L1), z or
** 2 sqrt(z) - 1 beyond 1 (Huber), log(1 + z) (Cauchy); C its scale in
** units of u. The residuals' squares sum to the loss and their Jacobian
** is exact, so Levenberg-Marquardt (which reads the loss from the
** residuals) and the gradient-only optimisers see one function.
** v_kj is 1, or with event windows the product over the events q of the
** run at which output j jumps of phi(|T_k - tau_q|): 0 within the width a
** of the event, then up to 1 over the ramp b along 6 s^5 - 15 s^4 +
** 10 s^3, s = (|T - tau| - a) / b (C2). The windows follow the event
** times, so dL/dtau_q carries their motion; with b = 0 the drop is hard
** and that term is 0. N stays the count of every finite datum.
**
** Blending over the segments [b_s, b_s+1] between boundaries (t0, the
** event groups, where the run ended):
**   yhat(T) = sum_s w_s(T) y_s(clip(T, b_s, b_s+1)) / B,  B = sum_s w_s + 1e-30,
**   w_s(T)  = s(beta (T - b_s)) - s(beta (T - b_s+1))
**           = s(beta (T - b_s)) s(beta (b_s+1 - T)) (1 - exp(-beta (b_s+1 - b_s))).
** Each boundary enters through one sigmoid, so a segment of zero length
** weighs nothing: an event group that splits into nearby events changes
** the blended loss continuously.
**
** Event times as data (salta_loss_set_event_data): datum i is the n_i-th
** firing (from 0) of event j_i (its n_i-th record in the run's event log),
** measured at time m_i with weight w_i (1 / sigma); its residual
**   r_i = w_i (tau_i - m_i) / sqrt(N),   dL/dtau_i = 2 r_i w_i / sqrt(N),
** N counting the finite output data and the event data alike. tau_i is
** the firing's time in the route's own trajectory, and each route turns
** dL/dtau_i into the gradient where it handles that event's time:
**  - sens: times the record's tau_p (sens.c's per-member event time, the
**    located instant's for a round of event iteration);
**  - the discrete adjoint: added to dL/dtau of its event block's boundary
**    (the discrete event time), which the block's time stationarity reads;
**  - the continuous adjoint (cadj.c): at the event, tau_i moves with the
**    left limit as d tau = -(e_x dx + e_z dz + e_p dp) / edot (the firing
**    guard's row and its rate, the member's own; a cascade round: the
**    located crossing's), so dL/dtau_i adds to the scalar that multiplies
**    that row in the adjoint's jump at tau_i (the member's tau_bar in
**    salta__jump_transpose): the term its own event-time terms (the
**    flows' jump, r_t) go into, giving lambda(tau-) its
**    -dL/dtau_i e_w / edot and the gradient its -dL/dtau_i e_p / edot.
** A firing the run does not reach (it ends first, at tf or a terminal
** event) is matched with the end of the run, tau_i = t_end (with d t_end /
** dp: the terminal event's, or none at tf): a penalty that is continuous
** as a firing leaves the run. Firings after an event's last datum are not
** data; a NaN time counts its firing without a residual. Without
** blending and windows, a run ends once it has passed the last target and
** seen every firing the data ask for (salta__targets_plan_stop).
**
** A route's part: its forward run with salta__targets_plan_stop's plan,
** then salta__targets_match_events on that run (ed[i].rec: the firing's
** record, -1 for the end), then per datum salta__targets_event_residual
** at its own tau_i, adding r_i^2 to L and dL/dtau_i where it differentiates
** that record's time (the end's when rec is -1); the residuals follow the
** outputs' in datum order.
*/
#ifndef SALTA_TARGETS_H
#define SALTA_TARGETS_H

#include <math.h>
#include <stddef.h>

#include "salta.h"
#include "sim_plan.h"

/* An event time as data: the nth (from 0) firing of event `event`,
** measured at `time` (NaN: counted, not compared) with weight w; rec: its
** record in the last run's event log, or -1 when the run did not reach it. */
typedef struct salta__event_datum {
  int event, nth, rec;
  double time, w;
} salta__event_datum;

typedef struct salta__targets {
  const salta_model_def *d;
  int nt, nout, nres;           /* target times, compared outputs, finite data (outputs and event times) */
  int nres_out;                 /* the finite output data (their residuals come first) */
  int ned;                      /* event data */
  salta__event_datum *ed;       /* ned */
  int *fires;                   /* per event, its data: the firings a run must see (ne) */
  double *times;                /* nt, sorted */
  int *outputs;                 /* nout output indices */
  double *data, *weights;       /* nt x nout, a row per time; data NaN: missing */
  double scale;                 /* 1 / sqrt(nres) */
  double beta;                  /* blending's sharpness; 0: none */
  int drop_after_end;           /* targets past a terminal event: 0 an error, 1 zero residuals */
  int nk;                       /* the targets the last run reached */
  int robust;                   /* SALTA_ROBUST_* */
  double robust_scale;          /* C, in units of the weighted residual */
  double win_width, win_ramp;   /* event windows: a and b; both 0: none */
  unsigned char *win_jumps;     /* ne x nout: output j jumps at event e (row per event) */
} salta__targets;

/* Copies the arrays (weights: nout or NULL, all 1); checks them, with a
** message in err (SALTA_ERRMSG_SIZE bytes). Free with salta__targets_free
** whatever it returns. */
int salta__targets_init(salta__targets *tg, const salta_model_def *d, const double *times, int nt,
                        const int *outputs, int nout, const double *data, const double *weights, char *err);
void salta__targets_free(salta__targets *tg);
/* Multiplies the weights by per-datum ones (nt x nout). */
int salta__targets_set_datum_weights(salta__targets *tg, const double *w, char *err);
int salta__targets_set_blend(salta__targets *tg, double beta, char *err);
int salta__targets_set_robust(salta__targets *tg, int kind, double scale, char *err);
/* jumps: ne x nout flags, copied (NULL: every output at every event). */
int salta__targets_set_windows(salta__targets *tg, double width, double ramp, const unsigned char *jumps,
                               char *err);
static inline int salta__targets_windowed(const salta__targets *tg) { return tg->win_width + tg->win_ramp > 0; }

/* Event data (n; times NaN: not compared, w NULL: all 1), replacing any
** before: copied and checked (an event of the model, increasing times
** per event, weights finite and >= 0); N and the residuals' scale follow. */
int salta__targets_set_event_data(salta__targets *tg, const int *event, const double *time, const double *w, int n,
                                  char *err);
/* Matches each event datum with its firing among sim's event records
** (ed[].rec); a measured time outside [o->t0, o->tf] is SALTA_EINPUT
** naming it. */
int salta__targets_match_events(salta__targets *tg, salta_sim *sim, const salta_sim_options *o, char *err);
/* The stop rule of the targets' runs (plan's stop_counts, stop_after):
** with event data and without blending or windows, a run may end once
** it is past the last target and every measured firing has been seen
** (with blending, the run's end is a boundary of the predictions, and a
** window may follow an event after the last target: it runs to tf). */
void salta__targets_plan_stop(const salta__targets *tg, salta__out_plan *plan);
/* Whether the loss has data: SALTA_EINPUT naming the model when not. */
int salta__targets_check_any(const salta__targets *tg, char *err);

/* Event datum i's residual at its firing time tau; *dLdtau = d(r^2)/dtau
** (0 for an unmeasured firing, whose residual is 0). */
static inline double salta__targets_event_residual(const salta__targets *tg, int i, double tau, double *dLdtau) {
  const salta__event_datum *e = &tg->ed[i];
  double r;
  if (isnan(e->time)) return *dLdtau = 0, 0;
  r = e->w * tg->scale * (tau - e->time);
  *dLdtau = 2 * r * e->w * tg->scale;
  return r;
}

/* The targets a run reached (nreached outputs, its stats st): all, or
** those before a terminal event's end when the others are dropped; else
** SALTA_EINPUT naming the event and the first target past the end. */
int salta__targets_reach(salta__targets *tg, int nreached, const salta_sim_stats *st, char *err);

static inline int salta__targets_missing(const salta__targets *tg, size_t kj) { return isnan(tg->data[kj]); }

/* rho(z) / z (-> 1 at 0) and rho'(z) of robust loss kind at z >= 0. */
static inline void salta__robust(int kind, double z, double *ratio, double *slope) {
  double q;
  switch (kind) {
    case SALTA_ROBUST_SOFT_L1:
      q = sqrt(1 + z);
      *ratio = 2 / (q + 1), *slope = 1 / q;
      return;
    case SALTA_ROBUST_HUBER:
      if (z <= 1) *ratio = *slope = 1;
      else q = sqrt(z), *ratio = (2 * q - 1) / z, *slope = 1 / q;
      return;
    case SALTA_ROBUST_CAUCHY:
      *ratio = z > 0 ? log1p(z) / z : 1, *slope = 1 / (1 + z);
      return;
    default:
      *ratio = *slope = 1;
  }
}

/* A target's per-datum results (nout each, in the order of the outputs):
** the residual r, dr = dr/dy, dL = d(r^2)/dy (the datum's share of the
** loss's derivative by its prediction) and s, the residual before its
** window factor (r = v s: dr/dv = s, d(r^2)/dv = 2 r s). */
typedef struct salta__resid { double *r, *dr, *dL, *s; } salta__resid;

/* salta__targets_residuals without a robust loss or windows, the same
** values: r = s = w (y - data), dr = w, dL = 2 r w (w the weight times
** scale; all 0 at a missing datum, NaN), by a loop that vectorises. */
void salta__plain_residuals(int n, const double *restrict data, const double *restrict weight, double scale,
                            const double *restrict y, double *restrict r, double *restrict s, double *restrict dr,
                            double *restrict dL);

/* The residuals of target k at the predictions y (nout) with window
** factors v (nout; NULL: 1) into out (a missing datum: all 0). Returns acc
** plus the squares of the residuals, added in order. (Inline: every route
** calls it per target.) */
static inline double salta__targets_residuals(const salta__targets *tg, int k, const double *y, const double *v,
                                              const salta__resid *out, double acc) {
  const double *data = tg->data + (size_t)k * tg->nout;
  int j;
  if (!tg->robust && !v) {
    salta__plain_residuals(tg->nout, data, tg->weights + (size_t)k * tg->nout, tg->scale, y, out->r, out->s, out->dr,
                           out->dL);
    for (j = 0; j < tg->nout; ++j) acc += out->r[j] * out->r[j];
    return acc;
  }
  for (j = 0; j < tg->nout; ++j) {
    double w = tg->weights[(size_t)k * tg->nout + j] * tg->scale, vj = v ? v[j] : 1, u, ratio, slope, root;
    if (isnan(data[j])) {
      out->r[j] = out->dr[j] = out->dL[j] = out->s[j] = 0;
      continue;
    }
    u = y[j] - data[j];
    if (tg->robust) {
      double q = tg->weights[(size_t)k * tg->nout + j] * u / tg->robust_scale;
      salta__robust(tg->robust, q * q, &ratio, &slope);
      root = sqrt(ratio);
    } else {
      root = slope = 1;
    }
    out->s[j] = w * u * root;
    out->r[j] = vj * out->s[j];
    out->dr[j] = vj * w * slope / root;
    out->dL[j] = 2 * out->r[j] * out->dr[j];
    acc += out->r[j] * out->r[j];
  }
  return acc;
}

/* ---- event windows --------------------------------------------------------------- */

/* A run's events as the windows follow them (in time order: times tau
** and model event indices ev, n of them, the caller's), and the factors
** at one target: v (nout) and dv[j * n + q - q0] = dv_j / dtau_q for the
** events q0 <= q < q0 + nq within reach of it. */
typedef struct salta__windows {
  int n;
  const double *tau;
  const int *ev;
  double *v, *dv;               /* nout; nout x n */
  int q0, nq, cursor;
} salta__windows;

int salta__windows_alloc(salta__windows *w, const salta__targets *tg, int n, const double *tau, const int *ev,
                         char *err);
void salta__windows_free(salta__windows *w);
/* The factors at target k; targets visited in increasing time. */
void salta__windows_at(salta__windows *w, const salta__targets *tg, int k);

/* ---- blending ------------------------------------------------------------------ */

#define SALTA__BLEND_FLOOR 1e-30

/* The weights at one target time: per segment w and its derivatives by
** the segment's start and end (dw_a, dw_b), and their sum B (with the
** floor). The arrays are the caller's, nseg each. */
typedef struct salta__blend {
  int nseg;
  double *w, *dw_a, *dw_b;
  double B;
} salta__blend;

/* Fills bl at T for the boundaries b[0 .. bl->nseg]. */
void salta__blend_at(salta__blend *bl, double beta, double T, const double *b);
/* The prediction from the segments' values v[s * stride]. */
double salta__blend_value(const salta__blend *bl, const double *v, size_t stride);
/* dpb[s] += scale d yhat / d b_s for every boundary (nseg + 1), through
** the weights alone (the values held), at the prediction yhat from v. */
void salta__blend_boundaries(const salta__blend *bl, const double *v, size_t stride, double yhat, double scale,
                             double *dpb);

#endif
