/*
** linsol.h -- dense linear algebra on LAPACK (internal).
*/
#ifndef SALTA_LINSOL_H
#define SALTA_LINSOL_H

#include <sundials/sundials_linearsolver.h>
#include <sundials/sundials_context.h>

/* A direct SUNLinearSolver on LAPACK dgetrf/dgetrs for SUNDenseMatrix
** (Debian's SUNDIALS has no LAPACK solver). Returns NULL on failure. */
SUNLinearSolver salta__lapack_dense(int n, SUNContext ctx);

/* LU-factors the column-major n x n matrix a in place: SALTA_OK, or
** SALTA_ESOLVER when it is singular (a zero pivot; the factors are then
** of no use). */
int salta__lu_factor(int n, double *a, int *ipiv, char *err);
/* Solves with the factors from salta__lu_factor; b (n x nrhs) is
** overwritten. */
void salta__lu_solve(int n, const double *lu, const int *ipiv, double *b, int nrhs, int trans);

#endif
