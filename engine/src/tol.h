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

/* Whether v[0..n) are all finite: v - v is zero for a finite value (-0
** under downward rounding: the sign bit is dropped) and NaN otherwise, so
** the OR of their bits is 0 exactly when all are; no comparison carries
** from one entry to the next, and the loop vectorises (a kernel's values
** pass here). */
#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
#error "salta's finite checks need IEEE arithmetic: build without -ffast-math / -ffinite-math-only"
#endif
static inline int salta__all_finite(const double *v, size_t n) {
  const uint64_t magnitude = 0x7fffffffffffffffu;
  uint64_t any = 0;
  size_t k;
  for (k = 0; k < n; ++k) {
    const double d = v[k] - v[k];
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    any |= b & magnitude;
  }
  return any == 0;
}

/* max |v[k]| over v[0..n) (0 when n is 0; fmax passes over a NaN). */
static inline double salta__max_abs(const double *v, int n) {
  double m = 0;
  int k;
  for (k = 0; k < n; ++k) m = fmax(m, fabs(v[k]));
  return m;
}

#endif
