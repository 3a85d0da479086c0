/*
** sim.c -- hybrid DAE simulation on SUNDIALS IDAS: consistent
** initialisation, event location with armed guards, simultaneous resets,
** algebraic re-consistency, output at requested times.
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

#include "errors.h"
#include "linsol.h"
#include "pattern.h"
#include "salta.h"
#include "sim_impl.h"

/* interpolant samples per step when looking for guards dipping inside it */
#define SAMPLES 4

int salta__dbuf_push(dbuf *b, const double *v, size_t n) {
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    double *nv;
    while (cap < b->n + n) cap *= 2;
    nv = realloc(b->v, cap * sizeof(double));
    if (!nv) return -1;
    b->v = nv;
    b->cap = cap;
  }
  if (n) memcpy(b->v + b->n, v, n * sizeof(double));
  b->n += n;
  return 0;
}


/* ---- IDAS callbacks ------------------------------------------------------ */

static void note_nonfinite(salta_sim *s, int row, double t, double v) {
  if (s->nonfinite_row < 0) {
    s->nonfinite_row = row;
    s->nonfinite_t = t;
    s->nonfinite_v = v;
  }
}

static int residual(sunrealtype t, N_Vector yy, N_Vector yp, N_Vector rr, void *ud) {
  salta_sim *s = ud;
  const double *y = N_VGetArrayPointer(yy), *ypd = N_VGetArrayPointer(yp);
  double *r = N_VGetArrayPointer(rr);
  int i;
  if (s->d->f.eval(t, y, y + s->nx, s->p, r)) return -1;
  if (s->nz && s->d->g.eval(t, y, y + s->nx, s->p, r + s->nx)) return -1;
  for (i = 0; i < s->nx; ++i) r[i] = ypd[i] - r[i];
  for (i = 0; i < s->n; ++i)
    if (!isfinite(r[i])) {
      note_nonfinite(s, i, t, r[i]);
      return 1;   /* recoverable: IDAS tries a smaller step */
    }
  return 0;
}

/* Adds the sparse block d(fn)/d(wrt), scaled, into the dense matrix at
** (row0, col0). */
static void add_block(salta_sim *s, const salta_sparse_def *sp, double t, const double *y,
                      double scale, double *J, int ld, int row0, int col0) {
  int k;
  if (sp->nnz == 0) return;
  sp->eval(t, y, y + s->nx, s->p, s->jvals);
  for (k = 0; k < sp->nnz; ++k)
    J[(size_t)(col0 + sp->col[k]) * ld + row0 + sp->row[k]] += scale * s->jvals[k];
}

static int jacobian(sunrealtype t, sunrealtype cj, N_Vector yy, N_Vector yp, N_Vector rr,
                    SUNMatrix Jm, void *ud, N_Vector t1, N_Vector t2, N_Vector t3) {
  salta_sim *s = ud;
  const double *y = N_VGetArrayPointer(yy);
  double *J = SM_DATA_D(Jm);
  int i, n = s->n;
  (void)yp; (void)rr; (void)t1; (void)t2; (void)t3;
  memset(J, 0, sizeof(double) * (size_t)n * n);
  add_block(s, &s->d->f.d[SALTA_WRT_X], t, y, -1.0, J, n, 0, 0);
  add_block(s, &s->d->f.d[SALTA_WRT_Z], t, y, -1.0, J, n, 0, s->nx);
  add_block(s, &s->d->g.d[SALTA_WRT_X], t, y, 1.0, J, n, s->nx, 0);
  add_block(s, &s->d->g.d[SALTA_WRT_Z], t, y, 1.0, J, n, s->nx, s->nx);
  for (i = 0; i < s->nx; ++i) J[(size_t)i * n + i] += cj;
  return 0;
}

/* The same iteration matrix in CSC form for KLU (fixed pattern). */
static int jacobian_sparse(sunrealtype t, sunrealtype cj, N_Vector yy, N_Vector yp, N_Vector rr,
                           SUNMatrix Jm, void *ud, N_Vector t1, N_Vector t2, N_Vector t3) {
  static const double scale[SALTA_NBLK] = {-1.0, -1.0, 1.0, 1.0};
  salta_sim *s = ud;
  const salta__pattern *pat = &s->pat;
  const double *y = N_VGetArrayPointer(yy);
  const salta_sparse_def *blk[SALTA_NBLK] = {&s->d->f.d[SALTA_WRT_X], &s->d->f.d[SALTA_WRT_Z],
                                             &s->d->g.d[SALTA_WRT_X], &s->d->g.d[SALTA_WRT_Z]};
  sunindextype *colptr = SM_INDEXPTRS_S(Jm), *rowind = SM_INDEXVALS_S(Jm);
  double *v = SM_DATA_S(Jm);
  int b, k;
  (void)yp; (void)rr; (void)t1; (void)t2; (void)t3;
  for (k = 0; k <= pat->n; ++k) colptr[k] = pat->colptr[k];
  for (k = 0; k < pat->nnz; ++k) rowind[k] = pat->rowind[k];
  memset(v, 0, sizeof(double) * (size_t)pat->nnz);
  for (b = 0; b < SALTA_NBLK; ++b) {
    if (blk[b]->nnz == 0) continue;
    blk[b]->eval(t, y, y + s->nx, s->p, s->jvals);
    for (k = 0; k < blk[b]->nnz; ++k) v[pat->map[b][k]] += scale[b] * s->jvals[k];
  }
  for (k = 0; k < s->nx; ++k) v[pat->diag[k]] += cj;
  return 0;
}

static int guards(sunrealtype t, N_Vector yy, N_Vector yp, sunrealtype *gout, void *ud) {
  salta_sim *s = ud;
  const double *y = N_VGetArrayPointer(yy);
  int j;
  (void)yp;
  s->stats.guard_evals++;
  s->d->e.eval(t, y, y + s->nx, s->p, gout);
  for (j = 0; j < s->d->ne; ++j)
    if (!isfinite(gout[j])) {
      note_nonfinite(s, s->n + j, t, gout[j]);
      return -1;
    }
  return 0;
}

static void error_handler(int code, const char *module, const char *fn, char *msg, void *ud) {
  salta_sim *s = ud;
  (void)code; (void)module;
  snprintf(s->idas_msg, sizeof s->idas_msg, "%s: %s", fn, msg);
}

/* ---- algebraic consistency -------------------------------------------------- */

