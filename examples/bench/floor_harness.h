/*
** floor_harness.h -- what the floor programs share around their own
** evaluation: reading numbers and target rows from the input file, the
** command line, and timing repeated
** evaluations with the report bench.lua parses ("loss", "grad",
** "median_us", "min_us", "max_us" lines). Included by one program each.
*/
#ifndef FLOOR_HARNESS_H
#define FLOOR_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int num(FILE *f, double *v) { return fscanf(f, "%lf", v) == 1 ? 0 : -1; }

static int nums(FILE *f, double *v, int n) {
  int i;
  for (i = 0; i < n; ++i)
    if (num(f, v + i)) return -1;
  return 0;
}

/* The count nt, then nt target rows "t d_1 .. d_ny" into fresh arrays
** times (nt) and data (nt x ny, NaN: no datum); nres counts the finite
** data. 0, or -1 (what was allocated is in *times and *data to free). */
static int read_targets(FILE *f, int *nt, int ny, double **times, double **data, int *nres) {
  double n;
  int k, j;
  *times = *data = NULL, *nt = *nres = 0;
  if (num(f, &n) || !(n >= 1 && n < 1e8)) return -1;
  *nt = (int)n;
  *times = malloc(sizeof(double) * (size_t)*nt);
  *data = malloc(sizeof(double) * (size_t)*nt * (size_t)ny);
  if (!*times || !*data) return -1;
  for (k = 0; k < *nt; ++k) {
    if (num(f, *times + k) || nums(f, *data + (size_t)k * ny, ny)) return -1;
    for (j = 0; j < ny; ++j) *nres += !isnan((*data)[(size_t)k * ny + j]);
  }
  return *nres > 0 ? 0 : -1;
}

/* The command line INPUT [REPEATS]: the repeats (reps_default without
** them), or -1 after the usage message. */
static int floor_reps(int argc, char **argv, int reps_default) {
  int reps = argc > 2 ? atoi(argv[2]) : reps_default;
  if (argc < 2 || reps < 1) {
    fprintf(stderr, "usage: %s INPUT [REPEATS]\n", argv[0]);
    return -1;
  }
  return reps;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One evaluation of the loss and its np-long gradient; nonzero on failure. */
typedef int (*floor_eval)(void *ctx, double *loss, double *grad);

/* A warm-up and reps timed evaluations, then the report on stdout.
** 0, or 1 (with a message on stderr) when an evaluation fails. */
static int floor_time(const char *prog, floor_eval eval, void *ctx, int np, int reps) {
  double loss = 0, *grad = malloc(sizeof(double) * (size_t)np), *us = malloc(sizeof(double) * (size_t)reps);
  int k, st = 0;
  if (!grad || !us) st = 1;
  for (k = -1; !st && k < reps; ++k) {   /* k = -1: the warm-up */
    double t0 = now_us();
    if (eval(ctx, &loss, grad)) {
      fprintf(stderr, "%s: the evaluation failed (step size underflow or grazing event)\n", prog);
      st = 1;
    } else if (k >= 0)
      us[k] = now_us() - t0;
  }
  if (!st) {
    qsort(us, (size_t)reps, sizeof(double), by_value);
    printf("loss %.17g\ngrad", loss);
    for (k = 0; k < np; ++k) printf(" %.17g", grad[k]);
    printf("\nmedian_us %.3f\nmin_us %.3f\nmax_us %.3f\n",
           reps % 2 ? us[reps / 2] : 0.5 * (us[reps / 2 - 1] + us[reps / 2]), us[0], us[reps - 1]);
  }
  free(grad);
  free(us);
  return st;
}

#endif
