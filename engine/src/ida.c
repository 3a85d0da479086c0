/*
** ida.c -- the IDAS integrator (variable-order BDF) behind the integrator
** interface: the residual F = [x' - f; g] with the exact iteration matrix
** (dense LAPACK or KLU on the compile-time pattern), forward sensitivities
** with the generated Jacobians, one step at a time with tf as stop time.
** Events are located by the segment loop on IDAS's interpolant, so IDAS's
** own root finding is not used.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <idas/idas.h>
#include <nvector/nvector_serial.h>
#include <sunlinsol/sunlinsol_klu.h>
#include <sunmatrix/sunmatrix_dense.h>
#include <sunmatrix/sunmatrix_sparse.h>

#include "arrays.h"
#include "errors.h"
#include "integrator.h"
#include "linsol.h"

typedef struct ida {
  salta__integrator_env env;
  int nx, n, ns, sparse;
  SUNContext ctx;
  void *mem;
  N_Vector y, yp, id, atol, dky;
  N_Vector *yS, *ypS, *dkyS;
  SUNMatrix A;
  SUNLinearSolver LS;
  salta__pattern pat;           /* the iteration matrix's pattern (KLU) */
  double *S, *Sp;               /* n x ns: sensitivities and their derivatives */
  double *w_restart;            /* the state of the last restart (n) */
  double t_restart, h_restart;  /* its time and the first step it was given (0: IDAS's) */
  double **cols_S, **cols_Sp, **cols_R;   /* the sensitivity residual's columns */
  int ready;                    /* IDAInit and its solvers are set up */
  int bad_row;                  /* a residual row found not finite during a step, or -1 */
  double bad_t, bad_v;
  char msg[512];                /* IDAS's last error message */
} ida;

static char *err_of(ida *c) { return c->env.dae->err; }

/* ---- callbacks --------------------------------------------------------------- */

static int residual(sunrealtype t, N_Vector yy, N_Vector yp, N_Vector rr, void *ud) {
  ida *c = ud;
  double *r = N_VGetArrayPointer(rr);
  int bad = salta__dae_residual(c->env.dae, t, N_VGetArrayPointer(yy), N_VGetArrayPointer(yp), r);
  if (bad == -1 || bad == -2) return bad == -1 ? 0 : -1;
  if (c->bad_row < 0) c->bad_row = bad, c->bad_t = t, c->bad_v = r[bad];
  return 1;   /* recoverable: IDAS tries a smaller step */
}

static int jacobian(sunrealtype t, sunrealtype cj, N_Vector yy, N_Vector yp, N_Vector rr, SUNMatrix J,
                    void *ud, N_Vector t1, N_Vector t2, N_Vector t3) {
  ida *c = ud;
  (void)yp; (void)rr; (void)t1; (void)t2; (void)t3;
  /* not finite: recoverable, IDAS tries a smaller step */
  return salta__dae_iter_dense(c->env.dae, t, N_VGetArrayPointer(yy), cj, 1.0, SM_DATA_D(J)) ? 1 : 0;
}

static int jacobian_sparse(sunrealtype t, sunrealtype cj, N_Vector yy, N_Vector yp, N_Vector rr, SUNMatrix J,
                           void *ud, N_Vector t1, N_Vector t2, N_Vector t3) {
  ida *c = ud;
  sunindextype *colptr = SM_INDEXPTRS_S(J), *rowind = SM_INDEXVALS_S(J);
  int k;
  (void)yp; (void)rr; (void)t1; (void)t2; (void)t3;
  for (k = 0; k <= c->pat.n; ++k) colptr[k] = c->pat.colptr[k];
  for (k = 0; k < c->pat.nnz; ++k) rowind[k] = c->pat.rowind[k];
  return salta__dae_iter_sparse(c->env.dae, &c->pat, t, N_VGetArrayPointer(yy), cj, 1.0, SM_DATA_S(J)) ? 1 : 0;
}

