/*
** tol.h -- the engine's numerical tolerances, in one place (internal).
*/
#ifndef SALTA_TOL_H
#define SALTA_TOL_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Event times are located to this width, a few ulps of t (absolute below
** |t| = 1): what the interpolant can resolve. */
static inline double salta__time_tol(double t) { return 4 * DBL_EPSILON * fmax(1.0, fabs(t)); }

/* A run whose event lands this close to tf has nothing left to integrate. */
static inline int salta__at_end(double t, double tf) { return tf - t <= 25 * salta__time_tol(tf); }

/* A guard's rate along the flow below this fraction of its terms is lost to
** cancellation or tangency (grazing): the event time's derivative amplifies
** the integration error a millionfold, so gradients are refused there. */
#define SALTA_GRAZING_RATIO 1e-6

/* Newton on g: converged when the step is at round-off, or when steps stop
** contracting while each is this small against its own component. */
#define SALTA_NEWTON_STEP_TOL 1e-13
#define SALTA_NEWTON_STALL_TOL 1e-10
#define SALTA_NEWTON_MAX_ITERS 50

/* Whether v[0..n) are all finite: the exponent bits of none all set (integer
** operations, so that the loop vectorises; a kernel's values pass here). */
static inline int salta__all_finite(const double *v, size_t n) {
  const uint64_t exp_bits = 0x7ff0000000000000u;
  uint64_t least = exp_bits;
  size_t k;
  for (k = 0; k < n; ++k) {
    uint64_t b, clear;
    memcpy(&b, v + k, sizeof b);
    clear = ~b & exp_bits;   /* 0 exactly when the exponent is all ones */
    least = clear < least ? clear : least;
  }
  return least != 0;
}

#endif
