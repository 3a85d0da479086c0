/*
** matching.c -- maximum bipartite matching by augmenting paths (Kuhn),
** with an explicit stack so that long paths cannot overflow the C stack.
*/
#include <stdlib.h>

#include "arrays.h"
#include "errors.h"
#include "matching.h"
#include "salta.h"

/* Looks for an augmenting path from free row r0; flips it if found. */
static int augment(int r0, const int *ptr, const int *adj, int *col_of_row, int *row_of_col, int *seen,
                   int stamp, int *stack_row, int *stack_pos) {
  int depth = 0;
  stack_row[0] = r0, stack_pos[0] = ptr[r0];
  while (depth >= 0) {
    int r = stack_row[depth];
    if (stack_pos[depth] == ptr[r + 1]) { --depth; continue; }
    {
      int c = adj[stack_pos[depth]++];
      if (seen[c] == stamp) continue;
      seen[c] = stamp;
      if (row_of_col[c] < 0) {   /* a free column: flip the path back to r0 */
        for (; depth >= 0; --depth) {
          int rr = stack_row[depth], prev = col_of_row[rr];
          col_of_row[rr] = c;
          row_of_col[c] = rr;
          c = prev;
        }
        return 1;
      }
      ++depth;
      stack_row[depth] = row_of_col[c], stack_pos[depth] = ptr[row_of_col[c]];
    }
  }
  return 0;
}

int salta__max_matching(int nrows, int ncols, int nnz, const int *row, const int *col, int *col_of_row,
                        int *row_of_col, int *size, char *err) {
  int *ptr, *adj, *seen, *stack, k, r, st;
  salta__array list[] = {SALTA__ARRAY(ptr, (size_t)nrows + 2), SALTA__ARRAY(adj, (size_t)nnz),
                         SALTA__ARRAY(seen, (size_t)ncols), SALTA__ARRAY(stack, 2 * ((size_t)nrows + 1))};
  if ((st = salta__arrays_alloc(list, SALTA__COUNT(list)))) return salta__fail(err, st, "out of memory");
  for (k = 0; k < nnz; ++k) ptr[row[k] + 2]++;
  for (r = 0; r < nrows; ++r) ptr[r + 2] += ptr[r + 1];
  for (k = 0; k < nnz; ++k) adj[ptr[row[k] + 1]++] = col[k];
  for (r = 0; r < nrows; ++r) col_of_row[r] = -1;
  for (k = 0; k < ncols; ++k) row_of_col[k] = -1, seen[k] = -1;
  *size = 0;
  for (r = 0; r < nrows; ++r)
    *size += augment(r, ptr, adj, col_of_row, row_of_col, seen, r, stack, stack + nrows + 1);
  salta__arrays_free(list, SALTA__COUNT(list));
  return SALTA_OK;
}
