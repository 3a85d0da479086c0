/*
** arrays.h -- the arrays of a struct, each an allocation of its own, made
** and released from one list (internal), so that a new array is one line
** in that list and nothing is carved from a block by hand-summed offsets.
**
**   salta__array list[] = {SALTA__ARRAY(s->w, n), SALTA__ARRAY(s->piv, n)};
**   if (salta__arrays_alloc(list, SALTA__COUNT(list))) ...   every one, zeroed, or none
**   salta__arrays_free(list, SALTA__COUNT(list));            frees each, sets it to NULL
*/
#ifndef SALTA_ARRAYS_H
#define SALTA_ARRAYS_H

#include <stddef.h>

/* One array: the address of its pointer, its length and element size. */
typedef struct salta__array {
  void *ptr;
  size_t n, size;
} salta__array;

#define SALTA__ARRAY(p, len) {(void *)&(p), (size_t)(len), sizeof *(p)}
#define SALTA__COUNT(list) (sizeof(list) / sizeof *(list))

/* Allocates every array of the list, zeroed (at least one element each, so
** that an empty array is a valid pointer): SALTA_OK, or SALTA_EMEM with
** every one NULL (out of memory, or a length whose size in bytes does not
** fit a size_t). */
int salta__arrays_alloc(const salta__array *list, size_t count);
/* Frees every array of the list and sets its pointer to NULL. */
void salta__arrays_free(const salta__array *list, size_t count);

#endif