/* Solves g(t, x, z, p) = 0 for z by Newton from z with the exact g_z. On
** failure returns -1 with *worst the equation with the largest residual
** and *res its value. */
int salta__solve_z(salta_sim *s, double t, const double *x, double *z, int *worst, double *res) {
  int nz = s->nz, it, i;
  double *g = s->work, *J = s->gz, dprev = HUGE_VAL;
  for (it = 0; it < 50; ++it) {
    double gmax = 0, dmax = 0, zmax = 0;
    int small = 1;
    s->d->g.eval(t, x, z, s->p, g);
    *worst = 0;
    for (i = 0; i < nz; ++i) {
      if (!(fabs(g[i]) <= gmax)) { gmax = fabs(g[i]); *worst = i; }
      zmax = fmax(zmax, fabs(z[i]));
    }
    *res = g[*worst];
    if (!isfinite(gmax)) return -1;
    if (gmax == 0) return 0;
    memset(J, 0, sizeof(double) * (size_t)nz * nz);
    {
      const salta_sparse_def *sp = &s->d->g.d[SALTA_WRT_Z];
      int k;
      sp->eval(t, x, z, s->p, s->jvals);
      for (k = 0; k < sp->nnz; ++k) J[(size_t)sp->col[k] * nz + sp->row[k]] = s->jvals[k];
    }
    if (salta__lu_factor(nz, J, s->ipiv) != 0) return -1;
    salta__lu_solve(nz, J, s->ipiv, g, 1, 0);
    for (i = 0; i < nz; ++i) {
      z[i] -= g[i];
      dmax = fmax(dmax, fabs(g[i]));
      if (!(fabs(g[i]) <= 1e-10 * (1 + fabs(z[i])))) small = 0;
    }
    s->stats.alg_newton_iters++;
    /* converged: a step at round-off, or, when g_z is ill-conditioned,
    ** steps that stopped contracting while each is small against its own
    ** component (round-off in the solve bounds them; Newton would
    ** otherwise shrink them quadratically) */
    if (dmax <= 1e-13 * (1 + zmax) || (dmax > 0.5 * dprev && small)) {
      s->d->g.eval(t, x, z, s->p, g);
      for (i = 0, gmax = 0; i < nz; ++i)
        if (!(fabs(g[i]) <= gmax)) { gmax = fabs(g[i]); *worst = i; }
      *res = g[*worst];
      return isfinite(gmax) ? 0 : -1;
    }
    dprev = dmax;
  }
  return -1;
}

/* ---- results ------------------------------------------------------------------ */

/* Stores output k. Interpolated algebraics are re-solved from g (Newton
** from the interpolated value), so outputs satisfy g = 0 to round-off. */
void salta__store_output(salta_sim *s, double t, const double *w, const double *S) {
  int k = s->nout++, worst;
  double *wk = s->out_w + (size_t)k * s->n, res;
  s->out_t[k] = t;
  memcpy(wk, w, sizeof(double) * s->n);
  if (s->nz > 0 && !s->exact_z && salta__solve_z(s, t, wk, wk + s->nx, &worst, &res) != 0)
    memcpy(wk, w, sizeof(double) * s->n);
  w = wk;
  if (s->ns > 0) salta__sens_output(s, k, t, w, S);
  if (s->d->ny) s->d->h.eval(t, w, w + s->nx, s->p, s->out_y + (size_t)k * s->d->ny);
}

int salta__store_step(salta_sim *s, double t, const double *w) {
  return salta__dbuf_push(&s->steps, &t, 1) || salta__dbuf_push(&s->steps, w, s->n);
}

/* ---- arming ----------------------------------------------------------------------- */

/* A guard is armed when it is strictly on the side it fires from; a guard a
** reset leaves at (or past) zero waits until it has left the firing side.
** Two-sided guards re-arm once clear of zero by a small band. */
static int is_clear(const salta_sim *s, int j, double e) {
  switch (s->d->e_direction[j]) {
    case SALTA_DIR_DOWN: return e > 0;
    case SALTA_DIR_UP: return e < 0;
    default: return fabs(e) > 1e-10 * fmax(1.0, fabs(s->guard0[j]));
  }
}

/* The band around zero inside which a guard counts as "left at zero". */
static double zero_band(const salta_sim *s, int j) {
  return 1e-9 * fmax(1.0, fabs(s->guard0[j]));
}

/* Re-arms guards that left their firing side. A guard whose reset sent it
** off its firing side ("leaving", see leaving_zero) but which is found
** deeper on that side without ever having been clear has been lost to an
** accumulation of events (a ball at a Zeno limit falls through the floor):
** that is an error. A guard the reset did not turn around (a one-shot
** event) just stays disarmed until it is clear. */
int salta__rearm(salta_sim *s, double t) {
  int j;
  for (j = 0; j < s->d->ne; ++j) {
    double e = s->guard[j];
    if (s->leaving[j]) {
      if (is_clear(s, j, e)) {
        s->leaving[j] = 0;
      } else if (fabs(e) > zero_band(s, j) && t > s->leave_t[j]) {
        return salta__fail(s->err, SALTA_ESOLVER,
                           "model '%s': Zeno limit: event '%s' fired at t = %.17g and its reset turned the "
                           "guard around, but the guard never got clear and is %g at t = %.17g (event count %d): "
                           "events accumulate there",
                           s->d->name, s->d->e_names[j], s->stuck_t[j], e, t, s->nev);
      }
    }
    if (!s->armed[j] && is_clear(s, j, e)) {
      s->armed[j] = 1;
      s->stuck[j] = 0;
    }
  }
  return SALTA_OK;
}

/* ---- the run ------------------------------------------------------------------------ */

typedef struct ida_ctx {
  SUNContext ctx;
  void *mem;
  N_Vector y, yp, id, atol;
  SUNMatrix A;
  SUNLinearSolver LS;
  N_Vector *yS, *ypS;
  int ns;
} ida_ctx;

static void ida_free(ida_ctx *c) {
  if (c->mem) IDAFree(&c->mem);
  if (c->LS) SUNLinSolFree(c->LS);
  if (c->A) SUNMatDestroy(c->A);
  if (c->y) N_VDestroy(c->y);
  if (c->yp) N_VDestroy(c->yp);
  if (c->id) N_VDestroy(c->id);
  if (c->atol) N_VDestroy(c->atol);
  if (c->yS) N_VDestroyVectorArray(c->yS, c->ns);
  if (c->ypS) N_VDestroyVectorArray(c->ypS, c->ns);
  if (c->ctx) SUNContext_Free(&c->ctx);
  memset(c, 0, sizeof *c);
}

static void accumulate_stats(salta_sim *s, void *mem) {
  long v;
  if (IDAGetNumSteps(mem, &v) == IDA_SUCCESS) s->stats.steps += v;
  if (IDAGetNumResEvals(mem, &v) == IDA_SUCCESS) s->stats.res_evals += v;
  if (IDAGetNumJacEvals(mem, &v) == IDA_SUCCESS) s->stats.jac_evals += v;
  if (IDAGetNumNonlinSolvIters(mem, &v) == IDA_SUCCESS) s->stats.newton_iters += v;
  if (IDAGetNumNonlinSolvConvFails(mem, &v) == IDA_SUCCESS) s->stats.newton_conv_fails += v;
  if (IDAGetNumErrTestFails(mem, &v) == IDA_SUCCESS) s->stats.err_test_fails += v;
}

static int fail_idas(salta_sim *s, int flag, double t) {
  const salta_model_def *d = s->d;
  char *name = IDAGetReturnFlagName(flag);
  if (s->nonfinite_row >= 0) {
    int r = s->nonfinite_row;
    if (r >= s->n)
      salta__fail(s->err, SALTA_ESOLVER, "model '%s': the guard of event '%s' is %g at t = %.17g",
                  d->name, d->e_names[r - s->n], s->nonfinite_v, s->nonfinite_t);
    else if (r < s->nx)
      salta__fail(s->err, SALTA_ESOLVER, "model '%s': f for state '%s' is %g at t = %.17g (%s)",
                  d->name, d->x_names[r], s->nonfinite_v, s->nonfinite_t, name ? name : "?");
    else
      salta__fail(s->err, SALTA_ESOLVER, "model '%s': algebraic equation g[%d] is %g at t = %.17g (%s)",
                  d->name, r - s->nx + 1, s->nonfinite_v, s->nonfinite_t, name ? name : "?");
  } else {
    salta__fail(s->err, SALTA_ESOLVER, "model '%s': IDAS failed at t = %.17g: %s (%s)", d->name, t,
                name ? name : "?", s->idas_msg);
  }
  free(name);
  return SALTA_ESOLVER;
}

