/*
** cache.h -- the private folder of compiled code (internal): opening it,
** its entries' files, trust in them, and its size cap. See cache.c.
*/
#ifndef SALTA_CACHE_H
#define SALTA_CACHE_H

#include <stddef.h>

#include "salta.h"

#define SALTA__PATH_SIZE 4096

/* An open cache: the folder (by descriptor: nothing re-resolves its path)
** and an entry's key. */
typedef struct salta__cache {
  int fd;
  char dir[SALTA__PATH_SIZE];
  char key[SALTA_HASH_HEX + 1];
} salta__cache;

/* Opens the cache folder (cache_dir; NULL: the default one), made private
** if missing. SALTA_OK, or SALTA_EJIT with the reason (naming the model)
** in err: no folder, or one that another user owns or others can write. */
int salta__cache_open_dir(salta__cache *c, const char *cache_dir, const char *name, char *err);
/* Opens it and keys the entry by the source, the symbol and the compiler's
** flags (a NULL-terminated list). */
int salta__cache_open(salta__cache *c, const char *src, const char *symbol, const char *const *flags,
                      const char *cache_dir, const char *name, char *err);
void salta__cache_close(salta__cache *c);

/* Opens the entry file KEY + ext in the folder dirfd, never through a
** symlink. */
int salta__cache_file(int dirfd, const char *key, const char *ext, int flags);
/* Removes every file of entry key (a library's or a unit's). */
void salta__cache_remove(int dirfd, const char *key);
/* Whether the open file f (KEY.so, KEY.o) may be used: a regular file of
** this user's, writable by no one else, matching the BLAKE2b-512 checksum
** in KEY + sum_ext. With copy >= 0 its bytes are copied there as they are
** checked. */
int salta__cache_trusted(int dirfd, const char *key, const char *sum_ext, int f, int copy);
/* c's library: 1, trusted (*so holds it open); 0, none; -1, one that must
** not be loaded (damaged, foreign, or its checksum missing). */
int salta__cache_state(const salta__cache *c, int *so);

/* Reads at most size-1 bytes of an open file into buf. */
void salta__cache_read_fd(int fd, char *buf, size_t size);
/* Empties and removes the build folder `name` of dirfd, open as fd (which
** this closes): its files and the empty folders a build made. */
void salta__cache_remove_folder(int dirfd, const char *name, int fd);
/* Evicts least recently used entries until the cache is under its cap
** (SALTA_CACHE_MAX_MB, default 256), never keep; removes build folders
** abandoned a day ago. Best effort. */
void salta__cache_cap(int dirfd, const char *keep);

#endif
