/*
** dopri.c -- the Dormand-Prince 5(4) method (see dopri.h).
*/
#include <math.h>
#include <string.h>

#include "dopri.h"
#include "salta.h"
#include "wide.h"

/* The tableau (Hairer, Norsett, Wanner: DOPRI5): nodes, stages, error
** weights and dense-output weights. */
static const double DP_C[7] = {0, 1.0 / 5, 3.0 / 10, 4.0 / 5, 8.0 / 9, 1, 1};
static const double DP_A[7][6] = {
  {0},
  {1.0 / 5},
  {3.0 / 40, 9.0 / 40},
  {44.0 / 45, -56.0 / 15, 32.0 / 9},
  {19372.0 / 6561, -25360.0 / 2187, 64448.0 / 6561, -212.0 / 729},
  {9017.0 / 3168, -355.0 / 33, 46732.0 / 5247, 49.0 / 176, -5103.0 / 18656},
  {35.0 / 384, 0, 500.0 / 1113, 125.0 / 192, -2187.0 / 6784, 11.0 / 84},
};
static const double DP_ERR[7] = {71.0 / 57600, 0, -71.0 / 16695, 71.0 / 1920, -17253.0 / 339200,
                                 22.0 / 525, -1.0 / 40};
static const double DP_DENSE[7] = {-12715105075.0 / 11282082432.0, 0, 87487479700.0 / 32700410799.0,
                                   -10690763975.0 / 1880347072.0, 701980252875.0 / 199316789632.0,
                                   -1453857185.0 / 822651844.0, 69997945.0 / 29380423.0};

size_t salta__dopri_arrays(salta__dopri *dp, salta__array *list) {
  size_t m = (size_t)dp->m;
  salta__array all[SALTA__DOPRI_ARRAYS] = {
    SALTA__ARRAY(dp->Y, m), SALTA__ARRAY(dp->Ynew, m), SALTA__ARRAY(dp->K[0], m), SALTA__ARRAY(dp->K[1], m),
    SALTA__ARRAY(dp->K[2], m), SALTA__ARRAY(dp->K[3], m), SALTA__ARRAY(dp->K[4], m), SALTA__ARRAY(dp->K[5], m),
    SALTA__ARRAY(dp->K[6], m), SALTA__ARRAY(dp->stage, m), SALTA__ARRAY(dp->y6, m), SALTA__ARRAY(dp->err, m),
    SALTA__ARRAY(dp->acc, m), SALTA__ARRAY(dp->atol, m), SALTA__ARRAY(dp->rtol, dp->per_rtol ? m : 0),
    SALTA__ARRAY(dp->dense, dp->no_dense ? 0 : 5 * m)};
  memcpy(list, all, sizeof all);
  return SALTA__DOPRI_ARRAYS;
}

/* out := sum_k c[k] K[k] for k < nk (1 to 7), summed in the order of k,
** in one pass over the components; with Y, out := Y + sum_k (h c[k]) K[k]
** instead (a stage). */
SALTA__WIDE static void combine(double *restrict out, const double *c, double *const *K, int nk, int m,
                    const double *restrict Y, double h) {
  const double *restrict K0 = K[0], *restrict K1 = K[1], *restrict K2 = K[2], *restrict K3 = K[3],
               *restrict K4 = K[4], *restrict K5 = K[5], *restrict K6 = K[6];
  const double s = Y ? h : 1, c0 = s * c[0], c1 = nk > 1 ? s * c[1] : 0, c2 = nk > 2 ? s * c[2] : 0,
               c3 = nk > 3 ? s * c[3] : 0, c4 = nk > 4 ? s * c[4] : 0, c5 = nk > 5 ? s * c[5] : 0,
               c6 = nk > 6 ? s * c[6] : 0;
  int i;
/* one loop per stage count, with and without Y */
#define SALTA__COMBINE(sum)                                    \
  do {                                                         \
    if (Y)                                                     \
      for (i = 0; i < m; ++i) out[i] = Y[i] + (sum);           \
    else                                                       \
      for (i = 0; i < m; ++i) out[i] = (sum);                  \
  } while (0)
  switch (nk) {
    case 1: SALTA__COMBINE(c0 * K0[i]); break;
    case 2: SALTA__COMBINE(c0 * K0[i] + c1 * K1[i]); break;
    case 3: SALTA__COMBINE(c0 * K0[i] + c1 * K1[i] + c2 * K2[i]); break;
    case 4: SALTA__COMBINE(c0 * K0[i] + c1 * K1[i] + c2 * K2[i] + c3 * K3[i]); break;
    case 5: SALTA__COMBINE(c0 * K0[i] + c1 * K1[i] + c2 * K2[i] + c3 * K3[i] + c4 * K4[i]); break;
    case 6: SALTA__COMBINE(c0 * K0[i] + c1 * K1[i] + c2 * K2[i] + c3 * K3[i] + c4 * K4[i] + c5 * K5[i]); break;
    default:
      SALTA__COMBINE(c0 * K0[i] + c1 * K1[i] + c2 * K2[i] + c3 * K3[i] + c4 * K4[i] + c5 * K5[i] + c6 * K6[i]);
  }
#undef SALTA__COMBINE
}

double salta__dopri_node(int k) { return DP_C[k]; }

void salta__dopri_stage(salta__dopri *dp, int k, double h) { combine(dp->stage, DP_A[k], dp->K, k, dp->m, dp->Y, h); }

