/*
** jit.c -- the cc backend: generated C compiled by the system compiler into
** the private cache (cache.c), then dlopen'ed.
**
** Each model is a library (KEY.so), its BLAKE2b-512 checksum (KEY.sum) and
** its source (KEY.c), KEY being a BLAKE2b digest of the source and the
** compiler's flags. A source cut into units (UNIT_MARK lines, made by the
** code generator for a large model) has its units compiled as many at
** once as there are processors
** (SALTA_JOBS sets another number) and each cached as an object (UKEY.o,
** its checksum UKEY.osum; UKEY a digest of the flags and the unit's text),
** so that a unit whose text is unchanged is not compiled again; the library
** links the objects. A cached object is copied into the build folder as
** its checksum is checked, and the copy is linked: what was checked is
** what is linked. Every build works in a fresh mkdtemp folder inside the
** cache, the files it is given made with O_EXCL|O_NOFOLLOW, and lands by
** rename (a symlink in an entry's place is replaced, never written
** through). The compiler reads each source from stdin, so that a library's
** bytes depend on the source alone: two builds of one model are identical,
** whichever of its units came from the cache. One shell script
** (build_script) compiles, links and installs, waited for by a foreground
** build and detached for a background one.
*/
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache.h"
#include "digest.h"
#include "errors.h"
#include "salta.h"

extern char **environ;

#define UNIT_MARK "\n/* salta:unit */\n" /* a line of its own: lua/salta/codegen.lua's UNIT_MARK */

struct salta_jit {
  void *dl;
  const salta_model_def *def;
  int cached;
  /* a watched background build (salta_jit_cc_watch): where its library lands */
  int watching;
  char dir[SALTA__PATH_SIZE];
  char key[SALTA_HASH_HEX + 1];
  char *symbol, *name;
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
  free((*jit)->symbol);
  free((*jit)->name);
  free(*jit);
  *jit = NULL;
}

const char *salta_jit_errmsg(const salta_jit *jit) { return jit ? jit->err : "no jit"; }
const salta_model_def *salta_jit_def(const salta_jit *jit) { return jit ? jit->def : NULL; }
int salta_jit_cached(const salta_jit *jit) { return jit ? jit->cached : 0; }

/* The compiler's flags, the same for every build on a machine (each source
** comes on stdin: "-x c -"; the script adds -shared, or -c and -DSALTA_UNITS
** for a unit). Trigraphs are off (gnu11). Where the processor has AVX2 the
** kernels use its registers and three-operand forms (a straight-line kernel
** of a hundred guards packs into wider vectors); without FMA, whose
** contractions would change values, so a model gives the same numbers on
** any machine, as the engine's own loops (wide.h). The flags are part of
** every key: a cache shared with another processor rebuilds. */
static const char *const cc_flags_base[] = {"-O2", "-fPIC", "-std=gnu11", "-x", "c", NULL};
static const char *const cc_flags_avx2[] = {"-O2", "-mavx2", "-fPIC", "-std=gnu11", "-x", "c", NULL};

static const char *const *cc_flags(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2")) return cc_flags_avx2;
#endif
  return cc_flags_base;
}

/* What a unit's key covers besides its text: change it with the script's
** unit command. */
static const char unit_recipe[] = "salta unit 1: -c -DSALTA_UNITS";

static const char *cc_program(void) {
  const char *cc = getenv("CC");
  return cc && cc[0] ? cc : "cc";
}

/* Compilers run at once: SALTA_JOBS, else the processors online. */
static int cc_jobs(void) {
  const char *env = getenv("SALTA_JOBS");
  long n = env && env[0] ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

/* ---- compile errors ---------------------------------------------------------- */

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

/* Turns the compiler's log into a message quoting the first error line of
** the source it compiled. */
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
  if (line > 0 && src) {
    source_line(src, line, text, sizeof text);
    return salta__fail(err, SALTA_EJIT, "model '%s': C compile error: %s\n  generated line %d: %s",
                       name, msg, line, text);
  }
  return salta__fail(err, SALTA_EJIT, "model '%s': C compiler failed: %.600s", name, log[0] ? log : "(no output)");
}

