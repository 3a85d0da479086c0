/*
** jit.c -- the cc backend: generated C compiled by the system compiler into
** a private content-addressed cache, then dlopen'ed.
**
** Each entry is a library (KEY.so), its BLAKE2b-512 checksum (KEY.sum) and
** its source (KEY.c), KEY being a BLAKE2b digest of the source. Trust:
**  - the folder must belong to this user and be writable by nobody else;
**    it is made with mode 0700, and there is no shared fallback folder;
**  - a library is loaded only when this user owns it and it matches the
**    checksum written beside it when it was built; anything else is
**    rebuilt, never loaded;
**  - every build works in a fresh mkdtemp folder inside the cache, its files
**    made with O_EXCL|O_NOFOLLOW, and lands by rename;
**  - the compiler reads the source from stdin, so a library's bytes depend
**    on the source alone: two builds of one model are identical.
** The cache is kept under a size cap (SALTA_CACHE_MAX_MB, default 256) by
** evicting the least recently used entries.
*/
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "errors.h"
#include "salta.h"

extern char **environ;

#define SUM_BYTES 64                     /* BLAKE2b-512, as coreutils' b2sum */
#define SUM_HEX (2 * SUM_BYTES)
#define PATH_SIZE 4096
#define STALE_BUILD_SECONDS 86400        /* a build folder older than this was abandoned */

struct salta_jit {
  void *dl;
  const salta_model_def *def;
  int cached;
  char err[SALTA_ERRMSG_SIZE];
};

int salta_jit_create(salta_jit **out) {
  if (!out) return SALTA_EINPUT;
  *out = calloc(1, sizeof **out);
  return *out ? SALTA_OK : SALTA_EMEM;
}

void salta_jit_free(salta_jit **jit) {
  if (!jit || !*jit) return;
  if ((*jit)->dl) dlclose((*jit)->dl);
  free(*jit);
  *jit = NULL;
}

const char *salta_jit_errmsg(const salta_jit *jit) { return jit ? jit->err : "no jit"; }
const salta_model_def *salta_jit_def(const salta_jit *jit) { return jit ? jit->def : NULL; }
int salta_jit_cached(const salta_jit *jit) { return jit ? jit->cached : 0; }

/* The compiler's flags, the same for foreground and background builds (the
** source comes on stdin: "-x c -"). Trigraphs are off (gnu11). */
static const char *const cc_flags[] = {"-O2", "-shared", "-fPIC", "-std=gnu11", "-x", "c", NULL};

static const char *cc_program(void) {
  const char *cc = getenv("CC");
  return cc && cc[0] ? cc : "cc";
}

/* ---- the cache folder ---------------------------------------------------- */

/* Where no home exists: a folder of this process's own, made once. */
static char private_dir[PATH_SIZE];
static once_flag private_once = ONCE_FLAG_INIT;

