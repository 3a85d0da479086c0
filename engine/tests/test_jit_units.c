/*
** test_jit_units.c -- a source cut into units: its units are compiled and
** cached one by one (an unchanged unit is not compiled again, a damaged,
** planted or symlinked object is never linked), a unit's compile error
** quotes the unit's line, the library's bytes do not depend on which units
** came from the cache or on the number of compilers, and a background
** build lands for a watching handle.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "salta.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define MARK "\n/* salta:unit */\n"

/* The definition these sources make: a name and two functions from two
** other units. */
struct def { int abi; const char *name; int (*one)(void), (*two)(void); };

/* Three units: one() returning a, two() returning b, and the definition. */
static const char *source(int a, int b, const char *two_extra, char *buf, size_t size) {
  snprintf(buf, size,
           "#ifdef SALTA_UNITS\n#define FN __attribute__((visibility(\"hidden\")))\n#else\n#define FN static\n#endif\n"
           MARK "FN int one(void) { return %d; }"
           MARK "FN int two(void) { return %d; }%s"
           MARK "FN int one(void); FN int two(void);\n"
           "struct d { int abi; const char *name; int (*one)(void), (*two)(void); } salta_model = {"
           STR(SALTA_ABI_VERSION) ", \"units\", one, two};\n", a, b, two_extra);
  return buf;
}

/* Compiles src into dir: the sum one() + 10 two() of the loaded model, or
** -1 (the message in msg). */
static int run(const char *src, const char *dir, char *msg, size_t size) {
  salta_jit *jit = NULL;
  int v = -1;
  if (salta_jit_create(&jit) != SALTA_OK) return -1;
  if (salta_jit_compile_cc(jit, src, "salta_model", "units", dir) == SALTA_OK) {
    const struct def *d = (const void *)salta_jit_def(jit);
    v = d->one() + 10 * d->two();
  }
  if (msg) snprintf(msg, size, "%s", salta_jit_errmsg(jit));
  salta_jit_free(&jit);
  return v;
}

/* The objects (*.o) of the cache dir: their names and inodes. */
typedef struct objs { int n; char name[8][256]; ino_t ino[8]; } objs;

static void list_objects(const char *dir, objs *o) {
  DIR *d = opendir(dir);
  struct dirent *de;
  o->n = 0;
  while (d && (de = readdir(d)) != NULL && o->n < 8) {
    size_t len = strlen(de->d_name);
    char path[512];
    struct stat st;
    if (len < 3 || strcmp(de->d_name + len - 2, ".o") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (lstat(path, &st) != 0) continue;
    snprintf(o->name[o->n], sizeof o->name[0], "%s", de->d_name);
    o->ino[o->n++] = st.st_ino;
  }
  if (d) closedir(d);
}

static ino_t inode_of(const objs *o, const char *name) {
  int i;
  for (i = 0; i < o->n; ++i)
    if (strcmp(o->name[i], name) == 0) return o->ino[i];
  return 0;
}

static int sh(const char *fmt, const char *a, const char *b) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, fmt, a, b);
  return system(cmd);
}

static long file_bytes(const char *path, char *buf, long size) {
  FILE *f = fopen(path, "rb");
  long n;
  if (!f) return -1;
  n = (long)fread(buf, 1, (size_t)size, f);
  fclose(f);
  return n;
}

/* The library of dir (its only .so) into buf. */
static long library_bytes(const char *dir, char *buf, long size) {
  char cmd[512], path[512] = "";
  FILE *p;
  snprintf(cmd, sizeof cmd, "ls %s/*.so", dir);
  p = popen(cmd, "r");
  if (!p || !fgets(path, sizeof path, p)) path[0] = '\0';
  if (p) pclose(p);
  path[strcspn(path, "\n")] = '\0';
  return file_bytes(path, buf, size);
}