/* ---- units --------------------------------------------------------------------- */

/* A unit of a source cut by UNIT_MARK lines: its text is the head (the
** source before the first mark, with its newline) and its body. */
typedef struct unit {
  const char *body;
  size_t len;
  char key[SALTA_HASH_HEX + 1];
} unit;

/* The units of src into *units (malloc'ed; *n = 0 and NULL: not cut), and
** the head's length. -1 when out of memory. */
static int cut_units(const char *src, unit **units, int *n, size_t *head_len) {
  const char *m = strstr(src, UNIT_MARK), *p;
  size_t mark = strlen(UNIT_MARK);
  int count = 0, i;
  *units = NULL, *n = 0, *head_len = 0;
  if (!m) return 0;
  for (p = m; p; p = strstr(p + mark, UNIT_MARK)) ++count;
  if (!(*units = calloc((size_t)count, sizeof **units))) return -1;
  *head_len = (size_t)(m - src) + 1;
  for (i = 0, p = m; i < count; ++i) {
    const char *body = p + mark, *next = strstr(body, UNIT_MARK);
    (*units)[i].body = body;
    (*units)[i].len = next ? (size_t)(next - body) : strlen(body);
    p = next;
  }
  *n = count;
  return 0;
}

/* A unit's key: a digest of the flags it is compiled with and its text. */
static int unit_key(unit *u, const char *src, size_t head_len) {
  salta__digest d;
  const char *const *flags = cc_flags();
  int i;
  if (salta__digest_init(&d, SALTA_HASH_HEX / 2, NULL) || salta__digest_update(&d, unit_recipe, sizeof unit_recipe, NULL))
    return -1;
  for (i = 0; flags[i]; ++i)
    if (salta__digest_update(&d, flags[i], strlen(flags[i]) + 1, NULL)) return -1;
  if (salta__digest_update(&d, src, head_len, NULL) || salta__digest_update(&d, u->body, u->len, NULL) ||
      salta__digest_update(&d, "\n", 1, NULL))
    return -1;
  return salta__digest_hex(&d, u->key, NULL) ? -1 : 0;
}

/* ---- the build folder ------------------------------------------------------- */

typedef struct build {
  int fd;
  char path[SALTA__PATH_SIZE + 16];
} build;

/* Writes a new file of the build folder from n pieces. 0, or -1. */
static int write_file(const build *b, const char *name, const char *const *piece, const size_t *len, int n) {
  int f = openat(b->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600), ok = f >= 0, i;
  for (i = 0; ok && i < n; ++i) {
    size_t done = 0;
    while (ok && done < len[i]) {
      ssize_t w = write(f, piece[i] + done, len[i] - done);
      ok = w > 0;
      done += ok ? (size_t)w : 0;
    }
  }
  if (f >= 0) ok = (close(f) == 0) && ok;
  return ok ? 0 : -1;
}

