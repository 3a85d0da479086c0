/*
** cache.c -- the private folder of compiled code. Trust: the folder must
** belong to this user and be writable by nobody else (it is made with mode
** 0700; there is no shared fallback folder); a file in it is used only
** when this user owns it, nobody else can write it and it matches the
** BLAKE2b-512 checksum written beside it when it was built. Files are
** opened by descriptor, relative to the folder's, never through a symlink.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "digest.h"
#include "errors.h"

#define SUM_BYTES 64                     /* BLAKE2b-512, as coreutils' b2sum */
#define SUM_HEX (2 * SUM_BYTES)
#define STALE_BUILD_SECONDS 86400        /* a build folder older than this was abandoned */

/* ---- the cache folder ---------------------------------------------------- */

/* Where no home exists: a folder of this process's own, made once. */
static char private_dir[SALTA__PATH_SIZE];
static once_flag private_once = ONCE_FLAG_INIT;

static void make_private_dir(void) {
  const char *tmp = getenv("TMPDIR");
  char buf[SALTA__PATH_SIZE];
  int n = snprintf(buf, sizeof buf, "%s/salta-cache-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
  if (n > 0 && (size_t)n < sizeof buf && mkdtemp(buf)) memcpy(private_dir, buf, (size_t)n + 1);
}

static int default_cache_dir(char *buf, size_t size) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && xdg[0]) n = snprintf(buf, size, "%s/salta", xdg);
  else if (home && home[0]) n = snprintf(buf, size, "%s/.cache/salta", home);
  else {
    call_once(&private_once, make_private_dir);
    if (!private_dir[0]) return -1;
    n = snprintf(buf, size, "%s", private_dir);
  }
  return (n > 0 && (size_t)n < size) ? 0 : -1;
}

/* mkdir -p, each folder it makes private (0700) */
static int make_dirs(const char *path) {
  char buf[SALTA__PATH_SIZE];
  size_t i, n = strlen(path);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, path, n + 1);
  for (i = 1; i <= n; ++i) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char c = buf[i];
      buf[i] = '\0';
      if (mkdir(buf, 0700) != 0 && errno != EEXIST) return -1;
      buf[i] = c;
    }
  }
  return 0;
}

/* Whether an opened file or folder is this user's and writable by no one
** else; a reason for the message otherwise. */
static const char *untrusted(const struct stat *st) {
  if (st->st_uid != geteuid()) return "belongs to another user";
  if (st->st_mode & (S_IWGRP | S_IWOTH)) return "is writable by group or others";
  return NULL;
}

