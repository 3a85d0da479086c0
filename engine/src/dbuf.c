/*
** dbuf.c -- a growable array of doubles.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dbuf.h"
#include "errors.h"
#include "salta.h"

/* The address of n new values at the end (uninitialised), or NULL. */
static double *grow(salta__dbuf *b, size_t n) {
  double *at;
  if (n > SIZE_MAX / sizeof(double) / 2 - b->n) return NULL;   /* sizes beyond memory */
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

double *salta__dbuf_extend(salta__dbuf *b, size_t n, char *err) {
  double *at = grow(b, n);
  if (!at) salta__fail(err, SALTA_EMEM, "out of memory");
  return at;
}

int salta__dbuf_push(salta__dbuf *b, const double *v, size_t n, char *err) {
  double *at = salta__dbuf_extend(b, n, err);
  if (!at) return SALTA_EMEM;
  if (n && v) memcpy(at, v, n * sizeof(double));
  else if (n) memset(at, 0, n * sizeof(double));
  return SALTA_OK;
}

void salta__dbuf_free(salta__dbuf *b) {
  free(b->v);
  memset(b, 0, sizeof *b);
}
