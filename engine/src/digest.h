/*
** digest.h -- streaming BLAKE2b digests as hex text (internal).
*/
#ifndef SALTA_DIGEST_H
#define SALTA_DIGEST_H

#include <sodium.h>
#include <stddef.h>

typedef struct salta__digest {
  crypto_generichash_state state;
  size_t nbytes;                  /* digest length: 16..64 bytes */
} salta__digest;

/* 0, or -1 (a length out of range, or no libsodium). */
int salta__digest_init(salta__digest *d, size_t nbytes);
int salta__digest_update(salta__digest *d, const void *data, size_t n);
/* Writes 2 * nbytes hex digits and a NUL into hex; the state is spent. */
int salta__digest_hex(salta__digest *d, char *hex);

#endif
