/*
** dbuf.h -- a growable array of doubles (internal).
*/
#ifndef SALTA_DBUF_H
#define SALTA_DBUF_H

#include <stddef.h>

typedef struct salta__dbuf { double *v; size_t n, cap; } salta__dbuf;

/* Appends n values (v may be NULL: zeros): SALTA_OK, or SALTA_EMEM. */
int salta__dbuf_push(salta__dbuf *b, const double *v, size_t n, char *err);
/* Appends n values left to the caller: their address, valid until the
** buffer grows again, or NULL (SALTA_EMEM, err set). */
double *salta__dbuf_extend(salta__dbuf *b, size_t n, char *err);
void salta__dbuf_free(salta__dbuf *b);

#endif
