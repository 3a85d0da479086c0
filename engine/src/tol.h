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

/* Index reduction's dummies: a pivot below this fraction of its
** constraint's gradient at an accepted point has vanished (the dummy's
** Newton is then a thousand times worse conditioned than the best choice,
** and the integrator is about to cross or reflect off the point where it
** is 0); where a branch of the algebraic equations ends, a pivot below
** the second fraction is its cause. */
#define SALTA_PIVOT_TOL 1e-3
#define SALTA_PIVOT_BLAME 1e-2

/* Following a branch of g = 0 along a path: at most this many sub-steps,
** none shorter than this fraction of the path (shorter, and the branch has
** ended there: a fold or a singular point). Two solutions of a block at one
** point are one root when each unknown agrees to BRANCH_LOOSE times the
** integrator's tolerance, or, both solved to round-off, to BRANCH_TIGHT
** relative (distinct roots are that close only next to a fold). */
#define SALTA_TRACK_MAX_SUB 200
#define SALTA_TRACK_MIN_DS 1e-10
#define SALTA_BRANCH_LOOSE 100.0
#define SALTA_BRANCH_TIGHT 1e-6

/* Whether v[0..n) are all finite: the exponent bits of none all set, in
** integer operations alone (a floating-point operation on a subnormal
** value costs a microcode assist). c, the exponent bits that are clear, is
** 0 exactly for an infinity or a NaN; the least c over a few values, the
** OR of c - 1's top bits over many, which vectorises (the vector loop's
** set-up costs more than a handful of values: most callers pass a state
** vector, the probes of event location a hundred guards; tol.c). */
int salta__all_finite_many(const double *v, size_t n);
static inline int salta__all_finite(const double *v, size_t n) {
  const uint64_t exp_bits = 0x7ff0000000000000u;
  uint64_t least = exp_bits, b;
  size_t k;
  if (n >= 16) return salta__all_finite_many(v, n);
  for (k = 0; k < n; ++k) {
    memcpy(&b, v + k, sizeof b);
    least = (~b & exp_bits) < least ? ~b & exp_bits : least;
  }
  return least != 0;
}

/* max |v[k]| over v[0..n) (0 when n is 0; fmax passes over a NaN). */
static inline double salta__max_abs(const double *v, int n) {
  double m = 0;
  int k;
  for (k = 0; k < n; ++k) m = fmax(m, fabs(v[k]));
  return m;
}

#endif