/* Copies the n x ns block S into the vectors V[0..ns). */
static void to_vectors(const salta_sim *s, const double *S, N_Vector *V) {
  int k;
  for (k = 0; k < s->ns; ++k)
    memcpy(N_VGetArrayPointer(V[k]), S + (size_t)k * s->n, sizeof(double) * s->n);
}

static void from_vectors(const salta_sim *s, N_Vector *V, double *S) {
  int k;
  for (k = 0; k < s->ns; ++k)
    memcpy(S + (size_t)k * s->n, N_VGetArrayPointer(V[k]), sizeof(double) * s->n);
}

/* Forward sensitivities: consistent initial values, the residual from the
** generated Jacobians, and sensitivities in the error test. Absolute
** tolerances scale like IDAS's own estimate, atol / |p_j|. The staggered
** corrector: with IDA_SIMULTANEOUS, IDAS 6.4's Newton iteration failed to
** converge repeatedly on the Cauer ladder and the spring latch (steps
** collapsing to 1e-9), with our residual and with its own difference
** quotients alike. */
static int sens_setup(salta_sim *s, ida_ctx *c, const salta_sim_options *o, double t0) {
  double *Sp = s->S + (size_t)s->n * s->ns, atolS[256], *atol_s = atolS;
  int k, rc;
  c->ns = s->ns;
  c->yS = N_VCloneVectorArray(s->ns, c->y);
  c->ypS = N_VCloneVectorArray(s->ns, c->y);
  if (!c->yS || !c->ypS) return -1;
  if (salta__sens_initial(s, t0, N_VGetArrayPointer(c->y), s->S, Sp)) return -2;
  to_vectors(s, s->S, c->yS);
  to_vectors(s, Sp, c->ypS);
  if (s->ns > 256 && !(atol_s = malloc(sizeof(double) * (size_t)s->ns))) return -1;
  for (k = 0; k < s->ns; ++k) {
    double pk = s->dirs[k] >= 0 ? fabs(s->p[s->dirs[k]]) : 1.0;
    atol_s[k] = o->atol / (pk > 0 ? pk : 1.0);
  }
  rc = IDASensInit(c->mem, s->ns, IDA_STAGGERED, salta__sens_residual, c->yS, c->ypS) ||
       IDASensSStolerances(c->mem, o->rtol, atol_s) || IDASetSensErrCon(c->mem, SUNTRUE);
  if (atol_s != atolS) free(atol_s);
  return rc ? -1 : 0;
}

int salta__guard_error(salta_sim *s) {
  int r = s->nonfinite_row - s->n;
  if (r < 0 || r >= s->d->ne) r = 0;
  return salta__fail(s->err, SALTA_ESOLVER, "model '%s': the guard of event '%s' is %g at t = %.17g",
                     s->d->name, s->d->e_names[r], s->nonfinite_v, s->nonfinite_t);
}

static int ida_setup(salta_sim *s, ida_ctx *c, const salta_sim_options *o, double t0) {
  double *idv;
  int i, n = s->n;
  int dirs[1024], *dir = s->d->ne <= 1024 ? dirs : s->fire;
  if (SUNContext_Create(NULL, &c->ctx)) return -1;
  c->y = N_VNew_Serial(n, c->ctx);
  /* fused and vector-array operations: fewer calls per step, which is what
  ** small systems with several sensitivities spend their time on */
  if (c->y) N_VEnableFusedOps_Serial(c->y, SUNTRUE);
  c->yp = N_VNew_Serial(n, c->ctx);
  c->id = N_VNew_Serial(n, c->ctx);
  if (salta__use_klu(o, n)) {
    if (salta__pattern_build(&s->pat, s->d)) return -1;
    c->A = SUNSparseMatrix(n, n, s->pat.nnz, CSC_MAT, c->ctx);
    c->LS = c->A ? SUNLinSol_KLU(c->y, c->A, c->ctx) : NULL;
  } else {
    c->A = SUNDenseMatrix(n, n, c->ctx);
    c->LS = salta__lapack_dense(n, c->ctx);
  }
  c->mem = IDACreate(c->ctx);
  if (!c->y || !c->yp || !c->id || !c->A || !c->LS || !c->mem) return -1;
  idv = N_VGetArrayPointer(c->id);
  for (i = 0; i < n; ++i) idv[i] = i < s->nx ? 1.0 : 0.0;
  memcpy(N_VGetArrayPointer(c->y), s->work + s->nz, sizeof(double) * n);
  memcpy(N_VGetArrayPointer(c->yp), s->work + s->nz + n, sizeof(double) * n);
  if (IDASetErrHandlerFn(c->mem, error_handler, s) ||
      IDAInit(c->mem, residual, t0, c->y, c->yp) || IDASetUserData(c->mem, s))
    return -1;
  if (o->atol_vec) {
    c->atol = N_VNew_Serial(n, c->ctx);
    if (!c->atol) return -1;
    memcpy(N_VGetArrayPointer(c->atol), o->atol_vec, sizeof(double) * n);
    if (IDASVtolerances(c->mem, o->rtol, c->atol)) return -1;
  } else if (IDASStolerances(c->mem, o->rtol, o->atol)) {
    return -1;
  }
  if (IDASetLinearSolver(c->mem, c->LS, c->A) ||
      IDASetJacFn(c->mem, salta__use_klu(o, n) ? jacobian_sparse : jacobian) ||
      IDASetId(c->mem, c->id) || IDASetSuppressAlg(c->mem, SUNTRUE) ||
      IDASetDeltaCjLSetup(c->mem, 0.25) ||  /* fewer refactorisations as steps grow */
      IDASetStopTime(c->mem, o->tf))
    return -1;
  if (o->max_step > 0 && IDASetMaxStep(c->mem, o->max_step)) return -1;
  if (o->init_step > 0 && IDASetInitStep(c->mem, o->init_step)) return -1;
  if (o->max_order > 0 && IDASetMaxOrd(c->mem, o->max_order)) return -1;
  if (s->ns > 0 && (i = sens_setup(s, c, o, t0)) != 0) return i;
  if (s->d->ne > 0) {
    for (i = 0; i < s->d->ne; ++i) dir[i] = s->d->e_direction[i];
    if (IDARootInit(c->mem, s->d->ne, guards) || IDASetRootDirection(c->mem, dir) ||
        IDASetNoInactiveRootWarn(c->mem))
      return -1;
  }
  return 0;
}

