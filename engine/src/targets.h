/*
** targets.h -- what a least-squares loss compares (internal): the target
** times, the outputs, the data (NaN: missing) and their weights, the
** residuals, and sigmoid blending across event boundaries. Every gradient
** route (forward sensitivities, the discrete adjoint) computes its
** predictions from its own trajectory, a segment at a time, and hands them
** here: the residual and the blended prediction are stated once.
**
** Residual of a finite datum d_kj of output j at target time T_k:
**   r_kj = w_kj (yhat_j(T_k) - d_kj) / sqrt(N),   L = sum r_kj^2,
** N the number of finite data. Blending over the segments [b_s, b_s+1]
** between boundaries (t0, the event groups, where the run ended):
**   yhat(T) = sum_s w_s(T) y_s(clip(T, b_s, b_s+1)) / B,  B = sum_s w_s + 1e-30,
**   w_s(T)  = s(beta (T - b_s)) - s(beta (T - b_s+1))
**           = s(beta (T - b_s)) s(beta (b_s+1 - T)) (1 - exp(-beta (b_s+1 - b_s))).
** Each boundary enters through one sigmoid, so a segment of zero length
** weighs nothing: an event group that splits into nearby events changes
** the blended loss continuously.
*/
#ifndef SALTA_TARGETS_H
#define SALTA_TARGETS_H

#include <math.h>
#include <stddef.h>

#include "salta.h"

typedef struct salta__targets {
  const salta_model_def *d;
  int nt, nout, nres;           /* target times, compared outputs, finite data */
  double *times;                /* nt, sorted */
  int *outputs;                 /* nout output indices */
  double *data, *weights;       /* nt x nout, a row per time; data NaN: missing */
  double scale;                 /* 1 / sqrt(nres) */
  double beta;                  /* blending's sharpness; 0: none */
  int drop_after_end;           /* targets past a terminal event: 0 an error, 1 zero residuals */
  int nk;                       /* the targets the last run reached */
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

/* The targets a run reached (nreached outputs, its stats st): all, or
** those before a terminal event's end when the others are dropped; else
** SALTA_EINPUT naming the event and the first target past the end. */
int salta__targets_reach(salta__targets *tg, int nreached, const salta_sim_stats *st, char *err);

static inline int salta__targets_missing(const salta__targets *tg, size_t kj) { return isnan(tg->data[kj]); }

/* The derivative of datum kj's residual by its prediction. */
static inline double salta__targets_dr(const salta__targets *tg, size_t kj) { return tg->weights[kj] * tg->scale; }

/* The residuals of target k at the predictions y (nout, in the order of
** the outputs): r[j], and dL[j] = d(r^2)/dy, the datum's share of the
** loss's derivative by its prediction (0 and 0 for a missing datum).
** Returns acc plus the squares of the residuals, added in order. (Inline:
** every route calls it per target.) */
static inline double salta__targets_residuals(const salta__targets *tg, int k, const double *y, double *r, double *dL,
                                              double acc) {
  const double *data = tg->data + (size_t)k * tg->nout;
  int j;
  for (j = 0; j < tg->nout; ++j) {
    size_t kj = (size_t)k * tg->nout + j;
    double dr;
    if (isnan(data[j])) {
      r[j] = dL[j] = 0;
      continue;
    }
    dr = salta__targets_dr(tg, kj);
    r[j] = dr * (y[j] - data[j]);
    dL[j] = 2 * r[j] * dr;
    acc += r[j] * r[j];
  }
  return acc;
}

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
