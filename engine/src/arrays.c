/*
** arrays.c -- the arrays of a struct, each an allocation of its own (see
** arrays.h).
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "salta.h"

/* The pointer of array a, through memcpy: a is a double *, an int *, ... */
static void set_ptr(const salta__array *a, void *value) { memcpy(a->ptr, &value, sizeof value); }

static void *get_ptr(const salta__array *a) {
  void *value;
  memcpy(&value, a->ptr, sizeof value);
  return value;
}

int salta__arrays_alloc(const salta__array *list, size_t count) {
  size_t k;
  for (k = 0; k < count; ++k) set_ptr(&list[k], NULL);
  for (k = 0; k < count; ++k) {
    size_t n = list[k].n > 0 ? list[k].n : 1;
    void *block = n <= SIZE_MAX / list[k].size ? calloc(n, list[k].size) : NULL;
    if (!block) {
      salta__arrays_free(list, count);
      return SALTA_EMEM;
    }
    set_ptr(&list[k], block);
  }
  return SALTA_OK;
}

void salta__arrays_free(const salta__array *list, size_t count) {
  size_t k;
  for (k = 0; k < count; ++k) {
    free(get_ptr(&list[k]));
    set_ptr(&list[k], NULL);
  }
}
