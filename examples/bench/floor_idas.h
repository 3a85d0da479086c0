/*
** floor_idas.h -- what the IDAS floor programs (floor_idas_*.c) share: IDAS
** set up as a C programmer would (dense linear solver, the hand-written
** Jacobian, staggered forward sensitivities in the error test with
** atol / |p| as salta's ida.c, root finding), restarts after an event, the
** counters that survive IDAReInit, and the stats line bench.lua parses.
** Included by one program each.
*/
#ifndef FLOOR_IDAS_H
#define FLOOR_IDAS_H

#include <idas/idas.h>
#include <math.h>
#include <nvector/nvector_serial.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

/* The model's callbacks and sizes: n unknowns of which the first nx are
** differential, np sensitivity directions (parameters p), nroots guards
** with their directions. */
typedef struct floor_model {
  int n, nx, np, nroots;
  const int *directions;
  IDAResFn residual;
  IDALsJacFn jacobian;
  IDASensResFn sens_residual;
  IDARootFn guard;
} floor_model;

typedef struct floor_ida {
  int np;
  SUNContext sun;
  void *mem;
  N_Vector y, yp, id, *yS, *ypS;
  SUNMatrix A;
  SUNLinearSolver LS;
  long steps, res, jacs, roots;   /* added up over restarts; roots by the guard */
} floor_ida;

/* IDAS for model m on [t0, tf] at (rtol, atol), user data `data`; y, yp
** and the sensitivities start at zero. 0, or -1 (f partly set up: free it). */
static int floor_ida_new(floor_ida *f, const floor_model *m, const double *p, double t0, double tf, double rtol,
                         double atol, void *data) {
  double *atol_s = malloc(sizeof(double) * (size_t)m->np);
  int k, st;
  memset(f, 0, sizeof *f);
  f->np = m->np;
  if (!atol_s || SUNContext_Create(NULL, &f->sun)) {
    free(atol_s);
    return -1;
  }
  f->y = N_VNew_Serial(m->n, f->sun), f->yp = N_VNew_Serial(m->n, f->sun), f->id = N_VNew_Serial(m->n, f->sun);
  f->A = SUNDenseMatrix(m->n, m->n, f->sun);
  if (f->y) f->yS = N_VCloneVectorArray(m->np, f->y), f->ypS = N_VCloneVectorArray(m->np, f->y);
  if (f->y && f->A) f->LS = SUNLinSol_Dense(f->y, f->A, f->sun);
  f->mem = IDACreate(f->sun);
  if (!f->y || !f->yp || !f->id || !f->yS || !f->ypS || !f->A || !f->LS || !f->mem) {
    free(atol_s);
    return -1;
  }
  for (k = 0; k < m->n; ++k) NV_Ith_S(f->id, k) = k < m->nx ? 1.0 : 0.0;
  for (k = 0; k < m->np; ++k) {
    atol_s[k] = atol / (fabs(p[k]) > 0 ? fabs(p[k]) : 1.0);
    N_VConst(0.0, f->yS[k]);
    N_VConst(0.0, f->ypS[k]);
  }
  N_VConst(0.0, f->y);
  N_VConst(0.0, f->yp);
  st = IDAInit(f->mem, m->residual, t0, f->y, f->yp) || IDASStolerances(f->mem, rtol, atol) ||
       IDASetUserData(f->mem, data) || IDASetId(f->mem, f->id) || IDASetLinearSolver(f->mem, f->LS, f->A) ||
       IDASetJacFn(f->mem, m->jacobian) || IDASetMaxNumSteps(f->mem, 1000000) || IDASetStopTime(f->mem, tf) ||
       IDARootInit(f->mem, m->nroots, m->guard) || IDASetRootDirection(f->mem, (int *)m->directions) ||
       IDASensInit(f->mem, m->np, IDA_STAGGERED, m->sens_residual, f->yS, f->ypS) ||
       IDASensSStolerances(f->mem, rtol, atol_s) || IDASetSensErrCon(f->mem, SUNTRUE);
  free(atol_s);
  return st ? -1 : 0;
}

/* IDAReInit zeroes IDAS's counters: they are added up before it. */
static void floor_ida_count(floor_ida *f) {
  long v;
  IDAGetNumSteps(f->mem, &v), f->steps += v;
  IDAGetNumResEvals(f->mem, &v), f->res += v;
  IDAGetNumJacEvals(f->mem, &v), f->jacs += v;
}

/* A restart at t from f's y, yp and sensitivities (made consistent by the
** caller). 0, or -1. */
static int floor_ida_restart(floor_ida *f, double t) {
  floor_ida_count(f);
  return IDAReInit(f->mem, t, f->y, f->yp) || IDASensReInit(f->mem, IDA_STAGGERED, f->yS, f->ypS) ? -1 : 0;
}

static void floor_ida_free(floor_ida *f) {
  if (f->mem) IDAFree(&f->mem);
  if (f->LS) SUNLinSolFree(f->LS);
  if (f->A) SUNMatDestroy(f->A);
  if (f->yS) N_VDestroyVectorArray(f->yS, f->np);
  if (f->ypS) N_VDestroyVectorArray(f->ypS, f->np);
  if (f->y) N_VDestroy(f->y);
  if (f->yp) N_VDestroy(f->yp);
  if (f->id) N_VDestroy(f->id);
  if (f->sun) SUNContext_Free(&f->sun);
}

/* The counters per evaluation (evals of them, the warm-up included) on
** stderr, for bench.lua. */
static void floor_ida_report(const floor_ida *f, int evals) {
  fprintf(stderr, "per evaluation: steps %ld, residuals %ld, Jacobians %ld, root evaluations %ld\n",
          f->steps / evals, f->res / evals, f->jacs / evals, f->roots / evals);
}

#endif