static void make_private_dir(void) {
  const char *tmp = getenv("TMPDIR");
  char buf[PATH_SIZE];
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
  char buf[PATH_SIZE];
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

/* An open cache: the folder (by descriptor: nothing below re-resolves its
** path) and the entry's key. */
typedef struct cache {
  int fd;
  char dir[PATH_SIZE];
  char key[SALTA_HASH_HEX + 1];
} cache;

static void cache_close(cache *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
}

/* Opens the cache folder (made if missing) and keys the entry by the source
** and the symbol. SALTA_OK, or SALTA_EJIT with the reason in err. */
static int cache_open(cache *c, const char *src, const char *symbol, const char *cache_dir,
                      const char *name, char *err) {
  salta__digest d;
  struct stat st;
  const char *why;
  c->fd = -1;
  if (cache_dir) snprintf(c->dir, sizeof c->dir, "%s", cache_dir);
  else if (default_cache_dir(c->dir, sizeof c->dir))
    return salta__fail(err, SALTA_EJIT, "model '%s': no cache folder (no home, and no private folder could be made)", name);
  if (make_dirs(c->dir) || (c->fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fstat(c->fd, &st))
    return cache_close(c), salta__fail(err, SALTA_EJIT, "model '%s': cannot open the cache folder %s: %s",
                                       name, c->dir, strerror(errno));
  if ((why = untrusted(&st)) != NULL) {
    cache_close(c);
    return salta__fail(err, SALTA_EJIT,
                       "model '%s': the cache folder %s %s (owner uid %ld, mode %03o): refusing to build or load "
                       "code there; make it private (chmod 700) or choose another cache_dir",
                       name, c->dir, why, (long)st.st_uid, (unsigned)(st.st_mode & 0777));
  }
  if (salta__digest_init(&d, SALTA_HASH_HEX / 2, NULL) || salta__digest_update(&d, symbol, strlen(symbol) + 1, NULL) ||
      salta__digest_update(&d, src, strlen(src), NULL) || salta__digest_hex(&d, c->key, NULL)) {
    cache_close(c);
    return salta__fail(err, SALTA_EJIT, "model '%s': cannot compute the cache key (libsodium)", name);
  }
  return SALTA_OK;
}

/* ---- files inside the cache, by descriptor ------------------------------- */

static int open_entry_file(int dirfd, const char *key, const char *ext, int flags) {
  char name[SALTA_HASH_HEX + 8];
  snprintf(name, sizeof name, "%s%s", key, ext);
  return openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
}

static void remove_entry(int dirfd, const char *key) {
  static const char *const ext[] = {".so", ".sum", ".c"};
  char name[SALTA_HASH_HEX + 8];
  int i;
  for (i = 0; i < 3; ++i) {
    snprintf(name, sizeof name, "%s%s", key, ext[i]);
    unlinkat(dirfd, name, 0);
  }
}

/* The BLAKE2b-512 checksum of an open file, from its start. */
static int fd_checksum(int fd, char hex[SUM_HEX + 1]) {
  unsigned char buf[65536];
  salta__digest d;
  ssize_t n;
  if (lseek(fd, 0, SEEK_SET) < 0 || salta__digest_init(&d, SUM_BYTES, NULL)) return -1;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    if (salta__digest_update(&d, buf, (size_t)n, NULL)) return -1;
  return n < 0 || salta__digest_hex(&d, hex, NULL) ? -1 : 0;
}

/* Reads at most size-1 bytes of an open file into buf. */
static void read_fd(int fd, char *buf, size_t size) {
  ssize_t n = fd >= 0 && lseek(fd, 0, SEEK_SET) == 0 ? read(fd, buf, size - 1) : 0;
  buf[n > 0 ? n : 0] = '\0';
}

/* Whether an open library may be loaded: a regular file of this user's,
** writable by no one else, matching its checksum file. */
static int trusted_library(int dirfd, const char *key, int so) {
  char sum[SUM_HEX + 1], text[SUM_HEX + 2];
  struct stat st;
  int f, ok;
  if (fstat(so, &st) || !S_ISREG(st.st_mode) || untrusted(&st)) return 0;
  if ((f = open_entry_file(dirfd, key, ".sum", O_RDONLY)) < 0) return 0;
  ok = fstat(f, &st) == 0 && S_ISREG(st.st_mode) && !untrusted(&st);
  read_fd(f, text, sizeof text);
  close(f);
  return ok && fd_checksum(so, sum) == 0 && strncmp(text, sum, SUM_HEX) == 0 &&
         (text[SUM_HEX] == '\0' || text[SUM_HEX] == ' ' || text[SUM_HEX] == '\n');
}

/* 1: a trusted library is there (so holds it open); 0: no library; -1: a
** library that must not be loaded (damaged, foreign, or its checksum
** missing). */
static int entry_state(const cache *c, int *so) {
  *so = open_entry_file(c->fd, c->key, ".so", O_RDONLY);
  if (*so < 0) return errno == ENOENT ? 0 : -1;
  if (trusted_library(c->fd, c->key, *so)) return 1;
  close(*so);
  *so = -1;
  return -1;
}

/* ---- the size cap ------------------------------------------------------------ */

/* One cache entry's files: total size and the time of its last use (the
** library's mtime, touched at each hit). */
typedef struct entry { char key[SALTA_HASH_HEX + 1]; off_t size; time_t used; } entry;

static int is_key(const char *name) {
  int i;
  for (i = 0; i < SALTA_HASH_HEX; ++i)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
  return name[SALTA_HASH_HEX] == '.';
}

static int older(const void *a, const void *b) {
  const entry *x = a, *y = b;
  return (x->used > y->used) - (x->used < y->used);
}

/* A build folder abandoned by a process that died while compiling. */
static void remove_stale_build(int dirfd, const char *name, const struct stat *st) {
  static const char *const files[] = {"model.c", "lib.so", "sum.txt", "cc.log"};
  int fd, i;
  if (strncmp(name, "build-", 6) != 0 || !S_ISDIR(st->st_mode) || time(NULL) - st->st_mtime < STALE_BUILD_SECONDS)
    return;
  if ((fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) return;
  for (i = 0; i < 4; ++i) unlinkat(fd, files[i], 0);
  close(fd);
  unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* Evicts least recently used entries until the cache is under its cap;
** keep is the entry just built or loaded. Best effort: errors are ignored. */
static void enforce_cap(int dirfd, const char *keep) {
  const char *env = getenv("SALTA_CACHE_MAX_MB");
  long long cap = (env && env[0] ? atoll(env) : 256) * 1024 * 1024, total = 0;
  int fd = dup(dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *de;
  entry *list = NULL;
  size_t n = 0, capn = 0, i;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  while ((de = readdir(d)) != NULL) {
    struct stat st;
    if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!is_key(de->d_name)) {
      remove_stale_build(dirfd, de->d_name, &st);
      continue;
    }
    for (i = 0; i < n && strncmp(list[i].key, de->d_name, SALTA_HASH_HEX) != 0; ++i) {}
    if (i == n) {
      if (n == capn) {
        entry *nl = realloc(list, sizeof *nl * (capn = capn ? 2 * capn : 64));
        if (!nl) break;
        list = nl;
      }
      memcpy(list[n].key, de->d_name, SALTA_HASH_HEX);
      list[n].key[SALTA_HASH_HEX] = '\0';
      list[n].size = 0;
      list[n].used = 0;
      ++n;
    }
    list[i].size += st.st_size;
    if (strstr(de->d_name, ".so") && st.st_mtime > list[i].used) list[i].used = st.st_mtime;
    total += st.st_size;
  }
  closedir(d);
  qsort(list, n, sizeof *list, older);
  for (i = 0; i < n && total > cap; ++i) {
    if (strcmp(list[i].key, keep) == 0) continue;
    remove_entry(dirfd, list[i].key);
    total -= list[i].size;
  }
  free(list);
}

/* ---- compiling ------------------------------------------------------------- */

/* Copies line `line` (1-based) of src into out. */
static void source_line(const char *src, int line, char *out, size_t size) {
  const char *end;
  size_t n;
  for (; line > 1 && src; --line) {
    src = strchr(src, '\n');
    if (src) ++src;
  }
  if (!src) { out[0] = '\0'; return; }
  end = strchr(src, '\n');
  n = end ? (size_t)(end - src) : strlen(src);
  if (n >= size) n = size - 1;
  memcpy(out, src, n);
  out[n] = '\0';
}

/* Turns the compiler's log into a message quoting the first error line. */
static int compile_error(char *err, const char *log, const char *src, const char *name) {
  const char *e = strstr(log, "error:");
  const char *at;
  char text[200] = "", msg[300] = "";
  int line = 0;
  if (e) {
    /* walk back to the "<stdin>:LINE:COL: " prefix of this message */
    const char *start = e;
    while (start > log && start[-1] != '\n') --start;
    at = strstr(start, "<stdin>:");
    if (at && at < e) line = atoi(at + 8);
    sscanf(e, "error: %299[^\n]", msg);
  }
  if (line > 0) {
    source_line(src, line, text, sizeof text);
    return salta__fail(err, SALTA_EJIT, "model '%s': C compile error: %s\n  generated line %d: %s",
                       name, msg, line, text);
  }
  return salta__fail(err, SALTA_EJIT, "model '%s': C compiler failed: %.600s", name, log[0] ? log : "(no output)");
}

/* A fresh build folder inside the cache, with the source written into it
** (model.c). 0, or -1 with errno set. */
static int build_folder(const cache *c, const char *src, char *path, size_t size, int *fd) {
  size_t n = strlen(src);
  int f, ok;
  if ((size_t)snprintf(path, size, "%s/build-XXXXXX", c->dir) >= size) return errno = ENAMETOOLONG, -1;
  if (!mkdtemp(path)) return -1;
  if ((*fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) return rmdir(path), -1;
  f = openat(*fd, "model.c", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  ok = f >= 0 && write(f, src, n) == (ssize_t)n;
  if (f >= 0) ok = (close(f) == 0) && ok;
  return ok ? 0 : -1;
}

static void remove_build_folder(int fd, const char *path) {
  static const char *const files[] = {"model.c", "lib.so", "sum.txt", "cc.log"};
  int i;
  for (i = 0; i < 4; ++i) unlinkat(fd, files[i], 0);
  close(fd);
  rmdir(path);
}

/* Runs the compiler on build/model.c (as stdin) into build/lib.so, its
** messages into build/cc.log (read into log). The exit code, or -1 when the
** compiler could not be started. */
static int run_cc(int bfd, const char *bpath, char *log, size_t log_size) {
  char out[PATH_SIZE + 32];
  const char *argv[16];
  posix_spawn_file_actions_t fa;
  pid_t pid;
  int status = 0, rc, k = 0, i, in, err_fd;
  snprintf(out, sizeof out, "%s/lib.so", bpath);
  argv[k++] = cc_program();
  for (i = 0; cc_flags[i]; ++i) argv[k++] = cc_flags[i];
  argv[k++] = "-o";
  argv[k++] = out;
  argv[k++] = "-";
  argv[k++] = "-lm";
  argv[k] = NULL;
  log[0] = '\0';
  in = openat(bfd, "model.c", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  err_fd = openat(bfd, "cc.log", O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (in < 0 || err_fd < 0 || posix_spawn_file_actions_init(&fa)) {
    if (in >= 0) close(in);
    if (err_fd >= 0) close(err_fd);
    return -1;
  }
  posix_spawn_file_actions_adddup2(&fa, in, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
  rc = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in);
  if (rc == 0) {
    while (waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) { rc = -1; break; }
  }
  read_fd(err_fd, log, log_size);
  close(err_fd);
  if (rc != 0 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status) == 127 ? -1 : WEXITSTATUS(status);
}

/* Moves a finished build into the entry: checksum first written beside the
** library in the build folder, then library, checksum and source renamed
** into place (a reader between the renames sees no checksum and rebuilds). */
static int install_build(const cache *c, int bfd) {
  char sum[SUM_HEX + 2], name[SALTA_HASH_HEX + 8];
  int so = openat(bfd, "lib.so", O_RDONLY | O_NOFOLLOW | O_CLOEXEC), f, ok;
  if (so < 0) return -1;
  ok = fd_checksum(so, sum) == 0;
  close(so);
  if (!ok) return -1;
  strcat(sum, "\n");
  f = openat(bfd, "sum.txt", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  ok = f >= 0 && write(f, sum, SUM_HEX + 1) == SUM_HEX + 1;
  if (f >= 0) ok = (close(f) == 0) && ok;
  if (!ok) return -1;
  snprintf(name, sizeof name, "%s.so", c->key);
  if (renameat(bfd, "lib.so", c->fd, name)) return -1;
  snprintf(name, sizeof name, "%s.sum", c->key);
  if (renameat(bfd, "sum.txt", c->fd, name)) return -1;
  snprintf(name, sizeof name, "%s.c", c->key);
  renameat(bfd, "model.c", c->fd, name);   /* kept for inspection; not needed to load */
  return 0;
}

/* ---- loading --------------------------------------------------------------- */

/* dlopen's the library open as so (checked by the caller) by its path,
** then makes sure that the path still names that file. (Not by
** /proc/self/fd: the loader would take one such name for another.) */
static int load(salta_jit *jit, const cache *c, int so, const char *symbol, const char *name) {
  char path[PATH_SIZE + 64];
  const char *e;
  struct stat checked, loaded;
  int st = SALTA_OK, same;
  snprintf(path, sizeof path, "%s/%s.so", c->dir, c->key);
  jit->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  same = fstat(so, &checked) == 0 && stat(path, &loaded) == 0 && checked.st_dev == loaded.st_dev &&
         checked.st_ino == loaded.st_ino;
  close(so);
  if (!jit->dl)
    return salta__fail(jit->err, SALTA_EJIT, "model '%s': cannot load compiled code: %s",
                       name, (e = dlerror()) ? e : "?");
  if (!same) {
    dlclose(jit->dl);
    jit->dl = NULL;
    return salta__fail(jit->err, SALTA_EJIT, "model '%s': the library %s changed while it was loaded", name, path);
  }
  jit->def = dlsym(jit->dl, symbol);
  if (!jit->def)
    st = salta__fail(jit->err, SALTA_EJIT, "model '%s': compiled code has no symbol '%s'", name, symbol);
  else if (jit->def->abi != SALTA_ABI_VERSION)
    st = salta__fail(jit->err, SALTA_EJIT, "model '%s': compiled code has ABI %d, engine %d",
                     name, jit->def->abi, SALTA_ABI_VERSION);
  if (st) {   /* leave the handle empty, as before the call */
    dlclose(jit->dl);
    jit->dl = NULL;
    jit->def = NULL;
  }
  return st;
}

/* ---- the API ----------------------------------------------------------------- */

int salta_jit_cc_cached(const char *src, const char *symbol, const char *cache_dir) {
  char err[SALTA_ERRMSG_SIZE];
  cache c;
  int so, state;
  if (!src || !symbol || cache_open(&c, src, symbol, cache_dir, "?", err)) return 0;
  state = entry_state(&c, &so);
  if (state == 1) close(so);
  cache_close(&c);
  return state == 1;
}

int salta_jit_cc_background(const char *src, const char *symbol, const char *cache_dir) {
  /* the shell starts the compile in the background and exits at once, so
  ** that the compile is nobody's child to wait for; the library and its
  ** checksum (coreutils' b2sum: BLAKE2b-512, as fd_checksum) land by
  ** rename. Paths and flags are the script's arguments, never its text. */
  static const char script[] =
      "cc=$1 dir=$2 base=$3; shift 3; "
      "(nice \"$cc\" \"$@\" -o \"$dir/lib.so\" - -lm <\"$dir/model.c\" && b2sum <\"$dir/lib.so\" >\"$dir/sum.txt\" && "
      "mv -f \"$dir/lib.so\" \"$base.so\" && mv -f \"$dir/sum.txt\" \"$base.sum\" && mv -f \"$dir/model.c\" \"$base.c\"; "
      "rm -rf \"$dir\") </dev/null >/dev/null 2>&1 &";
  char err[SALTA_ERRMSG_SIZE], bpath[PATH_SIZE + 16], base[PATH_SIZE + 48];
  const char *argv[24];
  cache c;
  pid_t pid;
  int status, bfd = -1, k = 0, i, rc;
  if (!src || !symbol) return SALTA_EINPUT;
  if (cache_open(&c, src, symbol, cache_dir, "?", err)) return SALTA_EJIT;
  if (build_folder(&c, src, bpath, sizeof bpath, &bfd)) {
    if (bfd >= 0) remove_build_folder(bfd, bpath);
    return cache_close(&c), SALTA_EJIT;
  }
  snprintf(base, sizeof base, "%s/%s", c.dir, c.key);
  argv[k++] = "/bin/sh";
  argv[k++] = "-c";
  argv[k++] = script;
  argv[k++] = "salta-cc";
  argv[k++] = cc_program();
  argv[k++] = bpath;
  argv[k++] = base;
  for (i = 0; cc_flags[i]; ++i) argv[k++] = cc_flags[i];
  argv[k] = NULL;
  rc = posix_spawn(&pid, "/bin/sh", NULL, NULL, (char *const *)argv, environ);
  close(bfd);
  cache_close(&c);
  if (rc != 0) return SALTA_EJIT;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) break;
  return SALTA_OK;
}

/* Builds the entry; SALTA_OK with the library open as *so. */
static int build(salta_jit *jit, const cache *c, const char *src, const char *name, int *so) {
  char bpath[PATH_SIZE + 16], log[4096];
  int bfd = -1, rc;
  if (build_folder(c, src, bpath, sizeof bpath, &bfd)) {
    int e = errno;
    if (bfd >= 0) remove_build_folder(bfd, bpath);
    return salta__fail(jit->err, SALTA_EJIT, "model '%s': cannot write the source into %s: %s", name, c->dir,
                       strerror(e));
  }
  rc = run_cc(bfd, bpath, log, sizeof log);
  if (rc == -1) {
    remove_build_folder(bfd, bpath);
    return salta__fail(jit->err, SALTA_EJIT, "model '%s': no C compiler ('%s' could not be run)", name, cc_program());
  }
  if (rc != 0) {
    remove_build_folder(bfd, bpath);
    return compile_error(jit->err, log, src, name);
  }
  rc = install_build(c, bfd);
  remove_build_folder(bfd, bpath);
  if (rc || entry_state(c, so) != 1)
    return salta__fail(jit->err, SALTA_EJIT, "model '%s': cannot move the library into %s: %s", name, c->dir,
                       strerror(errno));
  return SALTA_OK;
}

int salta_jit_compile_cc(salta_jit *jit, const char *src, const char *symbol,
                         const char *model_name, const char *cache_dir) {
  const char *name = model_name ? model_name : "?";
  cache c;
  int rc, so, state;
  if (!jit) return SALTA_EINPUT;
  if (!src || !symbol) return salta__fail(jit->err, SALTA_EINPUT, "jit: salta_jit_compile_cc needs the source and the symbol");
  if (jit->dl) return salta__fail(jit->err, SALTA_EINPUT, "jit: handle already holds a model");
  if ((rc = cache_open(&c, src, symbol, cache_dir, name, jit->err)) != SALTA_OK) return rc;
  state = entry_state(&c, &so);
  jit->cached = 0;
  if (state == 1) {
    if (load(jit, &c, so, symbol, name) == SALTA_OK) {
      char lib[SALTA_HASH_HEX + 8];
      snprintf(lib, sizeof lib, "%s.so", c.key);
      utimensat(c.fd, lib, NULL, AT_SYMLINK_NOFOLLOW);   /* marked used (LRU) */
      jit->cached = 1;
      cache_close(&c);
      return SALTA_OK;
    }
  }
  if (state != 0) remove_entry(c.fd, c.key);   /* damaged, foreign or unloadable: rebuilt */
  rc = build(jit, &c, src, name, &so);
  if (rc == SALTA_OK) {
    enforce_cap(c.fd, c.key);
    rc = load(jit, &c, so, symbol, name);
  }
  cache_close(&c);
  return rc;
}