/* Applies every event in s->fire (nfire of them, declaration order) at tau
** to the state w (in/out). */
static int apply_events(salta_sim *s, const salta_sim_options *o, double tau, double *w, int nfire) {
  const salta_model_def *d = s->d;
  int nx = s->nx, nz = s->nz, k, i, worst, first = s->nev;
  double *wm = s->work + nz + 2 * s->n, *r = wm + s->n, res;
  memcpy(wm, w, sizeof(double) * s->n);
  if (nz && salta__solve_z(s, tau, wm, wm + nx, &worst, &res) != 0)
    memcpy(wm, w, sizeof(double) * s->n);   /* keep IDAS's z- if polishing fails */
  memcpy(w, wm, sizeof(double) * s->n);
  for (k = 0; k < nfire; ++k) {
    int j = s->fire[k];
    if (d->r[j].eval(tau, wm, wm + nx, s->p, r))
      return salta__fail(s->err, SALTA_EKERNEL, "model '%s': the implicit reset of event '%s' did not converge at t = %.17g",
                         d->name, d->e_names[j], tau);
    for (i = 0; i < nx; ++i)
      if (d->r_assign[(size_t)j * nx + i]) {
        if (!isfinite(r[i]))
          return salta__fail(s->err, SALTA_ESOLVER, "model '%s': the reset of event '%s' sets state '%s' to %g at t = %.17g",
                             d->name, d->e_names[j], d->x_names[i], r[i], tau);
        w[i] = r[i];
      }
  }
  if (nz && salta__solve_z(s, tau, w, w + nx, &worst, &res) != 0)
    return salta__fail(s->err, SALTA_ESOLVER,
                       "model '%s': Newton failed to restore g = 0 after the reset of event '%s' at t = %.17g: "
                       "algebraic equation g[%d] keeps residual %g",
                       d->name, d->e_names[s->fire[0]], tau, worst + 1, res);
  for (k = 0; k < nfire; ++k) {
    event_rec *e;
    if (s->nev == s->ev_cap) {
      int cap = s->ev_cap ? 2 * s->ev_cap : 64;
      event_rec *ne = realloc(s->ev, sizeof *ne * (size_t)cap);
      if (!ne) return salta__fail(s->err, SALTA_EMEM, "out of memory");
      s->ev = ne;
      s->ev_cap = cap;
    }
    if (salta__dbuf_push(&s->ev_w, wm, s->n) || salta__dbuf_push(&s->ev_w, w, s->n))
      return salta__fail(s->err, SALTA_EMEM, "out of memory");
    e = &s->ev[s->nev++];   /* counted only with its states stored */
    e->t = tau;
    e->event = s->fire[k];
    e->group = first;
    e->group_size = nfire;
  }
  s->stats.events = s->nev;
  if (s->nev > o->max_events)
    return salta__fail(s->err, SALTA_ESOLVER, "model '%s': more than max_events = %d events: event '%s' at t = %.17g was number %d",
                       d->name, o->max_events, d->e_names[s->fire[nfire - 1]], tau, s->nev);
  if (o->zeno_count > 0 && s->nev >= o->zeno_count &&
      tau - s->ev[s->nev - o->zeno_count].t <= o->zeno_window)
    return salta__fail(s->err, SALTA_ESOLVER,
                       "model '%s': Zeno cascade: %d events within %g s up to t = %.17g (last: event '%s', event count %d)",
                       d->name, o->zeno_count, tau - s->ev[s->nev - o->zeno_count].t, tau,
                       d->e_names[s->fire[nfire - 1]], s->nev);
  return SALTA_OK;
}

/* Whether armed guard j is on its firing side at value e (prev: its value
** at the start of the step, for two-sided guards). */
static int on_firing_side(const salta_sim *s, int j, double e) {
  switch (s->d->e_direction[j]) {
    case SALTA_DIR_DOWN: return e <= 0;
    case SALTA_DIR_UP: return e >= 0;
    default: return e * s->gprev[j] <= 0;
  }
}

/* Guard values at time t on the current step's interpolant. */
static void guards_at(salta_sim *s, const salta__interp *ip, double t) {
  int j;
  ip->at(ip->ctx, t, s->interp_w);
  s->d->e.eval(t, s->interp_w, s->interp_w + s->nx, s->p, s->guard);
  s->stats.guard_evals++;
  for (j = 0; j < s->d->ne; ++j)
    if (!isfinite(s->guard[j]) && !s->guard_bad) {
      s->guard_bad = 1;   /* this is the cause now, whatever was noted before */
      s->nonfinite_row = s->n + j;
      s->nonfinite_t = t;
      s->nonfinite_v = s->guard[j];
    }
}


/* IDAS only compares guard signs at step ends, so a guard that dips into
** its firing side and back within one step (two balls grazing past each
** other in one long ballistic step) would be missed. Sample the step's
** interpolant at SAMPLES + 1 points, and through every three consecutive
** samples fit a parabola whose vertex, when it lies inside and on the
** firing side, is checked too (exact for guards quadratic in time). The
** earliest firing point found is bracketed and bisected to the crossing
** (t just past it, like IDAS); s->fire gets the guards firing there.
** t_start is where the last step ended (its guard values are s->gprev);
** sampling begins at t_from >= t_start, where the interpolant is valid.
** Returns how many (0: none before t_end). */
/* The first time in (lo, hi] where armed guard j is on its firing side,
** given it is not at lo (value elo) and is at hi (value ehi): regula falsi
** with the Illinois modification, down to a few ulps, returning the side
** past the crossing (like IDAS). */
static double refine_crossing(salta_sim *s, const salta__interp *ip, int j, double lo, double elo,
                              double hi, double ehi) {
  int side = 0, it;
  for (it = 0; it < 200 && hi - lo > 4 * 2.2e-16 * fmax(1.0, fabs(hi)); ++it) {
    double tm = (ehi != elo) ? hi - ehi * (hi - lo) / (ehi - elo) : 0.5 * (lo + hi);
    double slack = 0.01 * (hi - lo);
    /* keep the trial point inside, away from the ends, and bisect now and
    ** then so the bracket closes on both sides */
    if (!(tm > lo + slack && tm < hi - slack) || it % 4 == 3) tm = 0.5 * (lo + hi);
    guards_at(s, ip, tm);
    if (on_firing_side(s, j, s->guard[j])) {
      hi = tm, ehi = s->guard[j];
      if (side == 1) elo *= 0.5;   /* Illinois */
      side = 1;
    } else {
      lo = tm, elo = s->guard[j];
      if (side == -1) ehi *= 0.5;
      side = -1;
    }
  }
  return hi;
}

/* A bracket [lo, hi] of guard j's earliest crossing in the sampled step
** (guard values elo, ehi); 0 if it does not cross. */
typedef struct bracket { double lo, hi, elo, ehi; } bracket;

/* A guard armed while leaving zero (see leaving_zero) can only cross after
** it has been clear: from the point along the flow where it was seen clear,
** the first sample on the firing side brackets the crossing. */
static int leaving_bracket(salta_sim *s, const salta__interp *ip, int j, const double *ts,
                           const double *G, bracket *b) {
  const int ne = s->d->ne;
  double tl = fmax(s->leave_t[j], ts[0]), el;
  int i;
  if (tl >= ts[SAMPLES]) return 0;
  if (tl == ts[0]) {
    el = G[j];                    /* the step's first sample */
  } else {
    /* guards leaving one event share its leave time: evaluate once */
    if (tl != s->leave_cache_t) {
      guards_at(s, ip, tl);
      memcpy(s->leave_cache, s->guard, sizeof(double) * ne);
      s->leave_cache_t = tl;
    }
    el = s->leave_cache[j];
  }
  if (!is_clear(s, j, el)) return 0;
  for (i = 1; i <= SAMPLES; ++i)
    if (ts[i] > tl && on_firing_side(s, j, G[(size_t)i * ne + j])) {
      /* the latest point known clear before sample i */
      int prev_clear = ts[i - 1] > tl && !on_firing_side(s, j, G[(size_t)(i - 1) * ne + j]);
      b->lo = prev_clear ? ts[i - 1] : tl;
      b->elo = prev_clear ? G[(size_t)(i - 1) * ne + j] : el;
      b->hi = ts[i];
      b->ehi = G[(size_t)i * ne + j];
      return 1;
    }
  return 0;
}

