/*
** dbuf.h -- a growable array of doubles (internal).
*/
#ifndef SALTA_DBUF_H
#define SALTA_DBUF_H

#include <stddef.h>

typedef struct salta__dbuf { double *v; size_t n, cap; } salta__dbuf;

/* Appends n values (v may be NULL: zeros); 0, or -1 when out of memory. */
int salta__dbuf_push(salta__dbuf *b, const double *v, size_t n);
/* The address of n new values at the end (uninitialised), or NULL. */
double *salta__dbuf_grow(salta__dbuf *b, size_t n);
void salta__dbuf_free(salta__dbuf *b);

#endif
