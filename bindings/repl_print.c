/*
** repl_print.c -- readable printing of the REPL's results: strings quoted,
** tables shown with their keys (sequences and key lists cut after a few,
** nesting after two levels), objects by their __tostring; a module
** salta.repl with a show function, when it exists, replaces all of it.
*/
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "repl_print.h"

#define PRINTER_KEY "salta.host.printer"
#define SEQ_MAX 10      /* longer sequences print their head only */
#define SEQ_HEAD 5
#define KEYS_MAX 20     /* likewise for the non-sequence keys */
#define DEPTH_MAX 2     /* nested tables deeper than this print as {...} */

static void message(const char *msg) {
  fprintf(stderr, "salta: %s\n", msg);
  fflush(stderr);
}

static void show(lua_State *L, int idx, int depth, int nested);

static void show_string(lua_State *L, int idx) {
  size_t n;
  const char *s = lua_tolstring(L, idx, &n);
  putchar('"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') printf("\\%c", c);
    else if (c == '\n') fputs("\\n", stdout);
    else if (c == '\t') fputs("\\t", stdout);
    else if (c < 32 || c == 127) printf("\\%03d", c);
    else putchar(c);
  }
  putchar('"');
}

/* Can the key be written bare, as in {name = 1}? */
static int is_name(const char *s) {
  static const char reserved[] = " and break do else elseif end false for "
    "function goto if in local nil not or repeat return then true until while ";
  static const char idchars[] = "_abcdefghijklmnopqrstuvwxyz"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  size_t n = strlen(s);
  char word[16];
  if (n == 0 || (s[0] >= '0' && s[0] <= '9') || strspn(s, idchars) != n)
    return 0;
  if (n + 3 > sizeof word) return 1;  /* longer than any keyword */
  if (snprintf(word, sizeof word, " %s ", s) < 0) return 0;
  return strstr(reserved, word) == NULL;
}

/* Key order: numbers, then strings, then the rest grouped by type. */
static int keyrank(lua_State *L, int i) {
  int t = lua_type(L, i);
  return t == LUA_TNUMBER ? 0 : t == LUA_TSTRING ? 1 : 2 + t;
}

static int keyless(lua_State *L) {
  int ra = keyrank(L, 1), rb = keyrank(L, 2);
  if (ra != rb) lua_pushboolean(L, ra < rb);
  else lua_pushboolean(L, ra < 2 && lua_compare(L, 1, 2, LUA_OPLT));
  return 1;
}