static int first_bracket(salta_sim *s, const salta__interp *ip, int j, const double *ts,
                         const double *G, bracket *b) {
  const int ne = s->d->ne, dir = s->d->e_direction[j];
  int i;
  if (s->leaving[j]) return leaving_bracket(s, ip, j, ts, G, b);
  for (i = 1; i <= SAMPLES; ++i) {
    double e0 = G[(size_t)(i - 1) * ne + j], e1 = G[(size_t)i * ne + j];
    if (on_firing_side(s, j, e1) && !on_firing_side(s, j, e0)) {
      b->lo = ts[i - 1], b->elo = e0, b->hi = ts[i], b->ehi = e1;
      return 1;
    }
    if (i < SAMPLES && dir != SALTA_DIR_BOTH) {   /* a dip between samples i - 1 and i + 1 */
      double e2 = G[(size_t)(i + 1) * ne + j], a = 0.5 * (e2 - 2 * e1 + e0), bb = 0.5 * (e2 - e0), u;
      if (a * dir >= 0 || on_firing_side(s, j, e2)) continue;
      u = -bb / (2 * a);
      if (fabs(u) < 1 && on_firing_side(s, j, e1 + bb * u + a * u * u)) {
        double tv = ts[i] + u * (ts[i + 1] - ts[i]);
        guards_at(s, ip, tv);
        if (on_firing_side(s, j, s->guard[j])) {
          b->lo = u < 0 ? ts[i - 1] : ts[i];
          b->elo = u < 0 ? e0 : e1;
          b->hi = tv, b->ehi = s->guard[j];
          return 1;
        }
      }
    }
  }
  return 0;
}

int salta__crossing(salta_sim *s, const salta__interp *ip, double t_start, double t_from,
                    double t_end, double *tau) {
  const int ne = s->d->ne;
  double ts[SAMPLES + 1], best = HUGE_VAL, *G = s->gsamples;
  int i, j, nfire = 0;
  if (ne == 0 || !(t_end > t_from)) return 0;
  s->leave_cache_t = -HUGE_VAL;   /* a new step: a new interpolant */
  for (i = 0; i <= SAMPLES; ++i) {
    ts[i] = i == SAMPLES ? t_end : t_from + (t_end - t_from) * i / SAMPLES;
    if (i == 0 && t_from == t_start) {   /* known from the last step */
      memcpy(G, s->gprev, sizeof(double) * ne);
      continue;
    }
    guards_at(s, ip, ts[i]);
    memcpy(G + (size_t)i * ne, s->guard, sizeof(double) * ne);
  }
  /* each armed guard's own earliest crossing (bisecting on "any guard
  ** fires" could step over a short dip of another guard), refined only
  ** where its bracket could beat the best crossing found so far */
  {
    bracket *br = (bracket *)s->brackets;
    int nb = 0, k;
    for (j = 0; j < ne; ++j) {
      s->roots[j] = 0;   /* here: whether guard j crosses in this step */
      if (s->armed[j] && first_bracket(s, ip, j, ts, G, &br[nb])) {
        s->roots[j] = 1;
        s->fire[nb++] = j;
      }
    }
    /* earliest bracket first: later ones starting after the best crossing
    ** found need no refinement */
    for (k = 0; k < nb; ++k) {
      int m = k, q;
      for (q = k + 1; q < nb; ++q) if (br[q].lo < br[m].lo) m = q;
      if (m != k) {
        bracket tb = br[k];
        int tj = s->fire[k];
        br[k] = br[m], br[m] = tb;
        s->fire[k] = s->fire[m], s->fire[m] = tj;
      }
      if (br[k].lo >= best) break;
      best = fmin(best, refine_crossing(s, ip, s->fire[k], br[k].lo, br[k].elo, br[k].hi, br[k].ehi));
    }
  }
  if (s->guard_bad) return -1;
  if (best == HUGE_VAL) {
    memcpy(s->guard, G + (size_t)SAMPLES * ne, sizeof(double) * ne);  /* at t_end */
    return 0;
  }
  guards_at(s, ip, best);
  if (s->guard_bad) return -1;
  /* a guard just put back at zero may read -1e-17 here: a leaving guard
  ** fires only with a crossing of its own */
  for (j = 0; j < ne; ++j)
    if (s->armed[j] && on_firing_side(s, j, s->guard[j]) && (!s->leaving[j] || s->roots[j]))
      s->fire[nfire++] = j;
  *tau = best;
  return nfire;
}

/* The guards' rates along the flow at (t, w), into rate (ne): a central
** difference along the tangent x +- dt x' (z re-solved), which sees the
** velocity and not the curvature, so even the tiny last bounces before a
** Zeno point have the right sign. */
static void guard_rates(salta_sim *s, double t, const double *w, double *rate) {
  const salta_model_def *d = s->d;
  double *xs = s->interp_w, *xd = s->work + s->nz + 4 * s->n, *em = s->gsamples, res;
  double dt = 1e-7 * fmax(1.0, fabs(t));
  int i, j, k, worst;
  d->f.eval(t, w, w + s->nx, s->p, xd);
  for (k = 0; k < 2; ++k) {
    double sg = k == 0 ? 1.0 : -1.0;
    for (i = 0; i < s->nx; ++i) xs[i] = w[i] + sg * dt * xd[i];
    memcpy(xs + s->nx, w + s->nx, sizeof(double) * s->nz);
    if (s->nz) salta__solve_z(s, t + sg * dt, xs, xs + s->nx, &worst, &res);
    d->e.eval(t + sg * dt, xs, xs + s->nx, s->p, k == 0 ? rate : em);
  }
  for (j = 0; j < d->ne; ++j) rate[j] = (rate[j] - em[j]) / (2 * dt);
}

/* A guard a reset leaves at zero (a ball put back on the floor) whose reset
** turned it around, so that the flow carries it off its firing side, is
** armed at once ("leaving"): its next crossing may come within the next
** step (a ball's re-bounce), long before a step end could re-arm it. */
static void leaving_zero(salta_sim *s, double t, const double *w) {
  const salta_model_def *d = s->d;
  double *rate = s->gsamples + d->ne;
  int j, any = 0;
  for (j = 0; j < d->ne; ++j) any |= s->stuck[j] && d->e_direction[j] != SALTA_DIR_BOTH;
  if (!any) return;
  guard_rates(s, t, w, rate);
  for (j = 0; j < d->ne; ++j)
    if (s->stuck[j] && d->e_direction[j] != SALTA_DIR_BOTH && rate[j] * d->e_direction[j] < 0) {
      s->armed[j] = 1;
      s->stuck[j] = 0;
      s->leaving[j] = 1;           /* until it is seen clear */
      s->leave_t[j] = t + 1e-12 * fmax(1.0, fabs(t));
    }
}

/* A guard found crossing against its direction (a ball "landing" while it
** still rises) is the numerical trace of events accumulating at a Zeno
** point or of a grazing contact: an error, not an event. */
static int check_crossing_direction(salta_sim *s, double tau, const double *w, int nfire) {
  const salta_model_def *d = s->d;
  double *rate = s->gsamples + d->ne;
  int k;
  guard_rates(s, tau, w, rate);
  for (k = 0; k < nfire; ++k) {
    int j = s->fire[k], dir = d->e_direction[j];
    if (dir != SALTA_DIR_BOTH && rate[j] * dir < 0)
      return salta__fail(s->err, SALTA_ESOLVER,
                         "model '%s': Zeno limit or grazing contact: event '%s' at t = %.17g has its guard "
                         "crossing zero against its direction (rate %g); events accumulate there (event count %d)",
                         d->name, d->e_names[j], tau, rate[j], s->nev);
  }
  return SALTA_OK;
}

