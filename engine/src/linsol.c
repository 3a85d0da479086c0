/*
** linsol.c -- a dense SUNLinearSolver on LAPACK (OpenBLAS).
*/
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>

#include <sunmatrix/sunmatrix_dense.h>

#include "errors.h"
#include "linsol.h"
#include "salta.h"

typedef struct lapack_content {
  int n;
  int *ipiv;
  sunindextype last_flag;
} lapack_content;

/* Below this size LAPACK's call overhead (dispatch, locking) costs more
** than the arithmetic: a plain partial-pivoting LU does better. Same
** factor layout and 1-based pivots as dgetrf, so either solve applies. */
#define SMALL_LU 24

static int small_factor(int n, double *a, int *ipiv) {
  int i, j, k, info = 0;
  for (k = 0; k < n; ++k) {
    int p = k;
    double big = fabs(a[(size_t)k * n + k]);
    for (i = k + 1; i < n; ++i)
      if (fabs(a[(size_t)k * n + i]) > big) big = fabs(a[(size_t)k * n + i]), p = i;
    ipiv[k] = p + 1;
    if (big == 0) { if (!info) info = k + 1; continue; }
    if (p != k)
      for (j = 0; j < n; ++j) {
        double tmp = a[(size_t)j * n + k];
        a[(size_t)j * n + k] = a[(size_t)j * n + p];
        a[(size_t)j * n + p] = tmp;
      }
    for (i = k + 1; i < n; ++i) a[(size_t)k * n + i] /= a[(size_t)k * n + k];
    for (j = k + 1; j < n; ++j) {
      double akj = a[(size_t)j * n + k];
      if (akj == 0) continue;
      for (i = k + 1; i < n; ++i) a[(size_t)j * n + i] -= a[(size_t)k * n + i] * akj;
    }
  }
  return info;
}

/* Right-hand sides b (nrhs columns of n) against a small factorisation,
** every substitution step applied to all of them in turn: the columns'
** chains are independent, so their latencies overlap (one column at a
** time, a 3 x 3 solve's chain of dependent operations and divisions
** bounded the Cauer's stages). Each column gets the operations of a
** solve of its own, in the same order. */
static void small_solve(int n, const double *restrict lu, const int *ipiv, double *restrict b, int nrhs, int trans) {
  int i, j, r;
  const size_t N = (size_t)n;
  if (!trans) {
    for (i = 0; i < n; ++i) {
      int p = ipiv[i] - 1;
      if (p != i)
        for (r = 0; r < nrhs; ++r) { double t = b[r * N + i]; b[r * N + i] = b[r * N + p]; b[r * N + p] = t; }
    }
    for (j = 0; j < n; ++j)           /* L y = P b (unit diagonal) */
      for (i = j + 1; i < n; ++i) {
        const double l = lu[j * N + i];
        for (r = 0; r < nrhs; ++r) b[r * N + i] -= l * b[r * N + j];
      }
    for (j = n - 1; j >= 0; --j) {    /* U x = y */
      for (r = 0; r < nrhs; ++r) b[r * N + j] /= lu[j * N + j];
      for (i = 0; i < j; ++i) {
        const double u = lu[j * N + i];
        for (r = 0; r < nrhs; ++r) b[r * N + i] -= u * b[r * N + j];
      }
    }
  } else {
    for (j = 0; j < n; ++j) {         /* U^T y = b */
      for (i = 0; i < j; ++i) {
        const double u = lu[j * N + i];
        for (r = 0; r < nrhs; ++r) b[r * N + j] -= u * b[r * N + i];
      }
      for (r = 0; r < nrhs; ++r) b[r * N + j] /= lu[j * N + j];
    }
    for (j = n - 1; j >= 0; --j)      /* L^T x = y */
      for (i = j + 1; i < n; ++i) {
        const double l = lu[j * N + i];
        for (r = 0; r < nrhs; ++r) b[r * N + j] -= l * b[r * N + i];
      }
    for (i = n - 1; i >= 0; --i) {
      int p = ipiv[i] - 1;
      if (p != i)
        for (r = 0; r < nrhs; ++r) { double t = b[r * N + i]; b[r * N + i] = b[r * N + p]; b[r * N + p] = t; }
    }
  }
}

