/*
** jit.c -- the cc backend: generated C compiled by the system compiler into
** a content-hash cache, then dlopen'ed. Each entry is a library (.so), its
** checksum (.sum) and its source (.c); a damaged entry (checksum, load or
** symbol failing) is rebuilt, and the cache is kept under a size cap
** (SALTA_CACHE_MAX_MB, default 256) by evicting the least recently used
** entries.
*/
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errors.h"
#include "salta.h"

extern char **environ;

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

/* 64-bit FNV-1a: the cache key (collisions only cost a wrong cache hit on
** the symbol/abi checks, and the key covers the whole source). */
static uint64_t fnv1a(const char *s, uint64_t h) {
  for (; *s; ++s) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

/* The FNV-1a checksum of a file's bytes; -1 when it cannot be read. */
static int file_checksum(const char *path, uint64_t *sum) {
  FILE *f = fopen(path, "rb");
  unsigned char buf[65536];
  size_t n, i;
  uint64_t h = 14695981039346656037ULL;
  if (!f) return -1;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    for (i = 0; i < n; ++i) h = (h ^ buf[i]) * 1099511628211ULL;
  n = (size_t)ferror(f);
  fclose(f);
  *sum = h;
  return n ? -1 : 0;
}

/* mkdir -p */
static int make_dirs(const char *path) {
  char buf[4096];
  size_t i, n = strlen(path);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, path, n + 1);
  for (i = 1; i <= n; ++i) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char c = buf[i];
      buf[i] = '\0';
      if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
      buf[i] = c;
    }
  }
  return 0;
}

static int default_cache_dir(char *buf, size_t size) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && xdg[0]) n = snprintf(buf, size, "%s/salta", xdg);
  else if (home && home[0]) n = snprintf(buf, size, "%s/.cache/salta", home);
  else n = snprintf(buf, size, "/tmp/salta-cache-%ld", (long)getuid());
  return (n > 0 && (size_t)n < size) ? 0 : -1;
}

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  size_t n = strlen(text);
  int ok;
  if (!f) return -1;
  ok = fwrite(text, 1, n, f) == n;
  ok = (fclose(f) == 0) && ok;
  return ok ? 0 : -1;
}

/* Reads at most size-1 bytes of path into buf. */
static void read_file(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "r");
  size_t n = 0;
  if (f) {
    n = fread(buf, 1, size - 1, f);
    fclose(f);
  }
  buf[n] = '\0';
}

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
static int compile_error(salta_jit *jit, const char *log, const char *src,
                         const char *name) {
  const char *e = strstr(log, "error:");
  const char *colon;
  char text[200] = "", msg[300] = "";
  int line = 0;
  if (e) {
    /* walk back to the "file.c:LINE:COL: " prefix of this message */
    const char *start = e;
    while (start > log && start[-1] != '\n') --start;
    colon = strstr(start, ".c:");
    if (colon && colon < e) line = atoi(colon + 3);
    sscanf(e, "error: %299[^\n]", msg);
  }
  if (line > 0) {
    source_line(src, line, text, sizeof text);
    return salta__fail(jit->err, SALTA_EJIT,
                       "model '%s': C compile error: %s\n  generated line %d: %s",
                       name, msg, line, text);
  }
  return salta__fail(jit->err, SALTA_EJIT, "model '%s': C compiler failed: %.600s", name,
                     log[0] ? log : "(no output)");
}

