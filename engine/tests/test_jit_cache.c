/*
** test_jit_cache.c -- the compiled-model cache is private: a folder another
** user owns or others can write is refused; a library is loaded only when
** this user built it (planted ones, foreign ones and ones without their
** checksum are rebuilt, never loaded); temporaries never follow a symlink;
** two builds of one source are byte-identical, background or not.
*/
#include <dirent.h>
#include <fcntl.h>
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
#define NOBODY 65534

/* a definition that names itself: which library was loaded shows in name */
static const char *source_named(const char *name, char *buf, size_t size) {
  snprintf(buf, size,
           "struct d { int abi; const char *name; } salta_model = {" STR(SALTA_ABI_VERSION) ", \"%s\"};\n", name);
  return buf;
}

static int sh(const char *fmt, const char *a, const char *b) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, fmt, a, b);
  return system(cmd);
}

/* The one entry's key (file name without extension) in dir. */
static int entry_key(const char *dir, char *key, size_t size) {
  DIR *d = opendir(dir);
  struct dirent *de;
  int found = 0;
  if (!d) return 0;
  while ((de = readdir(d)) != NULL) {
    const char *dot = strstr(de->d_name, ".so");
    if (dot && dot[3] == '\0' && (size_t)(dot - de->d_name) < size) {
      memcpy(key, de->d_name, (size_t)(dot - de->d_name));
      key[dot - de->d_name] = '\0';
      found = 1;
    }
  }
  closedir(d);
  return found;
}

static long file_bytes(const char *path, char *buf, long size) {
  FILE *f = fopen(path, "rb");
  long n;
  if (!f) return -1;
  n = (long)fread(buf, 1, (size_t)size, f);
  fclose(f);
  return n;
}

/* Compiles src into dir; returns the loaded model's name (static) or the
** error message. */
static const char *compile(const char *src, const char *dir, int *status, int *cached) {
  static char out[1024];
  salta_jit *jit = NULL;
  if (salta_jit_create(&jit) != SALTA_OK) return "no memory";
  *status = salta_jit_compile_cc(jit, src, "salta_model", "m", dir);
  if (cached) *cached = salta_jit_cached(jit);
  snprintf(out, sizeof out, "%s", *status == SALTA_OK ? salta_jit_def(jit)->name : salta_jit_errmsg(jit));
  salta_jit_free(&jit);
  return out;
}