double salta__dopri_wrms(const salta__dopri *dp, const double *v, const double *y0, const double *y1, double rtol) {
  double sum = 0;
  int i;
  if (dp->per_rtol)
    for (i = 0; i < dp->m; ++i) {
      double a0 = fabs(y0[i]), a1 = fabs(y1[i]), sc = dp->atol[i] + dp->rtol[i] * (a0 > a1 ? a0 : a1);
      sum += (v[i] / sc) * (v[i] / sc);
    }
  else
    for (i = 0; i < dp->m; ++i) {
      double a0 = fabs(y0[i]), a1 = fabs(y1[i]), sc = dp->atol[i] + rtol * (a0 > a1 ? a0 : a1);
      sum += (v[i] / sc) * (v[i] / sc);
    }
  return sqrt(sum / dp->m);
}

double salta__dopri_initial_step(salta__dopri *dp, double t, double tf, double rtol, double max_step) {
  double d0 = salta__dopri_wrms(dp, dp->Y, dp->Y, dp->Y, rtol), d1 = salta__dopri_wrms(dp, dp->K[0], dp->Y, dp->Y, rtol);
  double d2, h0, h1;
  int i;
  h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
  h0 = fmin(h0, tf - t);
  for (i = 0; i < dp->m; ++i) dp->stage[i] = dp->Y[i] + h0 * dp->K[0][i];
  if (dp->rhs(dp->ctx, t + h0, dp->stage, dp->K[1]) != SALTA_OK) return h0;
  for (i = 0; i < dp->m; ++i) dp->err[i] = dp->K[1][i] - dp->K[0][i];
  d2 = salta__dopri_wrms(dp, dp->err, dp->Y, dp->Y, rtol) / h0;
  h1 = fmax(d1, d2) <= 1e-15 ? fmax(1e-6, h0 * 1e-3) : pow(0.01 / fmax(d1, d2), 0.2);
  h0 = fmin(100 * h0, h1);
  if (max_step > 0) h0 = fmin(h0, max_step);
  return fmin(h0, tf - t);
}

double salta__dopri_attempt(salta__dopri *dp, double t, double h, double rtol, int *st) {
  int i, k, m = dp->m;
  for (k = 1; k < 7; ++k) {
    salta__dopri_stage(dp, k, h);
    if (k == 5) memcpy(dp->y6, dp->stage, sizeof(double) * (size_t)m);
    if ((*st = dp->rhs(dp->ctx, t + DP_C[k] * h, dp->stage, dp->K[k])) != SALTA_OK) return -1;
  }
  memcpy(dp->Ynew, dp->stage, sizeof(double) * (size_t)m);   /* stage 7 is the 5th-order solution */
  combine(dp->acc, DP_ERR, dp->K, 7, m, NULL, 0);
  for (i = 0; i < m; ++i) dp->err[i] = h * dp->acc[i];
  return salta__dopri_wrms(dp, dp->err, dp->Y, dp->Ynew, rtol);
}

/* The interpolant of the attempted step [t, t + h]. */
SALTA__WIDE static void make_dense(salta__dopri *dp, double t, double h) {
  int j, k;
  combine(dp->acc, DP_DENSE, dp->K, 7, dp->m, NULL, 0);
  for (k = 0; k <= dp->nk; ++k)
    for (j = 0; j < dp->nb; ++j) {
      int i = k * dp->nb + j;   /* in Y */
      double y0 = dp->Y[i], y1 = dp->Ynew[i], dy = y1 - y0, bsp = h * dp->K[0][i] - dy;
      double *d = dp->dense + salta__dopri_coef(dp, j, k);
      d[0] = y0;
      d[1] = dy;
      d[2] = bsp;
      d[3] = dy - h * dp->K[6][i] - bsp;
      d[4] = h * dp->acc[i];
    }
  dp->t_old = t;
  dp->h_old = h;
}

void salta__dopri_accept(salta__dopri *dp, double t, double h, double errn) {
  if (!dp->no_dense) make_dense(dp, t, h);
  memcpy(dp->Y, dp->Ynew, sizeof(double) * (size_t)dp->m);
  memcpy(dp->K[0], dp->K[6], sizeof(double) * (size_t)dp->m);
  dp->errn = errn;
  dp->resize = 1;
}

void salta__dopri_resize(salta__dopri *dp) {
  if (!dp->resize) return;
  dp->h *= fmin(dp->rejected ? 1.0 : 10.0, fmax(0.2, 0.9 * pow(fmax(dp->errn, 1e-10), -0.2)));
  dp->rejected = dp->resize = 0;
}

int salta__dopri_clip(salta__dopri *dp, double t, double tf, double max_step) {
  if (max_step > 0) dp->h = fmin(dp->h, max_step);
  if (t + dp->h > tf || tf - (t + dp->h) < 1e-12 * fmax(1.0, fabs(tf))) {
    dp->h = tf - t;
    return 1;
  }
  return dp->h < 1e-13 * fmax(1.0, fabs(t)) ? -1 : 0;
}

void salta__dopri_reject(salta__dopri *dp, double errn) {
  dp->h *= isfinite(errn) ? fmax(0.2, 0.9 * pow(errn, -0.2)) : 0.2;
  dp->rejected = 1;
}

void salta__dopri_restart(salta__dopri *dp) { dp->resize = 0; }
