/*
** blend.c -- segment weights of the blended prediction (see blend.h).
*/
#include <math.h>

#include "blend.h"

static double sigmoid(double u) { return 1.0 / (1.0 + exp(-u)); }

double salta__blend_weight(double beta, double T, double a, double b, double *dw_da, double *dw_db) {
  double sa = sigmoid(beta * (T - a)), sb = sigmoid(beta * (T - b));
  if (dw_da) *dw_da = -beta * sa * (1 - sa);
  if (dw_db) *dw_db = beta * sb * (1 - sb);
  /* the product form: no cancellation where both sigmoids are near 1 */
  return sa * sigmoid(beta * (b - T)) * -expm1(-beta * (b - a));
}
