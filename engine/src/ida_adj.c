/*
** ida_adj.c -- IDAS's adjoint module on one event-free segment (see
** backward.h): the forward run over the segment with checkpoints every so
** many steps (IDAAdjInit, IDASolveF), then the backward DAE (IDASolveB).
** The forward residual and iteration matrix are the DAE's (dae.c); the
** backward problem's residual [adjoint; quadratures], its error weights
** and its block-triangular linear solver are here. The quadratures are
** differential unknowns of the backward DAE, not IDAS's quadratures: IDAS
** picks its order from the unknowns alone, and an adjoint that is a
** polynomial (free flight) drops it to 1, where the quadratures' error
** then sets tiny steps (found by test: a linear adjoint lost 2e-6 of its
** integral at rtol 1e-10 in 30,000 steps). Its Newton systems are block
** triangular; their adjoint block is the transpose of the forward
** iteration matrix, factored as the forward problem's is. The algebraic
** adjoint is made consistent (lam_z = g_z^-T f_z^T lam_x) at every
** (re)start.
*/
#include <float.h>
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
#include "backward.h"
#include "linsol.h"
#include "pattern.h"
#include "sparselu.h"

typedef struct salta__ida_adj {
  salta__dae *dae;
  salta__backward_opts op;
  int nx, n, m, sparse;         /* m = n + nq: the backward problem's unknowns [lam_x; lam_z; q] */
  SUNContext ctx;
  void *mem;
  int which, fwd_ready, bwd_ready;
  N_Vector y, yp, id, yB, ypB, idB;
  SUNMatrix A, AB;              /* AB: a 1 x 1 placeholder; the backward solver keeps its own */
  SUNLinearSolver LS, LSB;
  salta__pattern pat;           /* KLU: the iteration matrix's pattern */
  salta__sparselu *lu;          /* KLU: the backward matrix's factors */
  double *vals;                 /* the backward block: the forward iteration matrix at c_j = -c_jB,
                                   on pat (KLU) or dense n x n (factored in place) */
  int *piv;                     /* dense: its pivots */
  double *w_setup, t_setup, cj_setup;   /* where it was factored */
  double *gp;                   /* np: a quadrature row over every parameter */
  double scale;                 /* lam = scale times the backward problem's solution; 0: lam = 0 */
  double t0, t1, tb;            /* the forward run's interval; where the backward problem is */
  int step_guessed;             /* its first step since the restart at tb was guessed from the last */
  double *q_seen;               /* nq: the quadratures already handed out since the last restart */
  char msg[512];                /* IDAS's last error message */
} salta__ida_adj;

static char *err_of(salta__ida_adj *c) { return c->dae->err; }
static const char *name_of(const salta__ida_adj *c) { return c->dae->d->name; }

/* Keeps IDAS's first message since the last clear: the cause, not the
** adjoint module's report of it. */
static void error_handler(int code, const char *module, const char *fn, char *msg, void *ud) {
  salta__ida_adj *c = ud;
  (void)code; (void)module;
  if (!c->msg[0]) snprintf(c->msg, sizeof c->msg, "%s: %s", fn, msg);
}

/* ---- the forward problem ----------------------------------------------------- */

static int residual(sunrealtype t, N_Vector yy, N_Vector yp, N_Vector rr, void *ud) {
  salta__ida_adj *c = ud;
  int bad;
  if (salta_interrupted()) return -1;
  bad = salta__dae_residual(c->dae, t, N_VGetArrayPointer(yy), N_VGetArrayPointer(yp), N_VGetArrayPointer(rr));
  return bad == -1 ? 0 : bad == -2 ? -1 : 1;   /* not finite: recoverable, IDAS tries a smaller step */
}

static int jacobian(sunrealtype t, sunrealtype cj, N_Vector yy, N_Vector yp, N_Vector rr, SUNMatrix J, void *ud,
                    N_Vector t1, N_Vector t2, N_Vector t3) {
  salta__ida_adj *c = ud;
  const double *w = N_VGetArrayPointer(yy);
  int k;
  (void)yp; (void)rr; (void)t1; (void)t2; (void)t3;
  if (!c->sparse) return salta__dae_iter_dense(c->dae, t, w, cj, 1.0, SM_DATA_D(J)) ? 1 : 0;
  for (k = 0; k <= c->pat.n; ++k) SM_INDEXPTRS_S(J)[k] = c->pat.colptr[k];
  for (k = 0; k < c->pat.nnz; ++k) SM_INDEXVALS_S(J)[k] = c->pat.rowind[k];
  return salta__dae_iter_sparse(c->dae, &c->pat, t, w, cj, 1.0, SM_DATA_S(J)) ? 1 : 0;
}

