/*
** pattern.h -- fixed sparsity (internal): the IDAS iteration matrix
** J = dF/dw + c_j dF/dw' for F = [x' - f; g], one square kernel's CSC
** pattern, and items grouped by a key.
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

/* Builds the union pattern of the four blocks and the x' diagonal:
** SALTA_OK, or SALTA_EMEM. */
int salta__pattern_build(salta__pattern *p, const salta_model_def *d, char *err);
/* The CSC pattern of the n x n kernel sp (its entries are column-major,
** so value k of the kernel is value k of the pattern); no map, no diag. */
int salta__pattern_of_kernel(salta__pattern *p, const salta_sparse_def *sp, int n, char *err);
void salta__pattern_free(salta__pattern *p);

/* Groups the items 0 .. n-1 by key[i] (items whose key is outside
** [0, nkeys) are left out), in their order within a group: group k is
** (*items)[(*ptr)[k] .. (*ptr)[k + 1]). Allocates *ptr (nkeys + 2) and
** *items (n + 1), which the caller frees: SALTA_OK, or SALTA_EMEM. */
int salta__group_by(const int *key, int n, int nkeys, int **ptr, int **items, char *err);

#endif