static int sens_residual(int ns, double t, N_Vector yy, N_Vector yp, N_Vector rr, N_Vector *yS, N_Vector *ypS,
                         N_Vector *rrS, void *ud, N_Vector t1, N_Vector t2, N_Vector t3) {
  ida *c = ud;
  int k;
  (void)yp; (void)rr; (void)t1; (void)t2; (void)t3;
  for (k = 0; k < ns; ++k) {
    c->cols_S[k] = N_VGetArrayPointer(yS[k]);
    c->cols_Sp[k] = N_VGetArrayPointer(ypS[k]);
    c->cols_R[k] = N_VGetArrayPointer(rrS[k]);
  }
  salta__sens_residual(c->env.sens, t, N_VGetArrayPointer(yy), c->cols_S, c->cols_Sp, c->cols_R);
  return 0;
}

static void error_handler(int code, const char *module, const char *fn, char *msg, void *ud) {
  ida *c = ud;
  (void)code; (void)module;
  snprintf(c->msg, sizeof c->msg, "%s: %s", fn, msg);
}

/* ---- helpers ---------------------------------------------------------------------- */

static void to_vectors(const ida *c, const double *S, N_Vector *V) {
  int k;
  for (k = 0; k < c->ns; ++k) memcpy(N_VGetArrayPointer(V[k]), S + (size_t)k * c->n, sizeof(double) * (size_t)c->n);
}

static void from_vectors(const ida *c, N_Vector *V, double *S) {
  int k;
  for (k = 0; k < c->ns; ++k) memcpy(S + (size_t)k * c->n, N_VGetArrayPointer(V[k]), sizeof(double) * (size_t)c->n);
}

static void accumulate_stats(ida *c) {
  salta_sim_stats *s = c->env.stats;
  long v;
  if (!c->ready) return;
  if (IDAGetNumSteps(c->mem, &v) == IDA_SUCCESS) s->steps += v;
  if (IDAGetNumResEvals(c->mem, &v) == IDA_SUCCESS) s->res_evals += v;
  if (IDAGetNumJacEvals(c->mem, &v) == IDA_SUCCESS) s->jac_evals += v;
  if (IDAGetNumNonlinSolvIters(c->mem, &v) == IDA_SUCCESS) s->newton_iters += v;
  if (IDAGetNumNonlinSolvConvFails(c->mem, &v) == IDA_SUCCESS) s->newton_conv_fails += v;
  if (IDAGetNumErrTestFails(c->mem, &v) == IDA_SUCCESS) s->err_test_fails += v;
}

/* A corrector that stops converging near a fold of the algebraic
** equations, or where a dummy's pivot vanishes: the message says which
** (SALTA_OK: neither was found past the last accepted point). */
static int explain_fold(ida *c, const char *flag, double t) {
  char tail[160];
  double h = 0;
  if (IDAGetLastStep(c->mem, &h) != IDA_SUCCESS || !(h > 0)) IDAGetCurrentStep(c->mem, &h);
  snprintf(tail, sizeof tail, " (IDAS: %s at t = %.17g)", flag ? flag : "?", t);
  return salta__track_explain(c->env.track, fabs(h), tail);
}

static int fail_idas(ida *c, int flag, double t) {
  const salta_model_def *d = c->env.dae->d;
  char *name = IDAGetReturnFlagName(flag);
  if (c->bad_row >= 0 && c->bad_row < c->nx)
    salta__fail(err_of(c), SALTA_ESOLVER, "model '%s': f for state '%s' is %g at t = %.17g (%s)", d->name,
                d->x_names[c->bad_row], c->bad_v, c->bad_t, name ? name : "?");
  else if (c->bad_row >= 0)
    salta__fail(err_of(c), SALTA_ESOLVER, "model '%s': algebraic equation g[%d] is %g at t = %.17g (%s)", d->name,
                c->bad_row - c->nx + 1, c->bad_v, c->bad_t, name ? name : "?");
  else if (explain_fold(c, name, t) == SALTA_OK) {
    char cause[512];
    salta__dae_bad_text(c->env.dae, cause, sizeof cause);
    salta__fail(err_of(c), SALTA_ESOLVER, "model '%s': IDAS failed at t = %.17g: %s (%s)%s%s", d->name, t,
                name ? name : "?", c->msg, cause[0] ? "; first non-finite Jacobian value: " : "", cause);
  }
  free(name);
  return SALTA_ESOLVER;
}

