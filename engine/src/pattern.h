/*
** pattern.h -- the fixed sparsity of the IDAS iteration matrix
** J = dF/dw + c_j dF/dw' for F = [x' - f; g] (internal).
*/
#ifndef SALTA_PATTERN_H
#define SALTA_PATTERN_H

#include "salta_kernel.h"

/* Blocks of dF/dw, in the order the maps below use. */
enum { SALTA_BLK_FX, SALTA_BLK_FZ, SALTA_BLK_GX, SALTA_BLK_GZ, SALTA_NBLK };

typedef struct salta__pattern {
  int n;            /* nx + nz */
  int nnz;
  int *colptr;      /* n + 1 */
  int *rowind;      /* nnz, rows ascending within a column */
  int *map[SALTA_NBLK]; /* kernel entry k of block b -> index into the values */
  int *diag;        /* nx: index of the (i, i) entry, where c_j goes */
} salta__pattern;

/* Builds the union pattern of the four blocks and the x' diagonal. */
int salta__pattern_build(salta__pattern *p, const salta_model_def *d);
void salta__pattern_free(salta__pattern *p);

#endif