/* IDAS failed: the message names the model, the phase and the time. */
static int fail(salta__ida_adj *c, int flag, const char *phase, double t) {
  char *name = IDAGetReturnFlagName(flag);
  int st = salta_interrupted() ? SALTA_EINTR : SALTA_ESOLVER;
  if (st == SALTA_EINTR)
    salta__cadj_interrupted(err_of(c), name_of(c), t);
  else
    salta__fail(err_of(c), st, "model '%s': continuous adjoint: IDAS failed in the %s at t = %.17g: %s (%s)",
                name_of(c), phase, t, name ? name : "?", c->msg[0] ? c->msg : "no message");
  free(name);
  return st;
}

/* IDAS's forward memory with its solver and options, at (t0, y, yp). */
static int setup_forward(salta__ida_adj *c, double t0) {
  const salta_sim_options *o = c->op.o;
  double *idv = N_VGetArrayPointer(c->id);
  int i;
  for (i = 0; i < c->n; ++i) idv[i] = i < c->nx ? 1.0 : 0.0;
  if (IDAInit(c->mem, residual, t0, c->y, c->yp) || IDASetUserData(c->mem, c) ||
      IDASStolerances(c->mem, SALTA__RERUN_TIGHTER * o->rtol, SALTA__RERUN_TIGHTER * o->atol) ||
      IDASetLinearSolver(c->mem, c->LS, c->A) ||
      IDASetJacFn(c->mem, jacobian) || IDASetId(c->mem, c->id) || IDASetSuppressAlg(c->mem, SUNTRUE) ||
      IDASetMaxNumSteps(c->mem, o->max_steps) || IDASetMaxOrd(c->mem, o->max_order) ||
      (o->max_step > 0 && IDASetMaxStep(c->mem, o->max_step)) ||
      IDAAdjInit(c->mem, c->op.checkpoint_steps, IDA_HERMITE))
    return -1;
  c->fwd_ready = 1;
  return 0;
}

static int ida_adj_forward(void *self, double t0, const double *w0, double t1) {
  salta__ida_adj *c = self;
  const salta__dae *a = c->dae;
  double *w = N_VGetArrayPointer(c->y), *wp = N_VGetArrayPointer(c->yp), tret = t0;
  int ncheck = 0, flag;
  memcpy(w, w0, sizeof(double) * (size_t)c->n);
  a->d->f.eval(t0, w, w + c->nx, a->p, wp);   /* x' = f; IDAS leaves z' out */
  memset(wp + c->nx, 0, sizeof(double) * (size_t)(c->n - c->nx));
  c->msg[0] = '\0';
  if (c->fwd_ready) {
    double h = 0;   /* the segments before and after an event take steps alike: start from a tenth of the last */
    if (IDAGetLastStep(c->mem, &h) != IDA_SUCCESS || !(fabs(h) < t1 - t0)) h = 0;
    flag = IDAReInit(c->mem, t0, c->y, c->yp) || IDAAdjReInit(c->mem) || IDASetInitStep(c->mem, 0.1 * fabs(h))
               ? IDA_ILL_INPUT : IDA_SUCCESS;
  } else {
    flag = setup_forward(c, t0) ? IDA_MEM_FAIL : IDA_SUCCESS;
  }
  if (flag == IDA_SUCCESS) flag = IDASetStopTime(c->mem, t1);
  if (flag == IDA_SUCCESS) flag = IDASolveF(c->mem, t1, &tret, c->y, c->yp, IDA_NORMAL, &ncheck);
  if (flag < 0) return fail(c, flag, "forward run of its segment", tret);
  c->t0 = t0, c->t1 = t1;
  return SALTA_OK;
}

/* ---- the backward problem ------------------------------------------------------- */

/* q_k' = lam^T F_p[:, qpar_k] = -(f_p^T lam_x)_k + (g_p^T lam_z)_k at the
** forward state w into out (nq); scale multiplies it. */
static void quad_rows(salta__ida_adj *c, double t, const double *w, const double *lam, double scale, double *out) {
  salta__dae *a = c->dae;
  int k;
  memset(c->gp, 0, sizeof(double) * (size_t)a->np);
  salta__dae_add_transpose(a, &a->d->f.d[SALTA_WRT_P], t, w, -scale, lam, 0, c->gp);
  salta__dae_add_transpose(a, &a->d->g.d[SALTA_WRT_P], t, w, scale, lam, c->nx, c->gp);
  for (k = 0; k < c->op.nq; ++k) out[k] = c->gp[c->op.qpar[k]];
}