/* Applies the events s->fire[0..nfire) at t to the left state w (which
** becomes the right state), jumps the sensitivities S (n x ns, full; Sp
** gets S+'), and re-arms the guards: a guard left at zero is "stuck"
** until it leaves its firing side. */
int salta__after_events(salta_sim *s, const salta_sim_options *o, double t, double *w, int nfire,
                        double *S, double *Sp) {
  int st, j;
  if ((st = check_crossing_direction(s, t, w, nfire))) return st;
  if ((st = apply_events(s, o, t, w, nfire))) return st;
  if (s->ns > 0 &&
      (st = salta__sens_jump(s, t, s->ev_w.v + (size_t)(s->nev - nfire) * 2 * s->n, nfire, S, Sp)))
    return st;
  s->d->e.eval(t, w, w + s->nx, s->p, s->guard);
  memcpy(s->gprev, s->guard, sizeof(double) * s->d->ne);
  for (j = 0; j < s->d->ne; ++j) {
    s->armed[j] = is_clear(s, j, s->guard[j]);
    s->leaving[j] = 0;
    s->stuck[j] = !s->armed[j] && fabs(s->guard[j]) <= zero_band(s, j);
    if (s->stuck[j]) s->stuck_t[j] = t;
  }
  leaving_zero(s, t, w);
  return SALTA_OK;
}

/* The armed guards that fire at a root return, in declaration order. */
static int firing_events(salta_sim *s, void *mem, double tau, const double *w) {
  int j, nfire = 0;
  IDAGetRootInfo(mem, s->roots);
  s->d->e.eval(tau, w, w + s->nx, s->p, s->guard);
  for (j = 0; j < s->d->ne; ++j) {
    /* also take armed guards that crossed within the root tolerance but
    ** were not reported: simultaneous by construction */
    int dir = s->d->e_direction[j];
    int crossed = s->roots[j] != 0 || (!s->leaving[j] && ((dir == SALTA_DIR_DOWN && s->guard[j] <= 0) ||
                                                           (dir == SALTA_DIR_UP && s->guard[j] >= 0)));
    if (s->armed[j] && crossed) s->fire[nfire++] = j;
  }
  return nfire;
}

static int check_inputs(salta_sim *s, const salta_sim_options *o, const double *p,
                        const double *x0, const double *times, int nt) {
  const salta_model_def *d = s->d;
  double slack;
  int j;
  if (!(o->t0 < o->tf) || !isfinite(o->t0) || !isfinite(o->tf))
    return salta__fail(s->err, SALTA_EINPUT, "model '%s': need t0 < tf, got [%g, %g]", d->name, o->t0, o->tf);
  if (o->max_events < 0 || o->max_steps < 1 || !(o->zeno_window >= 0) ||
      (o->method != SALTA_METHOD_BDF && o->method != SALTA_METHOD_ERK) ||
      (o->linear_solver != SALTA_LS_DENSE && o->linear_solver != SALTA_LS_KLU && o->linear_solver != SALTA_LS_AUTO))
    return salta__fail(s->err, SALTA_EINPUT,
                       "model '%s': bad options: max_events %d, max_steps %ld, zeno_window %g, method %d, linear solver %d",
                       d->name, o->max_events, o->max_steps, o->zeno_window, o->method, o->linear_solver);
  if (!(o->rtol > 0) || !(o->atol > 0))
    return salta__fail(s->err, SALTA_EINPUT, "model '%s': tolerances must be positive (rtol %g, atol %g)",
                       d->name, o->rtol, o->atol);
  for (j = 0; j < d->np; ++j)
    if (!isfinite(p[j]))
      return salta__fail(s->err, SALTA_EINPUT, "model '%s': parameter '%s' is %g", d->name, d->p_names[j], p[j]);
  for (j = 0; j < s->nx; ++j)
    if (!isfinite(x0[j]))
      return salta__fail(s->err, SALTA_EINPUT, "model '%s': initial state '%s' is %g", d->name, d->x_names[j], x0[j]);
  /* a grid computed as tf * i / n may overshoot tf by an ulp: allow it */
  slack = 1e-12 * fmax(1.0, fmax(fabs(o->t0), fabs(o->tf)));
  for (j = 0; j < nt; ++j)
    if (!(times[j] >= o->t0 - slack && times[j] <= o->tf + slack) || (j > 0 && times[j] < times[j - 1]))
      return salta__fail(s->err, SALTA_EINPUT, "model '%s': output time %d (%g) is not sorted inside [%g, %g]",
                         d->name, j + 1, times[j], o->t0, o->tf);
  return SALTA_OK;
}

static void free_run(salta_sim *s) {
  salta__sens_free_run(s);
  free(s->work); free(s->jvals); free(s->gz); free(s->guard); free(s->guard0); free(s->gprev); free(s->stuck_t); free(s->leave_t); free(s->leave_cache); free(s->brackets); free(s->gsamples); free(s->interp_w);
  free(s->ipiv); free(s->armed); free(s->roots); free(s->fire); free(s->stuck); free(s->leaving);
  s->work = s->jvals = s->gz = s->guard = s->guard0 = s->gprev = s->stuck_t = s->leave_t = s->leave_cache = s->brackets = s->gsamples = s->interp_w = NULL;
  s->ipiv = s->armed = s->roots = s->fire = s->stuck = s->leaving = NULL;
}

static int alloc_run(salta_sim *s, int nt) {
  const salta_model_def *d = s->d;
  int maxnnz = 1, k, w;
  const salta_function_def *fns[] = {&d->f, &d->g};
  for (k = 0; k < 2; ++k)
    for (w = 0; w < 4; ++w) if (fns[k]->d[w].nnz > maxnnz) maxnnz = fns[k]->d[w].nnz;
  free(s->out_t); free(s->out_w); free(s->out_y);
  s->out_t = malloc(sizeof(double) * (size_t)(nt + 1));
  s->out_w = malloc(sizeof(double) * (size_t)(nt + 1) * s->n);
  s->out_y = malloc(sizeof(double) * (size_t)(nt + 1) * (d->ny + 1));
  s->work = malloc(sizeof(double) * (size_t)(s->nz + 5 * s->n + 8));
  s->jvals = malloc(sizeof(double) * (size_t)maxnnz);
  s->gz = malloc(sizeof(double) * (size_t)(s->nz * s->nz + 1));
  s->guard = malloc(sizeof(double) * (size_t)(d->ne + 1));
  s->guard0 = malloc(sizeof(double) * (size_t)(d->ne + 1));
  s->gprev = malloc(sizeof(double) * (size_t)(d->ne + 1));
  s->stuck_t = malloc(sizeof(double) * (size_t)(d->ne + 1));
  s->leave_t = malloc(sizeof(double) * (size_t)(d->ne + 1));
  s->leave_cache = malloc(sizeof(double) * (size_t)(d->ne + 1));
  s->brackets = malloc(sizeof(double) * 4 * (size_t)(d->ne + 1));
  s->interp_w = malloc(sizeof(double) * (size_t)(s->n + 1));
  s->gsamples = malloc(sizeof(double) * (size_t)(d->ne + 1) * (SAMPLES + 1));
  s->ipiv = malloc(sizeof(int) * (size_t)(s->nz + 1));
  s->armed = calloc((size_t)d->ne + 1, sizeof(int));
  s->roots = calloc((size_t)d->ne + 1, sizeof(int));
  s->fire = calloc((size_t)d->ne + 1, sizeof(int));
  s->stuck = calloc((size_t)d->ne + 1, sizeof(int));
  s->leaving = calloc((size_t)d->ne + 1, sizeof(int));
  if (s->ns > 0 && salta__sens_alloc(s, nt)) return -1;
  return (s->out_t && s->out_w && s->out_y && s->work && s->jvals && s->gz && s->guard &&
          s->guard0 && s->gprev && s->stuck_t && s->leave_t && s->leave_cache && s->brackets && s->gsamples && s->interp_w && s->ipiv && s->armed && s->roots && s->fire && s->stuck && s->leaving) ? 0 : -1;
}

