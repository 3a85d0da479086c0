/*
** digest.c -- BLAKE2b digests (libsodium's crypto_generichash): the keys
** and checksums of compiled code and the hashes of generated source. A
** cryptographic digest, so that nobody can craft a model whose key names
** another model's library.
*/
#include <sodium.h>
#include <stdint.h>

#include "digest.h"
#include "errors.h"
#include "salta.h"

static void to_hex(const unsigned char *bytes, size_t n, char *hex) {
  static const char digits[] = "0123456789abcdef";
  size_t i;
  for (i = 0; i < n; ++i) {
    hex[2 * i] = digits[bytes[i] >> 4];
    hex[2 * i + 1] = digits[bytes[i] & 15];
  }
  hex[2 * n] = '\0';
}

static int sodium_failed(char *err) { return salta__fail(err, SALTA_EMEM, "libsodium's BLAKE2b failed"); }

int salta__digest_init(salta__digest *d, size_t nbytes, char *err) {
  if (nbytes < crypto_generichash_BYTES_MIN || nbytes > crypto_generichash_BYTES_MAX)
    return salta__fail(err, SALTA_EINPUT, "a digest of %zu bytes (BLAKE2b gives %d to %d)", nbytes,
                       (int)crypto_generichash_BYTES_MIN, (int)crypto_generichash_BYTES_MAX);
  if (sodium_init() < 0) return sodium_failed(err);
  d->nbytes = nbytes;
  return crypto_generichash_init(&d->state, NULL, 0, nbytes) ? sodium_failed(err) : SALTA_OK;
}

int salta__digest_update(salta__digest *d, const void *data, size_t n, char *err) {
  return crypto_generichash_update(&d->state, data, n) ? sodium_failed(err) : SALTA_OK;
}

int salta__digest_hex(salta__digest *d, char *hex, char *err) {
  unsigned char out[crypto_generichash_BYTES_MAX];
  if (crypto_generichash_final(&d->state, out, d->nbytes) != 0) return sodium_failed(err);
  to_hex(out, d->nbytes, hex);
  return SALTA_OK;
}

int salta_hash(const void *data, size_t n, char hex[SALTA_HASH_HEX + 1]) {
  salta__digest d;
  int st;
  if (!hex || (!data && n)) return SALTA_EINPUT;
  if ((st = salta__digest_init(&d, SALTA_HASH_HEX / 2, NULL)) || (st = salta__digest_update(&d, data, n, NULL)) ||
      (st = salta__digest_hex(&d, hex, NULL)))
    return st;
  return SALTA_OK;
}