/* [lam_x' + f_x^T lam_x - g_x^T lam_z; f_z^T lam_x - g_z^T lam_z;
** q' - lam^T F_p] at the forward state yy. */
static int residual_b(sunrealtype t, N_Vector yy, N_Vector yp, N_Vector yyB, N_Vector ypB, N_Vector rrB, void *ud) {
  salta__ida_adj *c = ud;
  salta__dae *a = c->dae;
  const salta_model_def *d = a->d;
  const double *w = N_VGetArrayPointer(yy), *lam = N_VGetArrayPointer(yyB), *lp = N_VGetArrayPointer(ypB);
  double *r = N_VGetArrayPointer(rrB);
  int nx = c->nx, n = c->n, i;
  (void)yp;
  if (salta_interrupted()) return -1;
  memcpy(r, lp, sizeof(double) * (size_t)nx);
  memset(r + nx, 0, sizeof(double) * (size_t)(n - nx));
  salta__dae_add_transpose(a, &d->f.d[SALTA_WRT_X], t, w, 1.0, lam, 0, r);
  salta__dae_add_transpose(a, &d->g.d[SALTA_WRT_X], t, w, -1.0, lam, nx, r);
  salta__dae_add_transpose(a, &d->f.d[SALTA_WRT_Z], t, w, 1.0, lam, 0, r + nx);
  salta__dae_add_transpose(a, &d->g.d[SALTA_WRT_Z], t, w, -1.0, lam, nx, r + nx);
  quad_rows(c, t, w, lam, -1.0, r + n);
  for (i = n; i < c->m; ++i) r[i] += lp[i];
  for (i = 0; i < c->m; ++i)
    if (!isfinite(r[i])) return 1;   /* recoverable: IDAS tries a smaller step */
  return 0;
}

/* The Newton matrix of the backward problem, [[J, 0]; [Q, c_jB I]]: J =
** [[c_jB I + f_x^T, -g_x^T]; [f_z^T, -g_z^T]] is the forward iteration
** matrix M at c_j = -c_jB transposed and negated, factored here as M; Q
** the quadratures' rows, applied at the same point by the solver. The
** SUNMatrix IDAS passes is a placeholder. */
static int jacobian_b(sunrealtype t, sunrealtype cjB, N_Vector yy, N_Vector yp, N_Vector yyB, N_Vector ypB,
                      N_Vector rrB, SUNMatrix JB, void *ud, N_Vector t1, N_Vector t2, N_Vector t3) {
  salta__ida_adj *c = ud;
  const double *w = N_VGetArrayPointer(yy);
  int bad;
  (void)yp; (void)yyB; (void)ypB; (void)rrB; (void)JB; (void)t1; (void)t2; (void)t3;
  if (c->sparse)
    bad = salta__dae_iter_sparse(c->dae, &c->pat, t, w, -cjB, 1.0, c->vals) ||
          salta__sparselu_factor(c->lu, c->vals, NULL);
  else
    bad = salta__dae_iter_dense(c->dae, t, w, -cjB, 1.0, c->vals) || salta__lu_factor(c->n, c->vals, c->piv, NULL);
  memcpy(c->w_setup, w, sizeof(double) * (size_t)c->n);
  c->t_setup = t, c->cj_setup = cjB;
  return bad ? 1 : 0;   /* recoverable: IDAS tries a smaller step */
}

static SUNLinearSolver_Type block_type(SUNLinearSolver S) { (void)S; return SUNLINEARSOLVER_DIRECT; }
static SUNLinearSolver_ID block_id(SUNLinearSolver S) { (void)S; return SUNLINEARSOLVER_CUSTOM; }
static int block_setup(SUNLinearSolver S, SUNMatrix A) { (void)S; (void)A; return SUNLS_SUCCESS; }