int main(void) {
  char dir[] = "/tmp/salta-units-test-XXXXXX", a[256], b[256], src[2048], changed[2048], msg[1024], evil[2048];
  static char lib1[1 << 16], lib2[1 << 16];
  objs before, after;
  long n1, n2;
  int i, same;
  if (!mkdtemp(dir)) return 1;
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(b, sizeof b, "%s/b", dir);
  source(1, 2, "", src, sizeof src);

  /* the units are compiled, cached one by one and linked */
  CHECK(run(src, a, msg, sizeof msg) == 21);
  list_objects(a, &before);
  CHECK(before.n == 3);

  /* one changed unit: it alone is compiled again; the others are linked
  ** from the cache, untouched */
  source(1, 3, "", changed, sizeof changed);
  CHECK(run(changed, a, NULL, 0) == 31);
  list_objects(a, &after);
  CHECK(after.n == 4);
  for (i = 0, same = 0; i < before.n; ++i) same += inode_of(&after, before.name[i]) == before.ino[i];
  CHECK(same == 3);   /* a new object for two(); none of the others was written */

  /* the same bytes whether the units came from the cache or not, and with
  ** one compiler at a time */
  setenv("SALTA_JOBS", "1", 1);
  CHECK(run(changed, b, NULL, 0) == 31);
  unsetenv("SALTA_JOBS");
  CHECK(sh("rm -f %s/*.so %s/*.sum", a, a) == 0);
  CHECK(run(changed, a, NULL, 0) == 31);
  n1 = library_bytes(a, lib1, sizeof lib1);
  n2 = library_bytes(b, lib2, sizeof lib2);
  CHECK(n1 > 0 && n1 == n2 && memcmp(lib1, lib2, (size_t)n1) == 0);

  /* a damaged object, an object without its checksum and (as root) one
  ** that another user owns are never linked: each is compiled again */
  CHECK(sh("rm -f %s/*.so %s/*.sum", a, a) == 0);
  CHECK(sh("for f in %s/*.o; do printf 'garbage' > $f; done", a, NULL) == 0);
  CHECK(run(changed, a, msg, sizeof msg) == 31);
  CHECK(sh("rm -f %s/*.so %s/*.sum", a, a) == 0 && sh("rm -f %s/*.osum", a, NULL) == 0);
  CHECK(run(changed, a, NULL, 0) == 31);
  if (geteuid() == 0) {
    struct stat st;
    char path[512];
    list_objects(a, &before);
    CHECK(sh("rm -f %s/*.so %s/*.sum", a, a) == 0 && sh("chown 65534 %s/*.o", a, NULL) == 0);
    CHECK(run(changed, a, NULL, 0) == 31);
    snprintf(path, sizeof path, "%s/%s", a, before.name[0]);
    CHECK(stat(path, &st) == 0 && st.st_uid == 0);
  }

  /* a symlink in an object's place is replaced, not written through */
  {
    char victim[512], cmd[4096];
    long n;
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(cmd, sizeof cmd,
             "printf secret > %s && cd %s && rm -f *.so *.sum && for f in *.o; do rm -f $f ${f%%.o}.osum; "
             "ln -s %s $f; done",
             victim, a, victim);
    CHECK(system(cmd) == 0);
    CHECK(run(changed, a, NULL, 0) == 31);
    n = file_bytes(victim, lib1, sizeof lib1);
    CHECK(n == 6 && memcmp(lib1, "secret", 6) == 0);
  }

  /* a compile error in a unit quotes the unit's line */
  source(1, 2, "\nint broken = (1 +;", evil, sizeof evil);
  {
    const char *m = msg;
    CHECK(run(evil, a, msg, sizeof msg) == -1);
    CHECK_CONTAINS(m, "model 'units': C compile error");
    CHECK_CONTAINS(m, "generated line 8: int broken = (1 +;");
  }

  /* a background build lands for a handle that watches it */
  {
    char bg[256];
    salta_jit *jit = NULL;
    int got = 0;
    snprintf(bg, sizeof bg, "%s/bg", dir);
    source(4, 5, "", changed, sizeof changed);
    CHECK(salta_jit_create(&jit) == SALTA_OK);
    CHECK(salta_jit_cc_poll(jit) == SALTA_EINPUT);   /* it watches nothing */
    CHECK(salta_jit_cc_watch(jit, changed, "salta_model", "units", bg) == SALTA_OK);
    CHECK(salta_jit_cc_poll(jit) == 0);
    CHECK(salta_jit_cc_background(changed, "salta_model", bg) == SALTA_OK);
    for (i = 0; i < 1200 && (got = salta_jit_cc_poll(jit)) == 0; ++i) {
      struct timespec ts = {0, 50000000};
      nanosleep(&ts, NULL);
    }
    CHECK(got == 1);
    if (got == 1) {
      const struct def *d = (const void *)salta_jit_def(jit);
      CHECK(d->one() + 10 * d->two() == 54);
      CHECK(salta_jit_cached(jit));
    }
    CHECK(salta_jit_cc_poll(jit) == 1);   /* the watch is over */
    salta_jit_free(&jit);
    /* and the build folder goes */
    for (i = 0; i < 100 && sh("test -z \"$(ls -d %s/build-* 2>/dev/null)\"", bg, NULL) != 0; ++i) {
      struct timespec ts = {0, 50000000};
      nanosleep(&ts, NULL);
    }
    CHECK(i < 100);
  }
  CHECK(sh("rm -rf %s", dir, NULL) == 0);
  return check_summary("jit_units");
}