/* IDAS's first step after a (re)start is about 0.5 / ||y'||: a derivative
** huge against the tolerances leaves no step to take (IDA_ILL_INPUT). */
static int fail_first_step(ida *c, double t) {
  const double *wp = N_VGetArrayPointer(c->yp);
  int i, big = 0;
  for (i = 1; i < c->nx; ++i)
    if (fabs(wp[i]) > fabs(wp[big])) big = i;
  return salta__fail(err_of(c), SALTA_ESOLVER,
                     "model '%s': no first step possible at t = %.17g: the derivative of state '%s' is %g, too large "
                     "for the tolerances: the solution blows up there (a finite escape time), or set init_step",
                     c->env.dae->d->name, t, c->nx > 0 ? c->env.dae->d->x_names[big] : "?", c->nx > 0 ? wp[big] : 0.0);
}

/* y' at a consistent point: x' = f, z' = 0 (IDAS leaves z' out); and S'. */
static int set_derivatives(ida *c, double t) {
  const salta__dae *a = c->env.dae;
  double *w = N_VGetArrayPointer(c->y), *wp = N_VGetArrayPointer(c->yp);
  a->d->f.eval(t, w, w + c->nx, a->p, wp);
  memset(wp + c->nx, 0, sizeof(double) * (size_t)(c->n - c->nx));
  if (c->ns > 0) {
    salta__sens_prime(c->env.sens, t, w, c->S, c->Sp);
    if (salta__sens_check(c->env.sens, c->Sp, c->nx, c->n, t, w)) return SALTA_ESOLVER;
    to_vectors(c, c->S, c->yS);
    to_vectors(c, c->Sp, c->ypS);
  }
  return SALTA_OK;
}

/* Forward sensitivities in the error test, with absolute tolerances
** atol / |p_j| like IDAS's own estimate. The staggered corrector: with
** IDA_SIMULTANEOUS, IDAS 6.4's Newton iteration failed to converge
** repeatedly on the Cauer ladder and the spring latch (steps collapsing
** to 1e-9), with our residual and with its own difference quotients alike. */
static int sens_setup(ida *c) {
  const salta__sens *sn = c->env.sens;
  double *atol_s = malloc(sizeof(double) * (size_t)c->ns);
  int k, rc;
  if (!atol_s) return -1;
  for (k = 0; k < c->ns; ++k) {
    double pk = sn->dirs[k] >= 0 ? fabs(c->env.dae->p[sn->dirs[k]]) : 1.0;
    atol_s[k] = c->env.o->atol / (pk > 0 ? pk : 1.0);
  }
  rc = IDASensInit(c->mem, c->ns, IDA_STAGGERED, sens_residual, c->yS, c->ypS) ||
       IDASensSStolerances(c->mem, c->env.o->rtol, atol_s) || IDASetSensErrCon(c->mem, SUNTRUE);
  free(atol_s);
  return rc ? -1 : 0;
}

static int setup(ida *c, double t0) {
  const salta_sim_options *o = c->env.o;
  double *idv;
  int i, n = c->n;
  if (IDAInit(c->mem, residual, t0, c->y, c->yp) || IDASetUserData(c->mem, c)) return -1;
  if (o->atol_vec) {
    c->atol = N_VNew_Serial(n, c->ctx);
    if (!c->atol) return -1;
    memcpy(N_VGetArrayPointer(c->atol), o->atol_vec, sizeof(double) * (size_t)n);
    if (IDASVtolerances(c->mem, o->rtol, c->atol)) return -1;
  } else if (IDASStolerances(c->mem, o->rtol, o->atol)) {
    return -1;
  }
  idv = N_VGetArrayPointer(c->id);
  for (i = 0; i < n; ++i) idv[i] = i < c->nx ? 1.0 : 0.0;
  if (IDASetLinearSolver(c->mem, c->LS, c->A) || IDASetJacFn(c->mem, c->sparse ? jacobian_sparse : jacobian) ||
      IDASetId(c->mem, c->id) || IDASetSuppressAlg(c->mem, SUNTRUE) ||
      IDASetDeltaCjLSetup(c->mem, 0.25) ||  /* fewer refactorisations as steps grow */
      IDASetStopTime(c->mem, o->tf))
    return -1;
  if (o->max_step > 0 && IDASetMaxStep(c->mem, o->max_step)) return -1;
  if (o->init_step > 0 && IDASetInitStep(c->mem, o->init_step)) return -1;
  if (o->max_order > 0 && IDASetMaxOrd(c->mem, o->max_order)) return -1;
  if (c->ns > 0 && sens_setup(c)) return -1;
  c->ready = 1;
  return 0;
}