/* The LU factorisation's info: 0, or k > 0 where pivot k is zero. */
static int factor_info(int n, double *a, int *ipiv) {
  if (n == 0) return 0;
  if (n <= SMALL_LU) return small_factor(n, a, ipiv);
  return (int)LAPACKE_dgetrf_work(LAPACK_COL_MAJOR, n, n, a, n, ipiv);
}

int salta__lu_factor(int n, double *a, int *ipiv, char *err) {
  int info = factor_info(n, a, ipiv);
  if (info == 0) return SALTA_OK;
  return salta__fail(err, SALTA_ESOLVER, "a %d x %d matrix is singular (LU pivot %d is zero)", n, n, info);
}

void salta__lu_solve(int n, const double *lu, const int *ipiv, double *b, int nrhs, int trans) {
  if (n == 0) return;
  if (n <= SMALL_LU) {
    small_solve(n, lu, ipiv, b, nrhs, trans);
    return;
  }
  /* dgetrs fails only on arguments that are wrong by construction here */
  LAPACKE_dgetrs_work(LAPACK_COL_MAJOR, trans ? 'T' : 'N', n, nrhs, lu, n, ipiv, b, n);
}

static lapack_content *content(SUNLinearSolver S) { return S->content; }

static SUNLinearSolver_Type ls_type(SUNLinearSolver S) { (void)S; return SUNLINEARSOLVER_DIRECT; }
static SUNLinearSolver_ID ls_id(SUNLinearSolver S) { (void)S; return SUNLINEARSOLVER_CUSTOM; }
static int ls_initialize(SUNLinearSolver S) { content(S)->last_flag = 0; return SUNLS_SUCCESS; }

static int ls_setup(SUNLinearSolver S, SUNMatrix A) {
  lapack_content *c = content(S);
  int info = factor_info(c->n, SM_DATA_D(A), c->ipiv);
  c->last_flag = info;
  /* a singular matrix is recoverable: IDAS retries with a smaller step */
  return info == 0 ? SUNLS_SUCCESS : (info > 0 ? SUNLS_LUFACT_FAIL : SUNLS_PACKAGE_FAIL_UNREC);
}

static int ls_solve(SUNLinearSolver S, SUNMatrix A, N_Vector x, N_Vector b, sunrealtype tol) {
  lapack_content *c = content(S);
  sunrealtype *xd = N_VGetArrayPointer(x);
  (void)tol;
  N_VScale(1.0, b, x);
  salta__lu_solve(c->n, SM_DATA_D(A), c->ipiv, xd, 1, 0);
  c->last_flag = 0;
  return SUNLS_SUCCESS;
}

static sunindextype ls_lastflag(SUNLinearSolver S) { return content(S)->last_flag; }

static int ls_free(SUNLinearSolver S) {
  if (!S) return SUNLS_SUCCESS;
  if (S->content) {
    free(content(S)->ipiv);
    free(S->content);
    S->content = NULL;
  }
  SUNLinSolFreeEmpty(S);
  return SUNLS_SUCCESS;
}

SUNLinearSolver salta__lapack_dense(int n, SUNContext ctx) {
  SUNLinearSolver S = SUNLinSolNewEmpty(ctx);
  lapack_content *c;
  if (!S) return NULL;
  S->ops->gettype = ls_type;
  S->ops->getid = ls_id;
  S->ops->initialize = ls_initialize;
  S->ops->setup = ls_setup;
  S->ops->solve = ls_solve;
  S->ops->lastflag = ls_lastflag;
  S->ops->free = ls_free;
  c = calloc(1, sizeof *c);
  if (c) c->ipiv = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
  if (!c || !c->ipiv) {
    if (c) free(c);
    SUNLinSolFreeEmpty(S);
    return NULL;
  }
  c->n = n;
  S->content = c;
  return S;
}