/* Pushes a sorted array of the keys of table t outside 1..seq. */
static void push_keys(lua_State *L, int t, lua_Integer seq) {
  lua_newtable(L);
  lua_Integer n = 0;
  for (lua_pushnil(L); lua_next(L, t); lua_pop(L, 1)) {
    lua_Integer k = lua_isinteger(L, -2) ? lua_tointeger(L, -2) : 0;
    if (k >= 1 && k <= seq) continue;
    lua_pushvalue(L, -2);
    lua_rawseti(L, -4, ++n);
  }
  lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_getfield(L, -1, LUA_TABLIBNAME);
  if (lua_istable(L, -1) && lua_getfield(L, -1, "sort") == LUA_TFUNCTION) {
    lua_pushvalue(L, -4);
    lua_pushcfunction(L, keyless);
    lua_call(L, 2, 0);
  } else {
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
}

static void show_pair(lua_State *L, int t, int key, int depth) {
  if (lua_type(L, key) == LUA_TSTRING && is_name(lua_tostring(L, key))) {
    fputs(lua_tostring(L, key), stdout);
  } else {
    putchar('[');
    show(L, key, depth + 1, 1);
    putchar(']');
  }
  fputs(" = ", stdout);
  lua_pushvalue(L, key);
  lua_rawget(L, t);
  show(L, -1, depth + 1, 1);
  lua_pop(L, 1);
}

static void show_table(lua_State *L, int t, int depth) {
  if (depth > DEPTH_MAX) {
    fputs("{...}", stdout);
    return;
  }
  lua_Integer seq = 0;
  while (lua_rawgeti(L, t, seq + 1) != LUA_TNIL) {
    lua_pop(L, 1);
    seq++;
  }
  lua_pop(L, 1);
  lua_Integer head = seq > SEQ_MAX ? SEQ_HEAD : seq;
  const char *sep = "";
  putchar('{');
  for (lua_Integer i = 1; i <= head; i++, sep = ", ") {
    fputs(sep, stdout);
    lua_rawgeti(L, t, i);
    show(L, -1, depth + 1, 1);
    lua_pop(L, 1);
  }
  if (head < seq) printf("%s... (" LUA_INTEGER_FMT " items)", sep, seq);
  push_keys(L, t, seq);
  lua_Integer nkeys = (lua_Integer)lua_rawlen(L, -1);
  lua_Integer shown = nkeys > KEYS_MAX ? KEYS_MAX / 2 : nkeys;
  for (lua_Integer i = 1; i <= shown; i++, sep = ", ") {
    fputs(sep, stdout);
    lua_rawgeti(L, -1, i);
    show_pair(L, t, lua_gettop(L), depth);
    lua_pop(L, 1);
  }
  if (shown < nkeys) printf("%s... (" LUA_INTEGER_FMT " keys)", sep, nkeys);
  lua_pop(L, 1);
  putchar('}');
}

static int has_tostring(lua_State *L, int idx) {
  if (luaL_getmetafield(L, idx, "__tostring") == LUA_TNIL) return 0;
  lua_pop(L, 1);
  return 1;
}

/* Strings are quoted only inside tables, like a literal would be. */
static void show(lua_State *L, int idx, int depth, int nested) {
  idx = lua_absindex(L, idx);
  luaL_checkstack(L, 10, "table nesting");
  int t = lua_type(L, idx);
  if (t == LUA_TSTRING && nested) {
    show_string(L, idx);
  } else if (t == LUA_TTABLE && !has_tostring(L, idx)) {
    show_table(L, idx, depth);
  } else {
    size_t n;
    const char *s = luaL_tolstring(L, idx, &n);
    fwrite(s, 1, n, stdout);
    lua_pop(L, 1);
  }
}

/* Prints its arguments tab-separated, through salta.repl's show (upvalue)
** when that module exists. */
static int print_results(lua_State *L) {
  int n = lua_gettop(L);
  int custom = lua_isfunction(L, lua_upvalueindex(1));
  for (int i = 1; i <= n; i++) {
    if (i > 1) putchar('\t');
    if (custom) {
      lua_pushvalue(L, lua_upvalueindex(1));
      lua_pushvalue(L, i);
      lua_call(L, 1, 1);
      size_t len;
      const char *s = luaL_tolstring(L, -1, &len);
      fwrite(s, 1, len, stdout);
      lua_pop(L, 2);
    } else {
      show(L, i, 0, 0);
    }
  }
  putchar('\n');
  if (fflush(stdout) != 0 || ferror(stdout))
    return luaL_error(L, "cannot write to stdout");
  return 0;
}

void salta_repl_init_printer(lua_State *L) {
  int top = lua_gettop(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "salta.repl");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    if (msg && strncmp(msg, "module 'salta.repl' not found", 29) != 0)
      message(msg);  /* a broken module should not fail silently */
    lua_pushnil(L);
  } else if (!lua_istable(L, -1) ||
             lua_getfield(L, -1, "show") != LUA_TFUNCTION) {
    lua_pushnil(L);
  }
  lua_pushcclosure(L, print_results, 1);  /* upvalue: show or nil */
  lua_setfield(L, LUA_REGISTRYINDEX, PRINTER_KEY);
  lua_settop(L, top);
}

void salta_repl_print(lua_State *L) {
  int n = lua_gettop(L);
  if (n == 0) return;
  luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
  lua_getfield(L, LUA_REGISTRYINDEX, PRINTER_KEY);
  lua_insert(L, 1);
  if (lua_pcall(L, n, 0, 0) != LUA_OK)
    message(lua_pushfstring(L, "error printing result (%s)",
                              lua_tostring(L, -1)));
}
