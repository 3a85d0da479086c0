/*
** jit_tcc.c -- the Lua module salta.tcc: compiles generated model source
** in process with libtcc and hands back a salta_jit_ud owning the code.
**
** Debian's libtcc ships without libtcc1.a and tcc's own headers, so the
** state runs with -nostdlib and every library function the generated code
** may call is bound explicitly (tcc -nostdlib also stops its dlsym lookup).
** The system <math.h> is still read from /usr/include (libc6-dev).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>
#include <libtcc.h>

#include "ljit.h"

_Static_assert(sizeof(void (*)(void)) == sizeof(void *),
               "function and data pointers must have the same size");

/* What generated code may link against: libm plus the glibc helpers that
** math.h's classification macros expand to, and the mem* calls tcc may
** emit for aggregate copies. Kept as generic function pointers (ISO C
** allows casts between those) and turned into data pointers by memcpy. */
typedef void (*fnptr)(void);
#define F(name) {#name, (fnptr)name}
static const struct { const char *name; fnptr fn; } syms[] = {
  F(sin), F(cos), F(tan), F(asin), F(acos), F(atan), F(atan2), F(sinh),
  F(cosh), F(tanh), F(asinh), F(acosh), F(atanh), F(exp), F(exp2), F(expm1),
  F(log), F(log10), F(log2), F(log1p), F(pow), F(sqrt), F(cbrt), F(hypot),
  F(fabs), F(floor), F(ceil), F(round), F(trunc), F(fmod), F(fmin), F(fmax),
  F(copysign), F(erf), F(erfc), F(tgamma), F(lgamma), F(__finite),
  F(__finitef), F(__finitel), F(__isinf), F(__isinff), F(__isinfl),
  F(__isnan), F(__isnanf), F(__isnanl), F(__fpclassify), F(__fpclassifyf),
  F(__fpclassifyl), F(__signbit), F(__signbitf), F(__signbitl), F(memcpy),
  F(memmove), F(memset),
};
#undef F

/* Fixed-size message text: filled from tcc's callback, where raising a Lua
** error would leak the state. Truncates silently. */
typedef struct msgbuf {
  char text[2048];
  size_t len;
} msgbuf;

/* Errors and warnings apart, so warnings can never crowd the error out. */
typedef struct diag {
  msgbuf err, warn;
} diag;

static void mb_add(msgbuf *mb, const char *s) {
  size_t room = sizeof mb->text - 1 - mb->len;
  size_t n = strlen(s);
  if (n > room) n = room;
  memcpy(mb->text + mb->len, s, n);
  mb->len += n;
  mb->text[mb->len] = '\0';
}

static void on_message(void *opaque, const char *msg) {
  diag *d = opaque;
  msgbuf *mb = strstr(msg, ": warning: ") != NULL ? &d->warn : &d->err;
  if (mb->len > 0) mb_add(mb, "\n");
  mb_add(mb, msg);
}

static void release_tcc(void *owner) {
  tcc_delete(owner);
}

static int bind_symbols(TCCState *s, msgbuf *eb) {
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    const void *addr;
    memcpy(&addr, &syms[i].fn, sizeof addr);
    if (tcc_add_symbol(s, syms[i].name, addr) < 0) {
      mb_add(eb, "cannot bind ");
      mb_add(eb, syms[i].name);
      return -1;
    }
  }
  return 0;
}

/* Compiles and links src in memory; on success *out owns the code. Touches
** no Lua state, so nothing can longjmp past the live TCCState. */
static int build(const char *src, const char *symbol, TCCState **out,
                 const salta_model_def **def, diag *d) {
  msgbuf *eb = &d->err;
  TCCState *s = tcc_new();
  if (s == NULL) {
    mb_add(eb, "tcc_new failed");
    return -1;
  }
  tcc_set_error_func(s, d, on_message);
  tcc_set_options(s, "-nostdlib");
  int rc = tcc_set_output_type(s, TCC_OUTPUT_MEMORY);
  if (rc == 0) rc = bind_symbols(s, eb);
  if (rc == 0) rc = tcc_compile_string(s, src);
  if (rc == 0) rc = tcc_relocate(s, TCC_RELOCATE_AUTO);
  if (rc == 0) {
    *def = tcc_get_symbol(s, symbol);
    if (*def == NULL) {
      mb_add(eb, "symbol not found in generated code: ");
      mb_add(eb, symbol);
      rc = -1;
    } else if ((*def)->abi != SALTA_ABI_VERSION) {
      char msg[96];
      if (snprintf(msg, sizeof msg, "ABI version %d, engine expects %d",
                   (*def)->abi, SALTA_ABI_VERSION) < 0)
        msg[0] = '\0';
      mb_add(eb, msg[0] ? msg : "ABI version mismatch");
      rc = -1;
    }
  }
  if (rc != 0) {
    if (eb->len == 0) mb_add(eb, "tcc failed without a message");
    tcc_delete(s);
    return -1;
  }
  *out = s;
  return 0;
}

/* Appends the generated source line a message points at ("<string>:N:").
** Returns 0 when msg names no line. */
static int add_offending_line(luaL_Buffer *b, const char *msg,
                              const char *src) {
  const char *tag = strstr(msg, "<string>:");
  if (tag == NULL) return 0;
  char *end;
  long line = strtol(tag + 9, &end, 10);
  if (end == tag + 9 || line < 1) return 0;
  const char *p = src;
  for (long i = 1; i < line && p != NULL; i++) {
    p = strchr(p, '\n');
    if (p != NULL) p++;
  }
  if (p == NULL) return 0;
  size_t n = strcspn(p, "\n");
  lua_pushfstring(b->L, "\n  generated line %d: ", (int)line);
  luaL_addvalue(b);
  luaL_addlstring(b, p, n);
  return 1;
}

/* compile(src, symbol [, modelname]) -> jit | nil, message */
static int l_compile(lua_State *L) {
  const char *src = luaL_checkstring(L, 1);
  const char *symbol = luaL_checkstring(L, 2);
  const char *model = luaL_optstring(L, 3, "?");
  /* Allocate the userdata first: once tcc state exists nothing may raise. */
  salta_jit_ud *ud = salta_jit_push(L);
  diag d = {.err = {.len = 0}, .warn = {.len = 0}};
  d.err.text[0] = d.warn.text[0] = '\0';
  TCCState *s = NULL;
  const salta_model_def *def = NULL;
  if (build(src, symbol, &s, &def, &d) == 0) {
    ud->owner = s;
    ud->def = def;
    ud->release = release_tcc;
    ud->backend = "tcc";
    return 1;
  }
  const char *text = d.err.text;
  if (strncmp(text, "tcc: ", 5) == 0) text += 5;  /* callers name the backend */
  lua_pushnil(L);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  lua_pushfstring(L, "model '%s': %s", model, text);
  luaL_addvalue(&b);
  /* A link error has no line; the warning that preceded it may have one. */
  if (!add_offending_line(&b, d.err.text, src) && d.warn.len > 0) {
    luaL_addstring(&b, "\n  ");
    luaL_addstring(&b, d.warn.text);
    add_offending_line(&b, d.warn.text, src);
  }
  luaL_pushresult(&b);
  return 2;
}

int luaopen_salta_tcc(lua_State *L) {
  static const luaL_Reg funcs[] = {{"compile", l_compile}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}
