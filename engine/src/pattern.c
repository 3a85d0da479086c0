/*
** pattern.c -- CSC patterns from the compile-time Jacobian patterns: the
** IDAS iteration matrix's, one kernel's; and grouping by a key.
*/
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "pattern.h"
#include "salta.h"

typedef struct entry { int col, row; } entry;

static int cmp_entry(const void *a, const void *b) {
  const entry *x = a, *y = b;
  if (x->col != y->col) return x->col < y->col ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

static const salta_sparse_def *block(const salta_model_def *d, int b, int *row0, int *col0) {
  *row0 = (b == SALTA_BLK_GX || b == SALTA_BLK_GZ) ? d->nx : 0;
  *col0 = (b == SALTA_BLK_FZ || b == SALTA_BLK_GZ) ? d->nx : 0;
  switch (b) {
    case SALTA_BLK_FX: return &d->f.d[SALTA_WRT_X];
    case SALTA_BLK_FZ: return &d->f.d[SALTA_WRT_Z];
    case SALTA_BLK_GX: return &d->g.d[SALTA_WRT_X];
    default: return &d->g.d[SALTA_WRT_Z];
  }
}

/* Index of (row, col) in the built pattern (it is there by construction). */
static int find(const salta__pattern *p, int row, int col) {
  int lo = p->colptr[col], hi = p->colptr[col + 1] - 1;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (p->rowind[mid] < row) lo = mid + 1; else hi = mid;
  }
  return lo;
}

int salta__pattern_build(salta__pattern *p, const salta_model_def *d, char *err) {
  int b, k, m = d->nx, n = d->nx + d->nz, row0, col0, j;
  entry *e;
  memset(p, 0, sizeof *p);
  p->n = n;
  for (b = 0; b < SALTA_NBLK; ++b) m += block(d, b, &row0, &col0)->nnz;
  e = malloc(sizeof *e * (size_t)(m + 1));
  if (!e) return salta__fail(err, SALTA_EMEM, "out of memory");
  m = 0;
  for (k = 0; k < d->nx; ++k) e[m].col = e[m].row = k, ++m;
  for (b = 0; b < SALTA_NBLK; ++b) {
    const salta_sparse_def *s = block(d, b, &row0, &col0);
    for (k = 0; k < s->nnz; ++k) e[m].row = row0 + s->row[k], e[m].col = col0 + s->col[k], ++m;
  }
  qsort(e, (size_t)m, sizeof *e, cmp_entry);
  p->colptr = calloc((size_t)n + 1, sizeof(int));
  p->rowind = malloc(sizeof(int) * (size_t)(m + 1));
  p->diag = malloc(sizeof(int) * (size_t)(d->nx + 1));
  if (!p->colptr || !p->rowind || !p->diag) {
    free(e);
    salta__pattern_free(p);
    return salta__fail(err, SALTA_EMEM, "out of memory");
  }
  for (k = 0; k < m; ++k) {
    if (k > 0 && e[k].col == e[k - 1].col && e[k].row == e[k - 1].row) continue;
    p->rowind[p->nnz++] = e[k].row;
    p->colptr[e[k].col + 1]++;
  }
  free(e);
  for (j = 0; j < n; ++j) p->colptr[j + 1] += p->colptr[j];
  for (k = 0; k < d->nx; ++k) p->diag[k] = find(p, k, k);
  for (b = 0; b < SALTA_NBLK; ++b) {
    const salta_sparse_def *s = block(d, b, &row0, &col0);
    p->map[b] = malloc(sizeof(int) * (size_t)(s->nnz + 1));
    if (!p->map[b]) {
      salta__pattern_free(p);
      return salta__fail(err, SALTA_EMEM, "out of memory");
    }
    for (k = 0; k < s->nnz; ++k) p->map[b][k] = find(p, row0 + s->row[k], col0 + s->col[k]);
  }
  return SALTA_OK;
}

int salta__pattern_of_kernel(salta__pattern *p, const salta_sparse_def *sp, int n, char *err) {
  int k;
  memset(p, 0, sizeof *p);
  p->n = n, p->nnz = sp->nnz;
  p->colptr = calloc((size_t)n + 1, sizeof(int));
  p->rowind = malloc(sizeof(int) * ((size_t)sp->nnz + 1));
  if (!p->colptr || !p->rowind) return salta__fail(err, SALTA_EMEM, "out of memory");
  for (k = 0; k < sp->nnz; ++k) p->colptr[sp->col[k] + 1]++, p->rowind[k] = sp->row[k];
  for (k = 0; k < n; ++k) p->colptr[k + 1] += p->colptr[k];
  return SALTA_OK;
}

int salta__group_by(const int *key, int n, int nkeys, int **ptr, int **items, char *err) {
  int *pt = calloc((size_t)nkeys + 2, sizeof(int)), *it = malloc(sizeof(int) * ((size_t)n + 1)), i, k;
  *ptr = pt, *items = it;
  if (!pt || !it) return salta__fail(err, SALTA_EMEM, "out of memory");
  for (i = 0; i < n; ++i)
    if (key[i] >= 0 && key[i] < nkeys) pt[key[i] + 2]++;
  for (k = 0; k < nkeys; ++k) pt[k + 2] += pt[k + 1];
  for (i = 0; i < n; ++i)
    if (key[i] >= 0 && key[i] < nkeys) it[pt[key[i] + 1]++] = i;
  return SALTA_OK;
}

void salta__pattern_free(salta__pattern *p) {
  int b;
  free(p->colptr);
  free(p->rowind);
  free(p->diag);
  for (b = 0; b < SALTA_NBLK; ++b) free(p->map[b]);
  memset(p, 0, sizeof *p);
}
