/*
** matching.h -- a maximum matching of the rows to the columns of a sparsity
** pattern (internal): the structural rank of a Jacobian, e.g. whether dg/dz
** can be nonsingular at all (an index-1 DAE).
*/
#ifndef SALTA_MATCHING_H
#define SALTA_MATCHING_H

/* Matches rows to columns over the nnz entries (row[k], col[k]) of an
** nrows x ncols pattern by augmenting paths. Fills col_of_row (nrows) and
** row_of_col (ncols) with the partner or -1, and *size with the
** matching's size: SALTA_OK, or SALTA_EMEM. */
int salta__max_matching(int nrows, int ncols, int nnz, const int *row, const int *col, int *col_of_row,
                        int *row_of_col, int *size, char *err);

#endif