/* ---- the interface ------------------------------------------------------------------ */

static int ida_start(void *self, double t0, const double *w, const double *S) {
  ida *c = self;
  memcpy(N_VGetArrayPointer(c->y), w, sizeof(double) * (size_t)c->n);
  if (c->ns > 0) memcpy(c->S, S, sizeof(double) * (size_t)c->n * c->ns);
  if (set_derivatives(c, t0)) return SALTA_ESOLVER;
  if (setup(c, t0))
    return salta__fail(err_of(c), SALTA_ESOLVER, "model '%s': IDAS setup failed: %s", c->env.dae->d->name,
                       c->msg[0] ? c->msg : "out of memory or bad option");
  return salta__track_restart(c->env.track, c->env.o, t0, w);
}

/* Re-initialises IDAS at t from the restart state (w_restart, S) with
** first step h0 (0: IDAS's own choice). */
static int reinit(ida *c, double t, double h0) {
  memcpy(N_VGetArrayPointer(c->y), c->w_restart, sizeof(double) * (size_t)c->n);
  if (set_derivatives(c, t)) return SALTA_ESOLVER;
  if (IDAReInit(c->mem, t, c->y, c->yp) || IDASetStopTime(c->mem, c->env.o->tf) || IDASetInitStep(c->mem, h0) ||
      (c->ns > 0 && IDASensReInit(c->mem, IDA_STAGGERED, c->yS, c->ypS)))
    return fail_idas(c, IDA_ILL_INPUT, t);
  c->t_restart = t, c->h_restart = h0;
  return SALTA_OK;
}

static int ida_step(void *self, double tf, double *t_old, double *t_new) {
  ida *c = self;
  double tret = 0, tn, hu;
  long nst = -1;
  int flag = IDASolve(c->mem, tf, &tret, c->y, c->yp, IDA_ONE_STEP), st;
  if (flag < 0 && c->h_restart > 0 && IDAGetNumSteps(c->mem, &nst) == IDA_SUCCESS && nst == 0) {
    /* a restart's first step failed from the step it was given: again
    ** from the run's init_step or IDAS's own */
    accumulate_stats(c);
    c->bad_row = -1;
    if ((st = reinit(c, c->t_restart, c->env.o->init_step))) return st;
    flag = IDASolve(c->mem, tf, &tret, c->y, c->yp, IDA_ONE_STEP);
  }
  if (flag < 0) {
    nst = -1;
    if (IDAGetCurrentTime(c->mem, &tn) == IDA_SUCCESS) tret = tn;
    if (flag == IDA_ILL_INPUT && c->bad_row < 0 && IDAGetNumSteps(c->mem, &nst) == IDA_SUCCESS && nst == 0)
      return fail_first_step(c, tret);
    return fail_idas(c, flag, tret);
  }
  c->bad_row = -1;   /* a step succeeded: earlier recoverable NaNs are history */
  *t_new = tret;
  *t_old = tret;
  /* only the last step can be interpolated */
  if (IDAGetCurrentTime(c->mem, &tn) == IDA_SUCCESS && IDAGetLastStep(c->mem, &hu) == IDA_SUCCESS)
    *t_old = tn - hu;
  /* IDAS solves x and z together: z must still be on the run's branch */
  return salta__track_accept(c->env.track, tret, N_VGetArrayPointer(c->y), 1);
}

