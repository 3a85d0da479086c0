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

/* SALTA_OK, SALTA_EINPUT (a length out of range) or SALTA_EMEM (libsodium
** failed), with the message in err. */
int salta__digest_init(salta__digest *d, size_t nbytes, char *err);
int salta__digest_update(salta__digest *d, const void *data, size_t n, char *err);
/* Writes 2 * nbytes hex digits and a NUL into hex; the state is spent. */
int salta__digest_hex(salta__digest *d, char *hex, char *err);

#endif