/* The integration loop proper: IDAS one step at a time. */
/* The IDAS interpolant as a salta__interp. */
typedef struct ida_interp { void *mem; N_Vector tmp; } ida_interp;

static void ida_at(void *ctx, double t, double *w) {
  ida_interp *c = ctx;
  IDAGetDky(c->mem, t, 0, c->tmp);
  memcpy(w, N_VGetArrayPointer(c->tmp), sizeof(double) * (size_t)NV_LENGTH_S(c->tmp));
}

/* Sensitivities at time t on the current step (IDAS interpolation). */
static const double *sens_at(salta_sim *s, ida_ctx *c, N_Vector *dkyS, double t, double *S) {
  if (s->ns == 0) return NULL;
  IDAGetSensDky(c->mem, t, 0, dkyS);
  from_vectors(s, dkyS, S);
  return S;
}

static int integrate(salta_sim *s, ida_ctx *c, const salta_sim_options *o,
                     const double *times, int nt) {
  double *w = N_VGetArrayPointer(c->y), *wp = N_VGetArrayPointer(c->yp), t = o->t0;
  size_t nS = (size_t)s->n * s->ns;
  double *Sp = s->S + nS, *Stmp = NULL;
  N_Vector dky = N_VClone(c->y), *dkyS = NULL;
  int flag, st = SALTA_OK, k = 0, at_event = 0;
  long steps = 0;
  if (!dky) return salta__fail(s->err, SALTA_EMEM, "out of memory");
  if (s->ns > 0) {
    dkyS = N_VCloneVectorArray(s->ns, c->y);
    Stmp = malloc(sizeof(double) * nS);
    if (!dkyS || !Stmp) { st = salta__fail(s->err, SALTA_EMEM, "out of memory"); goto out; }
  }
  while (k < nt && times[k] <= o->t0) salta__store_output(s, o->t0, w, s->S), ++k;
  memcpy(s->gprev, s->guard0, sizeof(double) * s->d->ne);
  for (;;) {
    double tret, tau;
    int nfire = 0;
    at_event = 0;
    if (++steps > o->max_steps) {
      st = salta__fail(s->err, SALTA_ESOLVER, "model '%s': more than max_steps = %ld steps at t = %.17g",
                       s->d->name, o->max_steps, t);
      break;
    }
    flag = IDASolve(c->mem, o->tf, &tret, c->y, c->yp, IDA_ONE_STEP);
    if (flag < 0) { st = fail_idas(s, flag, t); break; }
    {
      double tn, hu, from = t;
      ida_interp ic = {c->mem, dky};
      salta__interp ip = {ida_at, &ic};
      if (IDAGetCurrentTime(c->mem, &tn) == IDA_SUCCESS && IDAGetLastStep(c->mem, &hu) == IDA_SUCCESS &&
          from < tn - hu)
        from = tn - hu;   /* only the last step can be interpolated */
      nfire = salta__crossing(s, &ip, t, from, tret, &tau);
    }
    if (nfire < 0) { st = salta__guard_error(s); break; }
    s->nonfinite_row = -1;   /* a step succeeded: earlier recoverable NaNs are history */
    if (nfire > 0) {
      /* an event inside the step, before anything IDAS reported */
      IDAGetDky(c->mem, tau, 0, c->y);
      tret = tau;
      flag = IDA_ROOT_RETURN;
    } else if (flag == IDA_ROOT_RETURN) {
      nfire = firing_events(s, c->mem, tret, w);
    }
    t = tret;
    /* outputs before this point (strictly before an event) */
    while (k < nt && (times[k] < t || (flag != IDA_ROOT_RETURN && times[k] <= t))) {
      IDAGetDky(c->mem, times[k], 0, dky);
      salta__store_output(s, times[k], N_VGetArrayPointer(dky), sens_at(s, c, dkyS, times[k], Stmp));
      ++k;
    }
    if (o->record_steps && (flag != IDA_ROOT_RETURN || nfire > 0) && salta__store_step(s, t, w)) {
      st = salta__fail(s->err, SALTA_EMEM, "out of memory");
      break;
    }
    if (flag == IDA_ROOT_RETURN && nfire > 0) {
      if (sens_at(s, c, dkyS, t, s->S)) salta__sens_fill_z(s, t, w, s->S);  /* accurate s_z- */
      if ((st = salta__after_events(s, o, t, w, nfire, s->S, Sp))) break;
      if (o->record_steps && salta__store_step(s, t, w)) {
        st = salta__fail(s->err, SALTA_EMEM, "out of memory");
        break;
      }
      s->d->f.eval(t, w, w + s->nx, s->p, wp);
      memset(wp + s->nx, 0, sizeof(double) * s->nz);
      while (k < nt && times[k] <= t) salta__store_output(s, times[k], w, s->S), ++k;
      at_event = 1;
      if (o->tf - t <= 4 * 2.2e-16 * fmax(fabs(t), fabs(o->tf))) break;  /* event at tf */
      accumulate_stats(s, c->mem);   /* IDAReInit zeroes the counters */
      if (IDAReInit(c->mem, t, c->y, c->yp) || IDASetStopTime(c->mem, o->tf)) {
        st = fail_idas(s, IDA_ILL_INPUT, t);
        break;
      }
      if (s->ns > 0) {
        to_vectors(s, s->S, c->yS);
        to_vectors(s, Sp, c->ypS);
        if (IDASensReInit(c->mem, IDA_STAGGERED, c->yS, c->ypS)) {
          st = fail_idas(s, IDA_ILL_INPUT, t);
          break;
        }
      }
      continue;
    }
    if ((st = salta__rearm(s, t))) break;
    memcpy(s->gprev, s->guard, sizeof(double) * s->d->ne);
    if (flag == IDA_TSTOP_RETURN || t >= o->tf) break;
  }
  while (st == SALTA_OK && k < nt)
    salta__store_output(s, times[k], w, at_event ? s->S : sens_at(s, c, dkyS, t, Stmp)), ++k;
  accumulate_stats(s, c->mem);
out:
  if (dkyS) N_VDestroyVectorArray(dkyS, s->ns);
  free(Stmp);
  N_VDestroy(dky);
  return st;
}