/* The interpolant at t into c->dky. */
static int interpolate(ida *c, double t) {
  if (IDAGetDky(c->mem, t, 0, c->dky) != IDA_SUCCESS)
    return salta__fail(err_of(c), SALTA_ESOLVER, "model '%s': IDAS cannot interpolate at t = %.17g: %s",
                       c->env.dae->d->name, t, c->msg);
  return SALTA_OK;
}

static int ida_at(void *self, double t, double *w, const int *cols, int ncols) {
  ida *c = self;
  int st;
  (void)cols; (void)ncols;   /* IDAS interpolates every component */
  if ((st = interpolate(c, t))) return st;
  memcpy(w, N_VGetArrayPointer(c->dky), sizeof(double) * (size_t)c->n);
  return SALTA_OK;
}

static int ida_sens_at(void *self, double t, double *S) {
  ida *c = self;
  if (IDAGetSensDky(c->mem, t, 0, c->dkyS) != IDA_SUCCESS)
    return salta__fail(err_of(c), SALTA_ESOLVER, "model '%s': IDAS cannot interpolate the sensitivities at t = %.17g",
                       c->env.dae->d->name, t);
  from_vectors(c, c->dkyS, S);
  return SALTA_OK;
}

/* IDAS interpolates every component: the requested ones are picked out. */
static int ida_states_at(void *self, double t, const int *cols, int n, double *y, double *dy) {
  ida *c = self;
  const double *w = N_VGetArrayPointer(c->dky);
  int q, k, st;
  if ((st = interpolate(c, t))) return st;
  for (q = 0; q < n; ++q) y[q] = w[cols[q]];
  if (!dy) return SALTA_OK;
  if (IDAGetSensDky(c->mem, t, 0, c->dkyS) != IDA_SUCCESS)
    return salta__fail(err_of(c), SALTA_ESOLVER, "model '%s': IDAS cannot interpolate the sensitivities at t = %.17g",
                       c->env.dae->d->name, t);
  for (q = 0; q < n; ++q)
    for (k = 0; k < c->ns; ++k) dy[(size_t)q * c->ns + k] = N_VGetArrayPointer(c->dkyS[k])[cols[q]];
  return SALTA_OK;
}

static int ida_end_state(void *self, double *w, double *S) {
  ida *c = self;
  double tn;
  memcpy(w, N_VGetArrayPointer(c->y), sizeof(double) * (size_t)c->n);
  if (!S || c->ns == 0) return SALTA_OK;
  if (IDAGetCurrentTime(c->mem, &tn) != IDA_SUCCESS) return fail_idas(c, IDA_MEM_NULL, 0);
  return ida_sens_at(self, tn, S);
}

/* Restarts at t from (w, S): at order 1, from a tenth of the step the run
** last took (IDAS's own first step is tiny, and climbing back up from it
** costs many steps after every event; the whole last step, taken at a
** higher order, fails the order-1 error test too often). */
static int ida_restart(void *self, double t, const double *w, const double *S, double t_next) {
  ida *c = self;
  double h_last = 0;
  int st;
  (void)t_next;   /* BDF restarts at order 1 on steps a tenth of the last: far shorter */
  if (IDAGetLastStep(c->mem, &h_last) != IDA_SUCCESS || !(h_last > 0)) h_last = 0;
  accumulate_stats(c);   /* IDAReInit zeroes the counters */
  memcpy(c->w_restart, w, sizeof(double) * (size_t)c->n);
  if (c->ns > 0) memcpy(c->S, S, sizeof(double) * (size_t)c->n * c->ns);
  if ((st = salta__track_restart(c->env.track, c->env.o, t, w))) return st;
  return reinit(c, t, 0.1 * h_last);
}

/* The sensitivities' arrays (lengths from the sizes, for the allocation). */
#define SENS_ARRAYS 5
static size_t sens_arrays(ida *c, salta__array *list) {
  size_t n = (size_t)c->n, ns = (size_t)c->ns;
  salta__array all[SENS_ARRAYS] = {SALTA__ARRAY(c->S, n * ns), SALTA__ARRAY(c->Sp, n * ns),
                                   SALTA__ARRAY(c->cols_S, ns), SALTA__ARRAY(c->cols_Sp, ns),
                                   SALTA__ARRAY(c->cols_R, ns)};
  memcpy(list, all, sizeof all);
  return SENS_ARRAYS;
}

