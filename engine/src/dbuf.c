/*
** dbuf.c -- a growable array of doubles.
*/
#include <stdlib.h>
#include <string.h>

#include "dbuf.h"

double *salta__dbuf_grow(salta__dbuf *b, size_t n) {
  double *at;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    double *nv;
    while (cap < b->n + n) cap *= 2;
    nv = realloc(b->v, cap * sizeof(double));
    if (!nv) return NULL;
    b->v = nv;
    b->cap = cap;
  }
  at = b->v + b->n;
  b->n += n;
  return at;
}

int salta__dbuf_push(salta__dbuf *b, const double *v, size_t n) {
  double *at = salta__dbuf_grow(b, n);
  if (!at) return -1;
  if (n && v) memcpy(at, v, n * sizeof(double));
  else if (n) memset(at, 0, n * sizeof(double));
  return 0;
}

void salta__dbuf_free(salta__dbuf *b) {
  free(b->v);
  memset(b, 0, sizeof *b);
}
