/*
** test_jit.c -- the cc backend: compile, cache hit, and a compile error that
** quotes the generated line.
*/
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "salta.h"

/* the ABI number is the engine's, as a string: a definition of any other
** version is refused at load */
#define STR_(x) #x
#define STR(x) STR_(x)
static const char *good =
  "#include <math.h>\n"
  "typedef int (*kfn)(double, const double *, const double *, const double *, double *);\n"
  "struct d { int abi; const char *name; } salta_model = {" STR(SALTA_ABI_VERSION) ", \"tiny\"};\n"
  "double twice_sin(double u) { return 2 * sin(u); }\n";

static const char *bad =
  "int ok;\n"
  "int broken = (1 +;\n";

int main(void) {
  char dir[] = "/tmp/salta-jit-test-XXXXXX";
  salta_jit *jit = NULL, *again = NULL, *broken = NULL;
  const salta_model_def *def;
  if (!mkdtemp(dir)) return 1;
  CHECK(salta_jit_create(&jit) == SALTA_OK);
  CHECK(salta_jit_compile_cc(jit, good, "salta_model", "tiny", dir) == SALTA_OK);
  def = salta_jit_def(jit);
  CHECK(def && def->abi == SALTA_ABI_VERSION);
  CHECK(!salta_jit_cached(jit));
  CHECK(salta_jit_create(&again) == SALTA_OK);
  CHECK(salta_jit_compile_cc(again, good, "salta_model", "tiny", dir) == SALTA_OK);
  CHECK(salta_jit_cached(again));
  CHECK(salta_jit_compile_cc(again, good, "salta_model", "tiny", dir) == SALTA_EINPUT);

  CHECK(salta_jit_create(&broken) == SALTA_OK);
  CHECK(salta_jit_compile_cc(broken, bad, "salta_model", "wrong", dir) == SALTA_EJIT);
  CHECK_CONTAINS(salta_jit_errmsg(broken), "model 'wrong': C compile error");
  CHECK_CONTAINS(salta_jit_errmsg(broken), "generated line 2: int broken = (1 +;");
  salta_jit_free(&broken);
  CHECK(salta_jit_create(&broken) == SALTA_OK);
  CHECK(salta_jit_compile_cc(broken, good, "no_such_symbol", "tiny", dir) == SALTA_EJIT);
  CHECK_CONTAINS(salta_jit_errmsg(broken), "no symbol 'no_such_symbol'");

  salta_jit_free(&jit);
  salta_jit_free(&again);
  salta_jit_free(&broken);

  /* a damaged entry is rebuilt, not loaded (or crashed on) */
  {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "for f in %s/*.so; do printf 'garbage' > $f; done", dir);
    CHECK(system(cmd) == 0);
    CHECK(salta_jit_create(&jit) == SALTA_OK);
    CHECK(salta_jit_compile_cc(jit, good, "salta_model", "tiny", dir) == SALTA_OK);
    CHECK(!salta_jit_cached(jit));
    def = salta_jit_def(jit);
    CHECK(def && def->abi == SALTA_ABI_VERSION);
    salta_jit_free(&jit);
    CHECK(salta_jit_create(&jit) == SALTA_OK);
    CHECK(salta_jit_compile_cc(jit, good, "salta_model", "tiny", dir) == SALTA_OK);
    CHECK(salta_jit_cached(jit));
    salta_jit_free(&jit);
  }
  /* the size cap evicts the least recently used entries, never the new one */
  {
    char cmd[256], other[512];
    FILE *p;
    int count = -1;
    setenv("SALTA_CACHE_MAX_MB", "0", 1);
    CHECK(salta_jit_create(&jit) == SALTA_OK);
    snprintf(other, sizeof other, "%s/* another model */\n", good);
    CHECK(salta_jit_compile_cc(jit, other, "salta_model", "other", dir) == SALTA_OK);   /* a new key */
    salta_jit_free(&jit);
    unsetenv("SALTA_CACHE_MAX_MB");
    snprintf(cmd, sizeof cmd, "ls %s/*.so | wc -l", dir);
    p = popen(cmd, "r");
    if (p) {
      if (fscanf(p, "%d", &count) != 1) count = -1;
      pclose(p);
    }
    CHECK(count == 1);
  }
  {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
  }
  return check_summary("jit");
}