static void ida_free(void *self) {
  salta__array list[SENS_ARRAYS];
  ida *c = self;
  if (!c) return;
  accumulate_stats(c);
  if (c->mem) IDAFree(&c->mem);
  if (c->LS) SUNLinSolFree(c->LS);
  if (c->A) SUNMatDestroy(c->A);
  if (c->y) N_VDestroy(c->y);
  if (c->yp) N_VDestroy(c->yp);
  if (c->id) N_VDestroy(c->id);
  if (c->atol) N_VDestroy(c->atol);
  if (c->dky) N_VDestroy(c->dky);
  if (c->yS) N_VDestroyVectorArray(c->yS, c->ns);
  if (c->ypS) N_VDestroyVectorArray(c->ypS, c->ns);
  if (c->dkyS) N_VDestroyVectorArray(c->dkyS, c->ns);
  if (c->ctx) SUNContext_Free(&c->ctx);
  salta__pattern_free(&c->pat);
  salta__arrays_free(list, sens_arrays(c, list));
  free(c->w_restart);
  free(c);
}

static const salta__integrator_ops ida_ops = {ida_start, ida_step, ida_at, ida_sens_at, ida_states_at, NULL, ida_end_state,
                                              ida_restart, ida_free, 0};

/* IDAS's memory and solvers: 0, or -1 when out of memory (the caller says so). */
static int alloc_ida(ida *c) {
  int n = c->n, ns = c->ns;
  salta__array list[SENS_ARRAYS];
  if (SUNContext_Create(NULL, &c->ctx)) return -1;
  c->y = N_VNew_Serial(n, c->ctx);
  /* fused and vector-array operations: fewer calls per step, which is what
  ** small systems with several sensitivities spend their time on */
  if (c->y) N_VEnableFusedOps_Serial(c->y, SUNTRUE);
  c->yp = N_VNew_Serial(n, c->ctx);
  c->id = N_VNew_Serial(n, c->ctx);
  c->dky = N_VNew_Serial(n, c->ctx);
  c->w_restart = malloc(sizeof(double) * (size_t)n);
  if (c->sparse) {
    if (salta__pattern_build(&c->pat, c->env.dae->d, NULL)) return -1;
    c->A = SUNSparseMatrix(n, n, c->pat.nnz, CSC_MAT, c->ctx);
    c->LS = c->A && c->y ? SUNLinSol_KLU(c->y, c->A, c->ctx) : NULL;
  } else {
    c->A = SUNDenseMatrix(n, n, c->ctx);
    c->LS = salta__lapack_dense(n, c->ctx);
  }
  c->mem = IDACreate(c->ctx);
  if (!c->y || !c->yp || !c->id || !c->dky || !c->w_restart || !c->A || !c->LS || !c->mem) return -1;
  if (IDASetErrHandlerFn(c->mem, error_handler, c)) return -1;   /* IDAS's own handler prints */
  if (ns > 0) {
    c->yS = N_VCloneVectorArray(ns, c->y);
    c->ypS = N_VCloneVectorArray(ns, c->y);
    c->dkyS = N_VCloneVectorArray(ns, c->y);
    if (!c->yS || !c->ypS || !c->dkyS || salta__arrays_alloc(list, sens_arrays(c, list))) return -1;
  }
  return 0;
}

int salta__ida_create(salta__integrator *it, const salta__integrator_env *env) {
  ida *c = calloc(1, sizeof *c);
  it->ops = &ida_ops;
  it->self = c;
  if (!c) return salta__fail(env->dae->err, SALTA_EMEM, "out of memory");
  c->env = *env;
  c->nx = env->dae->nx;
  c->n = env->dae->n;
  c->ns = env->sens ? env->sens->ns : 0;
  c->bad_row = -1;
  c->sparse = env->linear_solver == SALTA_LS_KLU;
  if (alloc_ida(c)) return salta__fail(env->dae->err, SALTA_EMEM, "model '%s': IDAS setup failed: out of memory",
                                       env->dae->d->name);
  return SALTA_OK;
}