/* Copies a cached unit's object into the build folder (as KEY.o) when it
** is there and trusted: 1; else 0 (it is compiled; an untrusted one goes). */
static int reuse_unit(const salta__cache *c, const build *b, const char *key) {
  char name[SALTA_HASH_HEX + 8];
  int in = salta__cache_file(c->fd, key, ".o", O_RDONLY), out, ok;
  if (in < 0) return 0;
  snprintf(name, sizeof name, "%s.o", key);
  out = openat(b->fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  ok = out >= 0 && salta__cache_trusted(c->fd, key, ".osum", in, out);
  if (out >= 0) ok = (close(out) == 0) && ok;
  close(in);
  if (ok) {
    utimensat(c->fd, name, NULL, AT_SYMLINK_NOFOLLOW);   /* marked used (LRU) */
    return 1;
  }
  unlinkat(b->fd, name, 0);
  salta__cache_remove(c->fd, key);
  return 0;
}

static int larger(const void *a, const void *b) {
  const unit *x = *(unit *const *)a, *y = *(unit *const *)b;
  return (x->len < y->len) - (x->len > y->len);
}

/* The units' files: each unit's object copied from the cache, or its source
** (KEY.c) listed in `units` (largest first, so that the longest compiles
** start first); `objects`, the link order. The number to compile in *todo. */
static int write_units(const salta__cache *c, const build *b, const char *src, unit *u, int n, size_t head_len, int *todo) {
  unit **compile = malloc(sizeof *compile * (size_t)n);
  char *list = malloc((size_t)n * (SALTA_HASH_HEX + 4) + 1);
  size_t at = 0;
  int i, k = 0, st = -1;
  if (!compile || !list) goto done;
  for (i = 0; i < n; ++i) {
    if (unit_key(&u[i], src, head_len)) goto done;
    at += (size_t)sprintf(list + at, "%s.o\n", u[i].key);
    if (!reuse_unit(c, b, u[i].key)) {
      char name[SALTA_HASH_HEX + 8];
      const char *piece[3] = {src, u[i].body, "\n"};
      size_t len[3] = {head_len, u[i].len, 1};
      snprintf(name, sizeof name, "%s.c", u[i].key);
      if (write_file(b, name, piece, len, 3)) goto done;
      compile[k++] = &u[i];
    }
  }
  if (write_file(b, "objects", (const char *const[]){list}, (size_t[]){at}, 1)) goto done;
  qsort(compile, (size_t)k, sizeof *compile, larger);
  for (i = 0, at = 0; i < k; ++i) at += (size_t)sprintf(list + at, "%s\n", compile[i]->key);
  st = write_file(b, "units", (const char *const[]){list}, (size_t[]){at}, 1);
  *todo = k;
done:
  free(compile);
  free(list);
  return st;
}

/* A fresh build folder inside the cache holding what the script reads:
** model.c (the source) and, for a source cut into units, their files
** (write_units). *todo: the compiles it needs. SALTA_OK, or SALTA_EJIT. */
static int prepare_build(const salta__cache *c, const char *src, build *b, int *todo, char *err, const char *name) {
  unit *u = NULL;
  size_t head_len;
  int n, e;
  const char *piece[1] = {src};
  size_t len[1] = {strlen(src)};
  b->fd = -1;
  *todo = 1;
  if ((size_t)snprintf(b->path, sizeof b->path, "%s/build-XXXXXX", c->dir) >= sizeof b->path) {
    errno = ENAMETOOLONG;
    goto failed;
  }
  if (!mkdtemp(b->path)) goto failed;
  if ((b->fd = open(b->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
    e = errno;
    rmdir(b->path);
    errno = e;
    goto failed;
  }
  if (write_file(b, "model.c", piece, len, 1) || cut_units(src, &u, &n, &head_len) ||
      (n > 0 && write_units(c, b, src, u, n, head_len, todo)))
    goto failed;
  free(u);
  return SALTA_OK;
failed:
  e = errno;
  free(u);
  if (b->fd >= 0) salta__cache_remove_folder(c->fd, strrchr(b->path, '/') + 1, b->fd);
  b->fd = -1;
  return salta__fail(err, SALTA_EJIT, "model '%s': cannot write the source into %s: %s", name, c->dir, strerror(e));
}

static void remove_build(const salta__cache *c, build *b) {
  if (b->fd >= 0) salta__cache_remove_folder(c->fd, strrchr(b->path, '/') + 1, b->fd);
  b->fd = -1;
}

/* ---- the build script --------------------------------------------------------- */

/* Run in the build folder with: cc, the folder, the cache folder, the key,
** the number of compilers at once, then the flags. A source cut into units
** (an `objects` list) has each unit in `units` compiled by one of `jobs`
** workers (a worker claims a unit by making KEY.claim) and installed into
** the cache as soon as it is built; a failed one is named in `failed`. Then
** the units are linked; a source of one piece is compiled whole. The
** library, its checksum (coreutils' b2sum: BLAKE2b-512, as fd_checksum)
** and its source land by rename, the checksum last. Paths and flags are
** the script's arguments, never its text. */
static const char build_script[] =
    "cc=$1 dir=$2 cache=$3 key=$4 jobs=$5; shift 5\n"
    "cd \"$dir\" || exit 1\n"
    "command -v \"$cc\" >/dev/null 2>&1 || exit 127\n"
    "if [ -e objects ]; then\n"
    "  unit() {\n"
    "    while read u; do\n"
    "      [ -e failed ] && return\n"
    "      mkdir \"$u.claim\" 2>/dev/null || continue\n"
    "      if \"$cc\" \"$@\" -c -DSALTA_UNITS -o \"$u.o\" - <\"$u.c\" 2>\"$u.log\"; then\n"
    "        b2sum <\"$u.o\" >\"$u.sum\" && ln \"$u.o\" \"$u.new\" &&\n"
    "          mv -f \"$u.new\" \"$cache/$u.o\" && mv -f \"$u.sum\" \"$cache/$u.osum\"\n"
    "      else echo \"$u\" >>failed; fi\n"
    "    done <units\n"
    "  }\n"
    "  i=0\n"
    "  while [ $i -lt \"$jobs\" ]; do unit \"$@\" & i=$((i + 1)); done\n"
    "  wait\n"
    "  [ -e failed ] && exit 1\n"
    "  \"$cc\" -shared -o lib.so $(cat objects) -lm 2>cc.log || exit 1\n"
    "else\n"
    "  \"$cc\" \"$@\" -shared -o lib.so - -lm <model.c 2>cc.log || exit 1\n"
    "fi\n"
    "b2sum <lib.so >sum.txt && mv -f lib.so \"$cache/$key.so\" && mv -f sum.txt \"$cache/$key.sum\" &&\n"
    "  mv -f model.c \"$cache/$key.c\"\n";

/* A detached build: the shell starts the script in the background and
** exits at once, so that the build is nobody's child to wait for (and,
** being asynchronous, ignores the terminal's interrupt); the folder goes
** when it ends. */
static const char detach_script[] =
    "script=$1 dir=$3; shift\n"
    "(nice /bin/sh -c \"$script\" salta-cc \"$@\"; rm -rf \"$dir\") </dev/null >/dev/null 2>&1 &\n";

/* Starts the build script on b: detached, or as a child whose exit code it
** returns (-1: the shell could not be started; 127: no compiler). */
static int run_script(const salta__cache *c, const build *b, int todo, int detached) {
  char jobs[16];
  const char *argv[32];
  const char *const *flags = cc_flags();
  pid_t pid;
  int status = 0, k = 0, i, rc, n = cc_jobs();
  snprintf(jobs, sizeof jobs, "%d", n < todo ? n : todo > 0 ? todo : 1);
  argv[k++] = "/bin/sh";
  argv[k++] = "-c";
  argv[k++] = detached ? detach_script : build_script;
  argv[k++] = "salta-cc";
  if (detached) argv[k++] = build_script;
  argv[k++] = cc_program();
  argv[k++] = b->path;
  argv[k++] = c->dir;
  argv[k++] = c->key;
  argv[k++] = jobs;
  for (i = 0; flags[i]; ++i) argv[k++] = flags[i];
  argv[k] = NULL;
  rc = posix_spawn(&pid, "/bin/sh", NULL, NULL, (char *const *)argv, environ);
  if (rc != 0) return -1;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Reads a file of the build folder (at most size-1 bytes) into buf. */
static void read_build_file(const build *b, const char *name, char *buf, size_t size) {
  int f = openat(b->fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  salta__cache_read_fd(f, buf, size);
  if (f >= 0) close(f);
}

/* A failed foreground build's message: the first failed unit's compile
** error (quoting its line), else the link's or the whole source's. */
static int build_error(const build *b, const char *src, const char *name, char *err) {
  char key[SALTA_HASH_HEX + 2], log[4096];
  unit *u = NULL;
  size_t head_len;
  int n, i, st;
  read_build_file(b, "failed", key, sizeof key);
  if (strlen(key) >= SALTA_HASH_HEX && cut_units(src, &u, &n, &head_len) == 0) {
    char file[SALTA_HASH_HEX + 8];
    key[SALTA_HASH_HEX] = '\0';
    snprintf(file, sizeof file, "%s.log", key);
    read_build_file(b, file, log, sizeof log);
    for (i = 0; i < n; ++i) {
      if (unit_key(&u[i], src, head_len) == 0 && strcmp(u[i].key, key) == 0) {
        char *text = malloc(head_len + u[i].len + 1);
        if (text) {
          memcpy(text, src, head_len);
          memcpy(text + head_len, u[i].body, u[i].len);
          text[head_len + u[i].len] = '\0';
        }
        st = compile_error(err, log, text, name);
        free(text);
        free(u);
        return st;
      }
    }
    free(u);
    return compile_error(err, log, NULL, name);
  }
  free(u);
  read_build_file(b, "cc.log", log, sizeof log);
  return compile_error(err, log, src, name);
}

/* ---- loading --------------------------------------------------------------- */

/* dlopen's the library open as so (checked by the caller) by its path,
** then makes sure that the path still names that file. (Not by
** /proc/self/fd: the loader would take one such name for another.) */
static int load(salta_jit *jit, const salta__cache *c, int so, const char *symbol, const char *name) {
  char path[SALTA__PATH_SIZE + 64];
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

/* Loads the trusted library open as so, marking it used. */
static int load_hit(salta_jit *jit, const salta__cache *c, int so, const char *symbol, const char *name) {
  char lib[SALTA_HASH_HEX + 8];
  int st = load(jit, c, so, symbol, name);
  if (st == SALTA_OK) {
    snprintf(lib, sizeof lib, "%s.so", c->key);
    utimensat(c->fd, lib, NULL, AT_SYMLINK_NOFOLLOW);   /* marked used (LRU) */
    jit->cached = 1;
  }
  return st;
}

/* ---- the API ----------------------------------------------------------------- */

int salta_jit_cc_cached(const char *src, const char *symbol, const char *cache_dir) {
  char err[SALTA_ERRMSG_SIZE];
  salta__cache c;
  int so, state;
  if (!src || !symbol || salta__cache_open(&c, src, symbol, cc_flags(), cache_dir, "?", err)) return 0;
  state = salta__cache_state(&c, &so);
  if (state == 1) close(so);
  salta__cache_close(&c);
  return state == 1;
}

int salta_jit_cc_background(const char *src, const char *symbol, const char *cache_dir) {
  char err[SALTA_ERRMSG_SIZE];
  salta__cache c;
  build b;
  int todo, rc;
  if (!src || !symbol) return SALTA_EINPUT;
  if (salta__cache_open(&c, src, symbol, cc_flags(), cache_dir, "?", err)) return SALTA_EJIT;
  if (prepare_build(&c, src, &b, &todo, err, "?")) return salta__cache_close(&c), SALTA_EJIT;
  rc = run_script(&c, &b, todo, 1);
  if (rc != 0) remove_build(&c, &b);
  else close(b.fd);   /* the script removes the folder */
  salta__cache_close(&c);
  return rc == 0 ? SALTA_OK : SALTA_EJIT;
}

/* Builds the entry in the foreground; SALTA_OK with the library open as *so. */
static int build_now(salta_jit *jit, const salta__cache *c, const char *src, const char *name, int *so) {
  build b;
  int rc, todo;
  if ((rc = prepare_build(c, src, &b, &todo, jit->err, name))) return rc;
  rc = run_script(c, &b, todo, 0);
  if (rc == 127 || rc == -1) {
    remove_build(c, &b);
    return salta__fail(jit->err, SALTA_EJIT, "model '%s': no C compiler ('%s' could not be run)", name, cc_program());
  }
  if (rc != 0) {
    rc = build_error(&b, src, name, jit->err);
    remove_build(c, &b);
    return rc;
  }
  remove_build(c, &b);
  if (salta__cache_state(c, so) != 1)
    return salta__fail(jit->err, SALTA_EJIT, "model '%s': the library built in %s is not there or does not match its "
                       "checksum", name, c->dir);
  return SALTA_OK;
}

int salta_jit_compile_cc(salta_jit *jit, const char *src, const char *symbol,
                         const char *model_name, const char *cache_dir) {
  const char *name = model_name ? model_name : "?";
  salta__cache c;
  int rc, so, state;
  if (!jit) return SALTA_EINPUT;
  if (!src || !symbol) return salta__fail(jit->err, SALTA_EINPUT, "jit: salta_jit_compile_cc needs the source and the symbol");
  if (jit->dl || jit->watching) return salta__fail(jit->err, SALTA_EINPUT, "jit: handle already holds a model");
  if ((rc = salta__cache_open(&c, src, symbol, cc_flags(), cache_dir, name, jit->err)) != SALTA_OK) return rc;
  state = salta__cache_state(&c, &so);
  jit->cached = 0;
  if (state == 1 && load_hit(jit, &c, so, symbol, name) == SALTA_OK) {
    salta__cache_close(&c);
    return SALTA_OK;
  }
  if (state != 0) salta__cache_remove(c.fd, c.key);   /* damaged, foreign or unloadable: rebuilt */
  rc = build_now(jit, &c, src, name, &so);
  if (rc == SALTA_OK) {
    salta__cache_cap(c.fd, c.key);
    rc = load(jit, &c, so, symbol, name);
  }
  salta__cache_close(&c);
  return rc;
}

int salta_jit_cc_watch(salta_jit *jit, const char *src, const char *symbol, const char *model_name,
                       const char *cache_dir) {
  const char *name = model_name ? model_name : "?";
  salta__cache c;
  int rc;
  if (!jit) return SALTA_EINPUT;
  if (!src || !symbol) return salta__fail(jit->err, SALTA_EINPUT, "jit: salta_jit_cc_watch needs the source and the symbol");
  if (jit->dl || jit->watching) return salta__fail(jit->err, SALTA_EINPUT, "jit: handle already holds a model");
  if ((rc = salta__cache_open(&c, src, symbol, cc_flags(), cache_dir, name, jit->err)) != SALTA_OK) return rc;
  salta__cache_close(&c);
  if (!(jit->symbol = strdup(symbol)) || !(jit->name = strdup(name))) {
    free(jit->symbol), free(jit->name);
    jit->symbol = jit->name = NULL;
    return salta__fail(jit->err, SALTA_EMEM, "out of memory");
  }
  memcpy(jit->dir, c.dir, sizeof jit->dir);
  memcpy(jit->key, c.key, sizeof jit->key);
  jit->watching = 1;
  return SALTA_OK;
}

int salta_jit_cc_poll(salta_jit *jit) {
  char sum[SALTA__PATH_SIZE + 64];
  struct stat st;
  salta__cache c;
  int so, state, rc;
  if (!jit) return SALTA_EINPUT;
  if (!jit->watching) return jit->def ? 1 : salta__fail(jit->err, SALTA_EINPUT, "jit: the handle watches no build");
  snprintf(sum, sizeof sum, "%s/%s.sum", jit->dir, jit->key);
  if (stat(sum, &st) != 0 || st.st_size == 0) return 0;   /* the checksum lands last */
  jit->watching = 0;
  if ((rc = salta__cache_open_dir(&c, jit->dir, jit->name, jit->err))) return rc;
  memcpy(c.key, jit->key, sizeof c.key);
  state = salta__cache_state(&c, &so);
  rc = state == 1 ? load_hit(jit, &c, so, jit->symbol, jit->name)
                  : salta__fail(jit->err, SALTA_EJIT, "model '%s': the library built in the background in %s is %s",
                                jit->name, jit->dir, state == 0 ? "gone" : "not to be trusted (it does not match its checksum)");
  salta__cache_close(&c);
  return rc == SALTA_OK ? 1 : rc;
}