void salta__cache_close(salta__cache *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

int salta__cache_open_dir(salta__cache *c, const char *cache_dir, const char *name, char *err) {
  struct stat st;
  const char *why;
  c->fd = -1;
  if (cache_dir) snprintf(c->dir, sizeof c->dir, "%s", cache_dir);
  else if (default_cache_dir(c->dir, sizeof c->dir))
    return salta__fail(err, SALTA_EJIT, "model '%s': no cache folder (no home, and no private folder could be made)", name);
  if (make_dirs(c->dir) || (c->fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fstat(c->fd, &st))
    return salta__cache_close(c), salta__fail(err, SALTA_EJIT, "model '%s': cannot open the cache folder %s: %s",
                                              name, c->dir, strerror(errno));
  if ((why = untrusted(&st)) != NULL) {
    salta__cache_close(c);
    return salta__fail(err, SALTA_EJIT,
                       "model '%s': the cache folder %s %s (owner uid %ld, mode %03o): refusing to build or load "
                       "code there; make it private (chmod 700) or choose another cache_dir",
                       name, c->dir, why, (long)st.st_uid, (unsigned)(st.st_mode & 0777));
  }
  return SALTA_OK;
}

int salta__cache_open(salta__cache *c, const char *src, const char *symbol, const char *const *flags,
                      const char *cache_dir, const char *name, char *err) {
  salta__digest d;
  int st, i, bad;
  if ((st = salta__cache_open_dir(c, cache_dir, name, err))) return st;
  bad = salta__digest_init(&d, SALTA_HASH_HEX / 2, NULL) || salta__digest_update(&d, symbol, strlen(symbol) + 1, NULL);
  for (i = 0; flags[i] && !bad; ++i) bad = salta__digest_update(&d, flags[i], strlen(flags[i]) + 1, NULL);
  if (bad || salta__digest_update(&d, src, strlen(src), NULL) || salta__digest_hex(&d, c->key, NULL)) {
    salta__cache_close(c);
    return salta__fail(err, SALTA_EJIT, "model '%s': cannot compute the cache key (libsodium)", name);
  }
  return SALTA_OK;
}

/* ---- files inside the cache, by descriptor ------------------------------- */

int salta__cache_file(int dirfd, const char *key, const char *ext, int flags) {
  char name[SALTA_HASH_HEX + 8];
  snprintf(name, sizeof name, "%s%s", key, ext);
  return openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
}

/* The files of an entry: a library's, or a unit's. */
static const char *const entry_ext[] = {".so", ".sum", ".c", ".o", ".osum"};
#define ENTRY_EXTS ((int)(sizeof entry_ext / sizeof entry_ext[0]))

void salta__cache_remove(int dirfd, const char *key) {
  char name[SALTA_HASH_HEX + 8];
  int i;
  for (i = 0; i < ENTRY_EXTS; ++i) {
    snprintf(name, sizeof name, "%s%s", key, entry_ext[i]);
    unlinkat(dirfd, name, 0);
  }
}

/* The BLAKE2b-512 checksum of an open file, from its start; with copy >= 0
** the bytes it read are written there too. */
static int fd_checksum(int fd, char hex[SUM_HEX + 1], int copy) {
  unsigned char buf[65536];
  salta__digest d;
  ssize_t n;
  if (lseek(fd, 0, SEEK_SET) < 0 || salta__digest_init(&d, SUM_BYTES, NULL)) return -1;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    if (salta__digest_update(&d, buf, (size_t)n, NULL) || (copy >= 0 && write(copy, buf, (size_t)n) != n)) return -1;
  return n < 0 || salta__digest_hex(&d, hex, NULL) ? -1 : 0;
}

/* Reads at most size-1 bytes of an open file into buf. */
void salta__cache_read_fd(int fd, char *buf, size_t size) {
  ssize_t n = fd >= 0 && lseek(fd, 0, SEEK_SET) == 0 ? read(fd, buf, size - 1) : 0;
  buf[n > 0 ? n : 0] = '\0';
}

/* Whether an open library or object f may be used: a regular file of this
** user's, writable by no one else, matching the checksum file KEY + sum_ext.
** With copy >= 0 its bytes are copied there while the checksum is taken. */
int salta__cache_trusted(int dirfd, const char *key, const char *sum_ext, int f, int copy) {
  char sum[SUM_HEX + 1], text[SUM_HEX + 2];
  struct stat st;
  int s, ok;
  if (fstat(f, &st) || !S_ISREG(st.st_mode) || untrusted(&st)) return 0;
  if ((s = salta__cache_file(dirfd, key, sum_ext, O_RDONLY)) < 0) return 0;
  ok = fstat(s, &st) == 0 && S_ISREG(st.st_mode) && !untrusted(&st);
  salta__cache_read_fd(s, text, sizeof text);
  close(s);
  return ok && fd_checksum(f, sum, copy) == 0 && strncmp(text, sum, SUM_HEX) == 0 &&
         (text[SUM_HEX] == '\0' || text[SUM_HEX] == ' ' || text[SUM_HEX] == '\n');
}

/* 1: a trusted library is there (so holds it open); 0: no library; -1: a
** library that must not be loaded (damaged, foreign, or its checksum
** missing). */
int salta__cache_state(const salta__cache *c, int *so) {
  *so = salta__cache_file(c->fd, c->key, ".so", O_RDONLY);
  if (*so < 0) return errno == ENOENT ? 0 : -1;
  if (salta__cache_trusted(c->fd, c->key, ".sum", *so, -1)) return 1;
  close(*so);
  *so = -1;
  return -1;
}

/* ---- the size cap ------------------------------------------------------------ */

/* One file of an entry, then (merged) one entry: its size and the time
** of its last use (its library's or object's mtime, touched at each hit). */
typedef struct entry { char key[SALTA_HASH_HEX + 1]; off_t size; time_t used; } entry;

static int is_key(const char *name) {
  int i;
  for (i = 0; i < SALTA_HASH_HEX; ++i)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
  return name[SALTA_HASH_HEX] == '.';
}

static int by_key(const void *a, const void *b) { return strcmp(((const entry *)a)->key, ((const entry *)b)->key); }

static int older(const void *a, const void *b) {
  const entry *x = a, *y = b;
  return (x->used > y->used) - (x->used < y->used);
}

/* Empties and removes a build folder (open as fd, which this closes): its
** files and the empty folders the script made. */
void salta__cache_remove_folder(int dirfd, const char *name, int fd) {
  int fd2 = dup(fd);
  DIR *d = fd2 >= 0 ? fdopendir(fd2) : NULL;
  struct dirent *de;
  if (!d && fd2 >= 0) close(fd2);
  while (d && (de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    if (unlinkat(fd, de->d_name, 0) != 0) unlinkat(fd, de->d_name, AT_REMOVEDIR);
  }
  if (d) closedir(d);
  close(fd);
  unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* A build folder abandoned by a process that died while compiling. */
static void remove_stale_build(int dirfd, const char *name, const struct stat *st) {
  int fd;
  if (strncmp(name, "build-", 6) != 0 || !S_ISDIR(st->st_mode) || time(NULL) - st->st_mtime < STALE_BUILD_SECONDS)
    return;
  if ((fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) return;
  salta__cache_remove_folder(dirfd, name, fd);
}

/* The entries of the cache (their files merged by key) into *list; their
** total size. Build folders abandoned long ago go on the way. */
static long long list_entries(int dirfd, entry **list, size_t *n) {
  int fd = dup(dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *de;
  size_t capn = 0, i, k;
  long long total = 0;
  *list = NULL, *n = 0;
  if (!d) {
    if (fd >= 0) close(fd);
    return 0;
  }
  while ((de = readdir(d)) != NULL) {
    struct stat st;
    const char *ext = de->d_name + SALTA_HASH_HEX;
    if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!is_key(de->d_name)) {
      remove_stale_build(dirfd, de->d_name, &st);
      continue;
    }
    if (*n == capn) {
      entry *nl = realloc(*list, sizeof *nl * (capn = capn ? 2 * capn : 256));
      if (!nl) break;
      *list = nl;
    }
    memcpy((*list)[*n].key, de->d_name, SALTA_HASH_HEX);
    (*list)[*n].key[SALTA_HASH_HEX] = '\0';
    (*list)[*n].size = st.st_size;
    (*list)[*n].used = strcmp(ext, ".so") == 0 || strcmp(ext, ".o") == 0 ? st.st_mtime : 0;
    total += st.st_size;
    ++*n;
  }
  closedir(d);
  if (*n == 0) return total;
  qsort(*list, *n, sizeof **list, by_key);
  for (i = 1, k = 0; i < *n; ++i) {
    entry *e = &(*list)[k], *f = &(*list)[i];
    if (strcmp(e->key, f->key) == 0) {
      e->size += f->size;
      if (f->used > e->used) e->used = f->used;
    } else {
      (*list)[++k] = *f;
    }
  }
  *n = k + 1;
  return total;
}

void salta__cache_cap(int dirfd, const char *keep) {
  const char *env = getenv("SALTA_CACHE_MAX_MB");
  long long cap = (env && env[0] ? atoll(env) : 256) * 1024 * 1024, total;
  entry *list;
  size_t n, i;
  total = list_entries(dirfd, &list, &n);
  if (n > 0) qsort(list, n, sizeof *list, older);
  for (i = 0; i < n && total > cap; ++i) {
    if (strcmp(list[i].key, keep) == 0) continue;
    salta__cache_remove(dirfd, list[i].key);
    total -= list[i].size;
  }
  free(list);
}