int salta_sim_run(salta_sim *s, const salta_sim_options *o, const double *p,
                  const double *x0, const double *times, int nt) {
  const salta_model_def *d;
  ida_ctx c;
  double *w, *wp;
  int st, worst, j;
  double res;
  if (!s) return SALTA_EINPUT;
  d = s->d;
  if (!o || !p || (nt > 0 && !times) || nt < 0)
    return salta__fail(s->err, SALTA_EINPUT, "model '%s': simulate needs options, parameters and %s",
                       d->name, nt < 0 ? "a non-negative number of output times" : "the output times");
  s->nout = s->nev = 0;
  s->ev_w.n = s->steps.n = s->ev_sens.n = 0;
  memset(&s->stats, 0, sizeof s->stats);
  s->err[0] = s->idas_msg[0] = '\0';
  s->nonfinite_row = -1;
  s->guard_bad = 0;
  s->exact_z = o->method == SALTA_METHOD_ERK;
  s->stats.linear_solver = SALTA_LS_NONE;
  s->p = p;
  if (!x0) x0 = d->x_start;
  if ((st = check_inputs(s, o, p, x0, times, nt))) return st;
  if (o->method != SALTA_METHOD_ERK) s->stats.linear_solver = salta__use_klu(o, s->n) ? SALTA_LS_KLU : SALTA_LS_DENSE;
  memset(&c, 0, sizeof c);
  if (alloc_run(s, nt)) { free_run(s); return salta__fail(s->err, SALTA_EMEM, "out of memory"); }
  /* work layout: [g scratch (nz)] [w (n)] [w' (n)] [event scratch (2n)] [spare (n)] */
  w = s->work + s->nz;
  wp = w + s->n;
  memcpy(w, x0, sizeof(double) * s->nx);
  if (s->nz) memcpy(w + s->nx, d->z_start, sizeof(double) * s->nz);
  if (s->nz && salta__solve_z(s, o->t0, w, w + s->nx, &worst, &res) != 0) {
    st = salta__fail(s->err, SALTA_ESOLVER,
                     "model '%s': inconsistent initial state at t = %g: Newton on g did not converge; "
                     "algebraic equation g[%d] (for '%s') has the largest residual, %g",
                     d->name, o->t0, worst + 1, d->z_names[worst], res);
    goto done;
  }
  d->f.eval(o->t0, w, w + s->nx, p, wp);
  for (j = 0; j < s->nx; ++j)
    if (!isfinite(wp[j])) {
      st = salta__fail(s->err, SALTA_ESOLVER, "model '%s': f for state '%s' is %g at t = %g (initial state)",
                       d->name, d->x_names[j], wp[j], o->t0);
      goto done;
    }
  memset(wp + s->nx, 0, sizeof(double) * s->nz);
  if (d->ne) {
    d->e.eval(o->t0, w, w + s->nx, p, s->guard0);
    for (j = 0; j < d->ne; ++j) {
      if (!isfinite(s->guard0[j])) {
        st = salta__fail(s->err, SALTA_ESOLVER, "model '%s': the guard of event '%s' is %g at t = %g",
                         d->name, d->e_names[j], s->guard0[j], o->t0);
        goto done;
      }
      s->armed[j] = is_clear(s, j, s->guard0[j]);
    }
  }
  if (o->record_steps && salta__store_step(s, o->t0, w)) {
    st = salta__fail(s->err, SALTA_EMEM, "out of memory");
    goto done;
  }
  if (o->method == SALTA_METHOD_ERK) {
    if (s->ns > 0 && (st = salta__sens_initial(s, o->t0, w, s->S, s->S + (size_t)s->n * s->ns)))
      goto done;
    st = salta__integrate_erk(s, o, times, nt);
    goto done;
  }
  if ((st = ida_setup(s, &c, o, o->t0)) == -2) {
    st = SALTA_ESOLVER;   /* message set by the sensitivity initialisation */
    goto done;
  }
  if (st) {
    st = salta__fail(s->err, SALTA_ESOLVER, "model '%s': IDAS setup failed: %s", d->name,
                     s->idas_msg[0] ? s->idas_msg : "out of memory or bad option");
    goto done;
  }
  st = integrate(s, &c, o, times, nt);
done:
  ida_free(&c);
  salta__pattern_free(&s->pat);
  free_run(s);
  s->p = NULL;
  return st;
}

/* ---- lifecycle and queries ------------------------------------------------------------ */

void salta_sim_options_init(salta_sim_options *o, double t0, double tf) {
  memset(o, 0, sizeof *o);
  o->t0 = t0;
  o->tf = tf;
  o->rtol = 1e-6;
  o->atol = 1e-8;
  o->max_events = 10000;
  o->zeno_count = 100;   /* 0 turns the cascade test off */
  o->zeno_window = 1e-9 * (tf - t0);
  o->max_steps = 1000000;
  o->linear_solver = SALTA_LS_AUTO;
}

int salta__use_klu(const salta_sim_options *o, int n) {
  return o->linear_solver == SALTA_LS_KLU || (o->linear_solver == SALTA_LS_AUTO && n >= SALTA_KLU_MIN_N);
}

int salta_sim_create(salta_sim **out, salta_model *model) {
  salta_sim *s;
  if (!out || !model) return SALTA_EINPUT;
  *out = s = calloc(1, sizeof *s);
  if (!s) return SALTA_EMEM;
  s->model = model;
  s->d = salta_model_def_get(model);
  s->nx = s->d->nx;
  s->nz = s->d->nz;
  s->n = s->nx + s->nz;
  return SALTA_OK;
}

void salta_sim_free(salta_sim **sim) {
  salta_sim *s;
  if (!sim || !*sim) return;
  s = *sim;
  free_run(s);
  free(s->out_t); free(s->out_w); free(s->out_y); free(s->ev);
  free(s->ev_w.v); free(s->steps.v);
  free(s->out_s); free(s->out_dy); free(s->dirs); free(s->ev_sens.v);
  free(s);
  *sim = NULL;
}

const char *salta_sim_errmsg(const salta_sim *s) { return s ? s->err : "no simulation"; }
int salta_sim_nout(const salta_sim *s) { return s ? s->nout : 0; }
int salta_sim_nevents(const salta_sim *s) { return s ? s->nev : 0; }
int salta_sim_nsteps(const salta_sim *s) { return s ? (int)(s->steps.n / (size_t)(s->n + 1)) : 0; }

int salta_sim_out(const salta_sim *s, int k, double *t, const double **x, const double **z,
                  const double **y) {
  if (!s || k < 0 || k >= s->nout) return SALTA_EINPUT;
  if (t) *t = s->out_t[k];
  if (x) *x = s->out_w + (size_t)k * s->n;
  if (z) *z = s->out_w + (size_t)k * s->n + s->nx;
  if (y) *y = s->out_y + (size_t)k * s->d->ny;
  return SALTA_OK;
}

int salta_sim_event(const salta_sim *s, int k, salta_event_record *rec) {
  const double *w;
  if (!s || !rec || k < 0 || k >= s->nev) return SALTA_EINPUT;
  w = s->ev_w.v + (size_t)k * 2 * s->n;
  rec->t = s->ev[k].t;
  rec->event = s->ev[k].event;
  rec->group = s->ev[k].group;
  rec->group_size = s->ev[k].group_size;
  rec->x_minus = w;
  rec->z_minus = w + s->nx;
  rec->x_plus = w + s->n;
  rec->z_plus = w + s->n + s->nx;
  return SALTA_OK;
}

int salta_sim_step(const salta_sim *s, int k, double *t, const double **x, const double **z) {
  const double *w;
  if (!s || k < 0 || k >= salta_sim_nsteps(s)) return SALTA_EINPUT;
  w = s->steps.v + (size_t)k * (s->n + 1);
  if (t) *t = w[0];
  if (x) *x = w + 1;
  if (z) *z = w + 1 + s->nx;
  return SALTA_OK;
}

void salta_sim_stats_get(const salta_sim *s, salta_sim_stats *stats) {
  if (s && stats) *stats = s->stats;
}