/* x = [[J, 0]; [Q, c_jB I]]^-1 b: J x_lam = b_lam by M^T x_lam = -b_lam,
** then x_q = (b_q - Q x_lam) / c_jB. */
static int block_solve(SUNLinearSolver S, SUNMatrix A, N_Vector x, N_Vector b, sunrealtype tol) {
  salta__ida_adj *c = S->content;
  double *xv = N_VGetArrayPointer(x);
  const double *bv = N_VGetArrayPointer(b);
  int i;
  (void)A; (void)tol;
  for (i = 0; i < c->n; ++i) xv[i] = -bv[i];
  if (c->sparse) salta__sparselu_solve(c->lu, xv, 1);
  else salta__lu_solve(c->n, c->vals, c->piv, xv, 1, 1);
  quad_rows(c, c->t_setup, c->w_setup, xv, 1.0, xv + c->n);
  for (i = c->n; i < c->m; ++i) xv[i] = (bv[i] + xv[i]) / c->cj_setup;
  return SUNLS_SUCCESS;
}

static int block_free(SUNLinearSolver S) {
  if (S) S->content = NULL, SUNLinSolFreeEmpty(S);
  return SUNLS_SUCCESS;
}

static SUNLinearSolver block_solver(salta__ida_adj *c) {
  SUNLinearSolver S = SUNLinSolNewEmpty(c->ctx);
  if (!S) return NULL;
  S->ops->gettype = block_type, S->ops->getid = block_id, S->ops->setup = block_setup;
  S->ops->solve = block_solve, S->ops->free = block_free;
  S->content = c;
  return S;
}

/* The error weights of the backward problem: the adjoint's (adjoint_rtol,
** atol) and the quadratures' (quad_rtol, atol), each block scaled so that
** IDAS's root-mean-square norm over all unknowns is the sum of the blocks'
** mean squares (many quadratures do not dilute the adjoint's error). IDAS
** passes the forward memory, whose user data is c. */
static int weights_b(N_Vector yB, N_Vector ewt, void *fwd_mem) {
  salta__ida_adj *c = NULL;
  const double *y = N_VGetArrayPointer(yB);
  double *e = N_VGetArrayPointer(ewt), sx, sz, sq;
  int i;
  if (IDAGetUserData(fwd_mem, (void **)&c) != IDA_SUCCESS || !c) return -1;
  sx = sqrt((double)c->m / c->nx), sz = c->n > c->nx ? sqrt((double)c->m / (c->n - c->nx)) : 1;
  sq = c->m > c->n ? sqrt((double)c->m / (c->m - c->n)) : 1;
  for (i = 0; i < c->m; ++i) {
    int quad = i >= c->n;
    double tol = quad ? c->op.rtol_q * fabs(y[i]) + c->op.atol_q : c->op.rtol_b * fabs(y[i]) + c->op.atol_b;
    if (!(tol > 0)) return -1;
    e[i] = (quad ? sq : i < c->nx ? sx : sz) / tol;
  }
  return 0;
}

/* yB = [lam / scale; q = 0] made consistent at the forward state w, and
** ypB. */
static int consistent_b(salta__ida_adj *c, double t, const double *w, const double *lam_x) {
  salta__dae *a = c->dae;
  const salta_model_def *d = a->d;
  double *lam = N_VGetArrayPointer(c->yB), *lp = N_VGetArrayPointer(c->ypB), big = salta__backward_scale(lam_x, c->nx);
  int i, nx = c->nx;
  c->scale = big;
  if (big < 0)
    return salta__fail(err_of(c), SALTA_ESOLVER, "model '%s': continuous adjoint: the adjoint is not finite at "
                       "t = %.17g", name_of(c), t);
  if (!(big > 0)) return SALTA_OK;
  N_VConst(0.0, c->yB);
  N_VConst(0.0, c->ypB);
  for (i = 0; i < nx; ++i) lam[i] = lam_x[i] / big;
  if (c->n > nx) {
    salta__dae_add_transpose(a, &d->f.d[SALTA_WRT_Z], t, w, 1.0, lam, 0, lam + nx);
    if (salta__dae_factor_gz(a, t, w))
      return salta__fail(err_of(c), SALTA_ESOLVER, "model '%s': continuous adjoint: g_z is singular at t = %.17g",
                         name_of(c), t);
    salta__dae_gz_solve(a, lam + nx, 1, 1);
  }
  salta__dae_add_transpose(a, &d->f.d[SALTA_WRT_X], t, w, -1.0, lam, 0, lp);
  salta__dae_add_transpose(a, &d->g.d[SALTA_WRT_X], t, w, 1.0, lam, nx, lp);
  quad_rows(c, t, w, lam, 1.0, lp + c->n);
  return SALTA_OK;
}