int main(void) {
  char dir[] = "/tmp/salta-cache-test-XXXXXX", sub[256], other[256], key[128], path[512], buf[512], evil[512];
  static char a[1 << 16], b[1 << 16];
  int st, cached;
  const char *src = source_named("good", buf, sizeof buf);
  if (!mkdtemp(dir)) return 1;
  snprintf(sub, sizeof sub, "%s/c", dir);
  snprintf(other, sizeof other, "%s/d", dir);
  source_named("planted", evil, sizeof evil);

  /* a new folder is private */
  CHECK(strcmp(compile(src, sub, &st, &cached), "good") == 0 && st == SALTA_OK && !cached);
  {
    struct stat s;
    CHECK(stat(sub, &s) == 0 && (s.st_mode & 0777) == 0700);
  }
  CHECK(entry_key(sub, key, sizeof key));
  CHECK(strlen(key) == SALTA_HASH_HEX);

  /* reproducible: another folder, the same bytes */
  CHECK(strcmp(compile(src, other, &st, &cached), "good") == 0);
  {
    long na, nb;
    snprintf(path, sizeof path, "%s/%s.so", sub, key);
    na = file_bytes(path, a, sizeof a);
    snprintf(path, sizeof path, "%s/%s.so", other, key);
    nb = file_bytes(path, b, sizeof b);
    CHECK(na > 0 && na == nb && memcmp(a, b, (size_t)na) == 0);
  }

  /* a folder others can write is refused, with the reason */
  CHECK(sh("chmod 777 %s", sub, NULL) == 0);
  compile(src, sub, &st, &cached);
  CHECK(st == SALTA_EJIT);
  CHECK_CONTAINS(compile(src, sub, &st, &cached), "is writable by group or others");
  CHECK(salta_jit_cc_cached(src, "salta_model", sub) == 0);
  CHECK(salta_jit_cc_background(src, "salta_model", sub) == SALTA_EJIT);
  CHECK(sh("chmod 700 %s", sub, NULL) == 0);

  /* a library without its checksum (planted: another model's library under
  ** this key) is rebuilt, never loaded */
  CHECK(strcmp(compile(evil, other, &st, &cached), "planted") == 0);
  {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s/%s.so", sub, key);
    remove(cmd);
    snprintf(cmd, sizeof cmd, "%s/%s.sum", sub, key);
    remove(cmd);
    /* the planted library: the .so in other that is not key's */
    snprintf(cmd, sizeof cmd, "for f in %s/*.so; do case $f in *%s.so) ;; *) cp $f %s/%s.so;; esac; done",
             other, key, sub, key);
    CHECK(system(cmd) == 0);
  }
  CHECK(strcmp(compile(src, sub, &st, &cached), "good") == 0 && !cached);
  /* a planted library with a forged checksum of its own bytes: the
  ** checksum matches, but it is still rebuilt when another user owns it */
  if (geteuid() == 0) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "for f in %s/*.so; do case $f in *%s.so) ;; *) cp $f %s/%s.so; b2sum < $f > %s/%s.sum;; esac; done; "
             "chown %d %s/%s.so %s/%s.sum",
             other, key, sub, key, sub, key, NOBODY, sub, key, sub, key);
    CHECK(system(cmd) == 0);
    CHECK(strcmp(compile(src, sub, &st, &cached), "good") == 0 && !cached);
    /* a folder another user owns is refused */
    CHECK(sh("chown 65534 %s", sub, NULL) == 0);
    CHECK_CONTAINS(compile(src, sub, &st, &cached), "belongs to another user");
    CHECK(st == SALTA_EJIT);
    CHECK(sh("chown 0 %s", sub, NULL) == 0);
  }

  /* a symlink in the library's place is replaced, not written through */
  {
    char victim[512], cmd[4096];
    long n;
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(cmd, sizeof cmd, "printf secret > %s && chmod 600 %s && rm -f %s/%s.so %s/%s.sum && ln -s %s %s/%s.so",
             victim, victim, sub, key, sub, key, victim, sub, key);
    CHECK(system(cmd) == 0);
    CHECK(strcmp(compile(src, sub, &st, &cached), "good") == 0 && !cached);
    n = file_bytes(victim, a, sizeof a);
    CHECK(n == 6 && memcmp(a, "secret", 6) == 0);
  }

  /* a background build lands whole (library and checksum) and gives the
  ** foreground build's bytes: the next compile loads it */
  {
    char bg[256], so[512], sum[512];
    struct stat s;
    int i;
    long na, nb;
    snprintf(bg, sizeof bg, "%s/bg", dir);
    CHECK(salta_jit_cc_background(src, "salta_model", bg) == SALTA_OK);
    snprintf(so, sizeof so, "%s/%s.so", bg, key);
    snprintf(sum, sizeof sum, "%s/%s.sum", bg, key);
    for (i = 0; i < 600 && !(stat(sum, &s) == 0 && s.st_size > 0); ++i) {
      struct timespec ts = {0, 100000000};
      nanosleep(&ts, NULL);
    }
    CHECK(salta_jit_cc_cached(src, "salta_model", bg) == 1);
    CHECK(strcmp(compile(src, bg, &st, &cached), "good") == 0 && cached);
    na = file_bytes(so, a, sizeof a);
    snprintf(path, sizeof path, "%s/%s.so", other, key);
    nb = file_bytes(path, b, sizeof b);
    CHECK(na > 0 && na == nb && memcmp(a, b, (size_t)na) == 0);
  }

  /* no home: a fresh private folder, never a shared one in /tmp */
  {
    char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    char *xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    char shared[128];
    struct stat s;
    unsetenv("HOME");
    unsetenv("XDG_CACHE_HOME");
    setenv("TMPDIR", dir, 1);
    snprintf(shared, sizeof shared, "/tmp/salta-cache-%ld", (long)getuid());
    CHECK(strcmp(compile(src, NULL, &st, &cached), "good") == 0);
    CHECK(stat(shared, &s) != 0 || s.st_uid == getuid());
    CHECK(sh("ls -d %s/salta-cache-?????? > /dev/null", dir, NULL) == 0);
    if (home) setenv("HOME", home, 1);
    if (xdg) setenv("XDG_CACHE_HOME", xdg, 1);
    free(home);
    free(xdg);
  }
  CHECK(sh("rm -rf %s", dir, NULL) == 0);
  return check_summary("jit_cache");
}