/* Runs `cc -O2 -shared -fPIC -o so c` with stderr to log; returns exit code
** or -1 when the compiler could not be started. */
static int run_cc(const char *c_path, const char *so_path, const char *log_path) {
  const char *cc = getenv("CC");
  char *argv[] = {(char *)(cc && cc[0] ? cc : "cc"), "-O2", "-shared", "-fPIC",
                  "-std=c11", "-o", (char *)so_path, (char *)c_path, "-lm", NULL};
  posix_spawn_file_actions_t fa;
  pid_t pid;
  int status = 0, rc;
  if (posix_spawn_file_actions_init(&fa)) return -1;
  posix_spawn_file_actions_addopen(&fa, 2, log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (!WIFEXITED(status)) return -1;
  return WEXITSTATUS(status) == 127 ? -1 : WEXITSTATUS(status);
}

/* 1: the library matches the checksum written beside it; 0: no checksum
** yet (another process may be between building and writing it); -1: it
** does not match or cannot be read (damaged). */
static int entry_state(const char *so_path, const char *sum_path) {
  char text[64];
  uint64_t sum;
  read_file(sum_path, text, sizeof text);
  if (file_checksum(so_path, &sum) != 0) return -1;
  if (!text[0]) return 0;
  return strtoull(text, NULL, 16) == sum ? 1 : -1;
}

static void write_checksum(const char *so_path, const char *sum_path) {
  char text[32];
  uint64_t sum;
  if (file_checksum(so_path, &sum) == 0) {
    snprintf(text, sizeof text, "%016llx\n", (unsigned long long)sum);
    write_file(sum_path, text);
  }
}

static void remove_entry(const char *base) {
  static const char *const ext[] = {".so", ".sum", ".c"};
  char path[4300];
  int i;
  for (i = 0; i < 3; ++i) {
    snprintf(path, sizeof path, "%s%s", base, ext[i]);
    remove(path);
  }
}

/* One cache entry's files (by its 16-hex-digit key): total size and the
** time of its last use (the library's mtime, touched at each hit). */
typedef struct entry { char key[17]; off_t size; time_t used; } entry;

static int is_key(const char *name) {
  int i;
  for (i = 0; i < 16; ++i)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
  return name[16] == '.';
}

static int older(const void *a, const void *b) {
  const entry *x = a, *y = b;
  return (x->used > y->used) - (x->used < y->used);
}

/* Evicts least recently used entries until the cache is under its cap;
** keep is the entry just built or loaded. Best effort: errors are ignored. */
static void enforce_cap(const char *dir, const char *keep) {
  const char *env = getenv("SALTA_CACHE_MAX_MB");
  long long cap = (env && env[0] ? atoll(env) : 256) * 1024 * 1024, total = 0;
  DIR *d = opendir(dir);
  struct dirent *de;
  entry *list = NULL;
  size_t n = 0, capn = 0, i;
  if (!d) return;
  while ((de = readdir(d)) != NULL) {
    char path[4400];
    struct stat st;
    if (!is_key(de->d_name)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (stat(path, &st) != 0) continue;
    for (i = 0; i < n && strncmp(list[i].key, de->d_name, 16) != 0; ++i) {}
    if (i == n) {
      if (n == capn) {
        entry *nl = realloc(list, sizeof *nl * (capn = capn ? 2 * capn : 64));
        if (!nl) break;
        list = nl;
      }
      memcpy(list[n].key, de->d_name, 16);
      list[n].key[16] = '\0';
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
    char base[4300];
    if (strncmp(list[i].key, keep, 16) == 0) continue;
    snprintf(base, sizeof base, "%s/%s", dir, list[i].key);
    remove_entry(base);
    total -= list[i].size;
  }
  free(list);
}

static int load(salta_jit *jit, const char *so_path, const char *symbol, const char *name) {
  const char *e;
  int st = SALTA_OK;
  jit->dl = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!jit->dl)
    return salta__fail(jit->err, SALTA_EJIT, "model '%s': cannot load compiled code: %s",
                       name, (e = dlerror()) ? e : "?");
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

/* The cache folder (made if missing) and the entry's path without its
** extension, keyed by the source and the symbol: 0, or -1 (errno set, or
** 0 when there is no folder to use). */
static int entry_base(const char *src, const char *symbol, const char *cache_dir, char *dir, size_t dir_size,
                      char *base, size_t base_size, char *key) {
  if (cache_dir) snprintf(dir, dir_size, "%s", cache_dir);
  else if (default_cache_dir(dir, dir_size)) return errno = 0, -1;
  if (make_dirs(dir)) return -1;
  snprintf(key, 17, "%016llx", (unsigned long long)fnv1a(symbol, fnv1a(src, 14695981039346656037ULL)));
  snprintf(base, base_size, "%s/%s", dir, key);
  return 0;
}

int salta_jit_cc_cached(const char *src, const char *symbol, const char *cache_dir) {
  char dir[4096], base[4200], so_path[4300], sum_path[4300], key[17];
  if (!src || !symbol || entry_base(src, symbol, cache_dir, dir, sizeof dir, base, sizeof base, key)) return 0;
  snprintf(so_path, sizeof so_path, "%s.so", base);
  snprintf(sum_path, sizeof sum_path, "%s.sum", base);
  return entry_state(so_path, sum_path) >= 0;   /* a library without its checksum yet is whole (renamed into place) */
}

int salta_jit_cc_background(const char *src, const char *symbol, const char *cache_dir) {
  /* the shell starts the compile in the background and exits at once, so
  ** that the compile is nobody's child to wait for; the library lands by an
  ** atomic rename, and the next load writes its checksum. The paths are the
  ** script's arguments ($1 ..), never part of its text. */
  static const char script[] =
      "(nice \"$0\" -O2 -shared -fPIC -std=c11 -o \"$1\" \"$2\" -lm && mv -f \"$1\" \"$3.so\" && "
      "mv -f \"$2\" \"$3.c\"; rm -f \"$1\" \"$2\") </dev/null >/dev/null 2>&1 &";
  char dir[4096], base[4200], c_path[4300], tmp_path[4300], key[17];
  const char *cc = getenv("CC");
  char *argv[] = {"/bin/sh", "-c", (char *)script, (char *)(cc && cc[0] ? cc : "cc"), tmp_path, c_path, base, NULL};
  pid_t pid;
  int status;
  if (!src || !symbol) return SALTA_EINPUT;
  if (entry_base(src, symbol, cache_dir, dir, sizeof dir, base, sizeof base, key)) return SALTA_EJIT;
  snprintf(c_path, sizeof c_path, "%s.bg%ld.c", base, (long)getpid());
  snprintf(tmp_path, sizeof tmp_path, "%s.bg%ld.so", base, (long)getpid());
  if (write_file(c_path, src)) return SALTA_EJIT;
  if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0) return remove(c_path), SALTA_EJIT;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) break;
  return SALTA_OK;
}

int salta_jit_compile_cc(salta_jit *jit, const char *src, const char *symbol,
                         const char *model_name, const char *cache_dir) {
  char dir[4096], base[4200], c_path[4300], so_path[4300], tmp_path[4300], log_path[4300], sum_path[4300];
  char log[4096], key[17];
  const char *name = model_name ? model_name : "?";
  struct stat st;
  int rc;
  if (!jit) return SALTA_EINPUT;
  if (!src || !symbol) return salta__fail(jit->err, SALTA_EINPUT, "jit: salta_jit_compile_cc needs the source and the symbol");
  if (jit->dl) return salta__fail(jit->err, SALTA_EINPUT, "jit: handle already holds a model");
  if (entry_base(src, symbol, cache_dir, dir, sizeof dir, base, sizeof base, key))
    return errno ? salta__fail(jit->err, SALTA_EJIT, "model '%s': cannot create cache directory %s: %s", name, dir,
                               strerror(errno))
                 : salta__fail(jit->err, SALTA_EJIT, "model '%s': no cache directory", name);
  snprintf(so_path, sizeof so_path, "%s.so", base);
  snprintf(sum_path, sizeof sum_path, "%s.sum", base);
  jit->cached = stat(so_path, &st) == 0;
  if (jit->cached) {
    /* a damaged entry is rebuilt; a good one is marked used (LRU) */
    int state = entry_state(so_path, sum_path);
    if (state >= 0 && load(jit, so_path, symbol, name) == SALTA_OK) {
      if (state == 0) write_checksum(so_path, sum_path);
      utimensat(AT_FDCWD, so_path, NULL, 0);
      return SALTA_OK;
    }
    remove_entry(base);
    jit->cached = 0;
  }
  {
    /* temporaries unique per process and handle: threads compiling the
    ** same model at once must not share files */
    snprintf(c_path, sizeof c_path, "%s.%ld.%p.c", base, (long)getpid(), (void *)jit);
    snprintf(tmp_path, sizeof tmp_path, "%s.%ld.%p.so", base, (long)getpid(), (void *)jit);
    snprintf(log_path, sizeof log_path, "%s.%ld.%p.log", base, (long)getpid(), (void *)jit);
    if (write_file(c_path, src))
      return salta__fail(jit->err, SALTA_EJIT, "model '%s': cannot write %s: %s", name, c_path,
                         strerror(errno));
    rc = run_cc(c_path, tmp_path, log_path);
    read_file(log_path, log, sizeof log);
    remove(log_path);
    if (rc == 0 && rename(tmp_path, so_path) != 0 && stat(so_path, &st) != 0) {
      /* rename is atomic; a concurrent compile may have put it there first */
      int err = errno;
      remove(tmp_path);
      remove(c_path);
      return salta__fail(jit->err, SALTA_EJIT, "model '%s': cannot move the library into %s: %s",
                         name, so_path, strerror(err));
    }
    remove(tmp_path);
    if (rc == -1) {
      remove(c_path);
      return salta__fail(jit->err, SALTA_EJIT, "model '%s': no C compiler ('%s' could not be run)",
                         name, getenv("CC") ? getenv("CC") : "cc");
    }
    if (rc != 0) {
      rc = compile_error(jit, log, src, name);
      remove(c_path);
      return rc;
    }
    /* keep the source beside the library for inspection */
    snprintf(tmp_path, sizeof tmp_path, "%s.c", base);
    rename(c_path, tmp_path);
    write_checksum(so_path, sum_path);
    enforce_cap(dir, key);
  }
  return load(jit, so_path, symbol, name);
}
