/*
** tol.c -- the finiteness test over many values (see tol.h).
*/
#include "tol.h"
#include "wide.h"

SALTA__WIDE int salta__all_finite_many(const double *v, size_t n) {
  const uint64_t exp_bits = 0x7ff0000000000000u;
  uint64_t any = 0, b;
  size_t k;
  for (k = 0; k < n; ++k) {
    memcpy(&b, v + k, sizeof b);
    any |= ((~b & exp_bits) - 1) >> 63;
  }
  return any == 0;
}