/* The backward problem's memory, solver and options, from (tb, yB, ypB). */
static int setup_backward(salta__ida_adj *c, double tb) {
  const salta_sim_options *o = c->op.o;
  void *memB;
  if (IDACreateB(c->mem, &c->which) || IDAInitB(c->mem, c->which, residual_b, tb, c->yB, c->ypB)) return -1;
  memB = IDAGetAdjIDABmem(c->mem, c->which);
  if (!memB || IDASetErrHandlerFn(memB, error_handler, c) || IDASetUserDataB(c->mem, c->which, c) ||
      IDAWFtolerances(memB, weights_b) || IDASetLinearSolverB(c->mem, c->which, c->LSB, c->AB) ||
      IDASetJacFnB(c->mem, c->which, jacobian_b) || IDASetIdB(c->mem, c->which, c->idB) ||
      IDASetSuppressAlgB(c->mem, c->which, SUNTRUE) || IDASetMaxNumStepsB(c->mem, c->which, o->max_steps) ||
      (o->max_step > 0 && IDASetMaxStepB(c->mem, c->which, o->max_step)))
    return -1;
  c->bwd_ready = 1;
  return 0;
}

/* The backward problem's last step, or 0. */
static double last_step_b(salta__ida_adj *c) {
  void *memB = IDAGetAdjIDABmem(c->mem, c->which);
  double h = 0;
  if (!memB || IDAGetLastStep(memB, &h) != IDA_SUCCESS || !isfinite(h)) return 0;
  return fabs(h);
}

static int ida_adj_restart(void *self, double t, const double *w, const double *lam_x) {
  salta__ida_adj *c = self;
  int st, bad;
  double h = c->bwd_ready ? last_step_b(c) : 0;
  if ((st = consistent_b(c, t, w ? w : N_VGetArrayPointer(c->y), lam_x))) return st;
  c->tb = t;
  if (!(c->scale > 0)) return SALTA_OK;   /* lam = 0 stays 0: nothing to integrate */
  memset(c->q_seen, 0, sizeof(double) * (size_t)c->op.nq);
  c->step_guessed = c->bwd_ready && h > 0;
  if (!c->bwd_ready) bad = setup_backward(c, t);
  else   /* a datum's jump is usually as smooth as before it: from a tenth of the last step */
    bad = IDAReInitB(c->mem, c->which, t, c->yB, c->ypB) || IDASetInitStepB(c->mem, c->which, -0.1 * h);
  if (bad) return fail(c, IDA_ILL_INPUT, "start of the backward problem", t);
  return SALTA_OK;
}

/* The backward problem from tb to t. A guessed first step that fails (a
** jump that starts a fast transient: a stiff mode's adjoint) is retried
** once from the restart with IDAS's own first step. */
static int solve_back(salta__ida_adj *c, double t) {
  double tret = c->tb;
  int flag = IDASolveB(c->mem, t, IDA_NORMAL);
  if (flag < 0 && c->step_guessed) {
    c->msg[0] = '\0';
    c->step_guessed = 0;
    if (IDAReInitB(c->mem, c->which, c->tb, c->yB, c->ypB) || IDASetInitStepB(c->mem, c->which, 0.0)) return flag;
    flag = IDASolveB(c->mem, t, IDA_NORMAL);
  }
  c->step_guessed = 0;
  if (flag >= 0) flag = IDAGetB(c->mem, c->which, &tret, c->yB, c->ypB);
  return flag;
}

