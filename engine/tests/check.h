/*
** check.h -- a minimal test harness: CHECK counts, the summary line is
** "[c:NAME] N passed, N failed" (spec/run.sh adds the totals).
*/
#ifndef SALTA_CHECK_H
#define SALTA_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond) check_((cond), #cond, __FILE__, __LINE__)
#define CHECK_NEAR(a, b, tol) \
  check_near_((a), (b), (tol), #a " ~ " #b, __FILE__, __LINE__)
#define CHECK_CONTAINS(s, sub) \
  check_((s) && strstr((s), (sub)) != NULL, "message contains \"" sub "\"", __FILE__, __LINE__)

static inline void check_(int ok, const char *what, const char *file, int line) {
  if (ok) { ++check_passed; return; }
  ++check_failed;
  printf("FAIL %s:%d: %s\n", file, line, what);
}

static inline void check_near_(double a, double b, double tol, const char *what,
                        const char *file, int line) {
  int ok = fabs(a - b) <= tol * (1.0 + fabs(b));
  if (!ok) printf("  (%.17g vs %.17g)\n", a, b);
  check_(ok, what, file, line);
}

static inline int check_summary(const char *name) {
  printf("[c:%s] %d passed, %d failed\n", name, check_passed, check_failed);
  return check_failed ? 1 : 0;
}

#endif