static int ida_adj_back(void *self, double t, double *lam_x, double *q) {
  salta__ida_adj *c = self;
  const double *lam = N_VGetArrayPointer(c->yB), *qb = lam + c->n;
  int i, flag;
  if (!(c->scale > 0)) {
    memset(lam_x, 0, sizeof(double) * (size_t)c->nx);
    return SALTA_OK;
  }
  if (!salta__backward_nothing_left(c->tb, t)) {
    c->msg[0] = '\0';
    if ((flag = solve_back(c, t)) < 0) return fail(c, flag, "backward problem", c->tb);
    c->tb = t;
  }
  for (i = 0; i < c->nx; ++i) lam_x[i] = c->scale * lam[i];
  for (i = 0; i < c->op.nq; ++i) q[i] += c->scale * (qb[i] - c->q_seen[i]), c->q_seen[i] = qb[i];
  return SALTA_OK;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

/* The matrices and linear solvers of both problems: 0, or -1. */
static int alloc_solvers(salta__ida_adj *c) {
  int n = c->n;
  c->AB = SUNDenseMatrix(1, 1, c->ctx);
  c->LSB = block_solver(c);
  if (c->sparse) {
    if (salta__pattern_build(&c->pat, c->dae->d, NULL) || salta__sparselu_new(&c->lu, &c->pat, NULL)) return -1;
    c->A = SUNSparseMatrix(n, n, c->pat.nnz, CSC_MAT, c->ctx);
    c->LS = c->A ? SUNLinSol_KLU(c->y, c->A, c->ctx) : NULL;
    c->vals = malloc(sizeof(double) * ((size_t)c->pat.nnz + 1));
  } else {
    c->A = SUNDenseMatrix(n, n, c->ctx);
    c->LS = salta__lapack_dense(n, c->ctx);
    c->vals = malloc(sizeof(double) * ((size_t)n * n + 1));
    c->piv = malloc(sizeof(int) * ((size_t)n + 1));
  }
  return c->A && c->AB && c->LS && c->LSB && c->vals && (c->sparse || c->piv) ? 0 : -1;
}

static int alloc_all(salta__ida_adj *c) {
  double *idb;
  int i;
  if (SUNContext_Create(NULL, &c->ctx)) return -1;
  c->y = N_VNew_Serial(c->n, c->ctx);
  c->yp = N_VNew_Serial(c->n, c->ctx);
  c->id = N_VNew_Serial(c->n, c->ctx);
  c->yB = N_VNew_Serial(c->m, c->ctx);
  c->ypB = N_VNew_Serial(c->m, c->ctx);
  c->idB = N_VNew_Serial(c->m, c->ctx);
  c->gp = malloc(sizeof(double) * ((size_t)c->dae->np + 1));
  c->q_seen = calloc((size_t)c->op.nq + 1, sizeof(double));
  c->w_setup = malloc(sizeof(double) * ((size_t)c->n + 1));
  if (!c->y || !c->yp || !c->id || !c->yB || !c->ypB || !c->idB || !c->gp || !c->q_seen || !c->w_setup ||
      alloc_solvers(c))
    return -1;
  idb = N_VGetArrayPointer(c->idB);
  for (i = 0; i < c->m; ++i) idb[i] = i < c->nx || i >= c->n ? 1.0 : 0.0;   /* lam_z is algebraic */
  c->mem = IDACreate(c->ctx);
  if (!c->mem || IDASetErrHandlerFn(c->mem, error_handler, c)) return -1;   /* IDAS's own handler prints */
  return 0;
}

static void ida_adj_free(void *self) {
  salta__ida_adj *c = self;
  N_Vector vecs[6];
  int i;
  if (!c) return;
  vecs[0] = c->y, vecs[1] = c->yp, vecs[2] = c->id, vecs[3] = c->yB, vecs[4] = c->ypB, vecs[5] = c->idB;
  if (c->mem) IDAFree(&c->mem);
  if (c->LS) SUNLinSolFree(c->LS);
  if (c->LSB) SUNLinSolFree(c->LSB);
  if (c->A) SUNMatDestroy(c->A);
  if (c->AB) SUNMatDestroy(c->AB);
  for (i = 0; i < 6; ++i)
    if (vecs[i]) N_VDestroy(vecs[i]);
  if (c->ctx) SUNContext_Free(&c->ctx);
  salta__sparselu_free(c->lu);
  if (c->sparse) salta__pattern_free(&c->pat);
  free(c->vals), free(c->piv), free(c->w_setup), free(c->gp), free(c->q_seen);
  free(c);
}

static const salta__backward_ops ida_adj_ops = {ida_adj_forward, ida_adj_restart, ida_adj_back, ida_adj_free};

int salta__ida_adj_create(salta__backward *b, salta__dae *dae, const salta__backward_opts *opts) {
  salta__ida_adj *c = calloc(1, sizeof *c);
  b->ops = &ida_adj_ops, b->self = NULL;
  if (!c) return salta__fail(dae->err, SALTA_EMEM, "out of memory");
  c->dae = dae;
  c->op = *opts;
  c->nx = dae->nx, c->n = dae->n, c->m = dae->n + opts->nq;
  c->sparse = opts->linear_solver == SALTA_LS_KLU;
  if (alloc_all(c)) {
    ida_adj_free(c);
    return salta__fail(dae->err, SALTA_EMEM, "model '%s': continuous adjoint: IDAS setup failed: out of memory",
                       dae->d->name);
  }
  b->self = c;
  return SALTA_OK;
}
