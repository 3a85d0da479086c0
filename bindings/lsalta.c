/*
** lsalta.c -- the salta.core Lua module: its entry point, the cc JIT
** backend and the small functions of the module table.
*/
#define _XOPEN_SOURCE 700   /* realpath */
#include <errno.h>
#include <lua.h>
#include <stdlib.h>
#include <lauxlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernel_abi.h"
#include "lcore.h"
#include "ljit.h"

static void release_cc(void *owner) {
  salta_jit *jit = owner;
  salta_jit_free(&jit);
}

/* cc_cached(src, symbol [, cache_dir]) -> whether the cc cache holds it */
static int l_cc_cached(lua_State *L) {
  const char *src = luaL_checkstring(L, 1), *symbol = luaL_checkstring(L, 2), *dir = luaL_optstring(L, 3, NULL);
  lua_pushboolean(L, salta_jit_cc_cached(src, symbol, dir));
  return 1;
}

/* cc_background(src, symbol [, cache_dir]) -> true | nil: starts a cc build
** into the cache and returns at once */
static int l_cc_background(lua_State *L) {
  const char *src = luaL_checkstring(L, 1), *symbol = luaL_checkstring(L, 2), *dir = luaL_optstring(L, 3, NULL);
  if (salta_jit_cc_background(src, symbol, dir) != SALTA_OK) return 0;
  lua_pushboolean(L, 1);
  return 1;
}

/* A cc jit userdata on the stack that owns a new jit (*jit). */
static salta_jit_ud *push_cc(lua_State *L, salta_jit **jit) {
  salta_jit_ud *ud = salta_jit_push(L);
  int st;
  if ((st = salta_jit_create(jit))) salta_l_raise(L, st, "out of memory");
  ud->owner = *jit;
  ud->release = release_cc;
  ud->backend = "cc";
  return ud;
}

/* compile_cc(src, symbol, model_name [, cache_dir]) -> jit, cached | nil, msg */
static int l_compile_cc(lua_State *L) {
  const char *src = luaL_checkstring(L, 1), *symbol = luaL_checkstring(L, 2);
  const char *name = luaL_optstring(L, 3, "?"), *dir = luaL_optstring(L, 4, NULL);
  salta_jit *jit;
  salta_jit_ud *ud = push_cc(L, &jit);
  int st;
  if ((st = salta_jit_compile_cc(jit, src, symbol, name, dir))) {
    luaL_pushfail(L);
    salta_l_pusherror(L, st, salta_jit_errmsg(jit));
    return 2;   /* ud is collected with its jit */
  }
  ud->def = salta_jit_def(jit);
  lua_pushboolean(L, salta_jit_cached(jit));
  return 2;
}

static int l_kernel_abi(lua_State *L) {
  lua_pushlstring(L, salta_kernel_abi, sizeof salta_kernel_abi - 1);
  return 1;
}

/* cc_watch(src, symbol, model_name [, cache_dir]) -> jit | nil, msg: a
** handle that loads src's library once a background build has put it into
** the cache (core.model's second argument) */
static int l_cc_watch(lua_State *L) {
  const char *src = luaL_checkstring(L, 1), *symbol = luaL_checkstring(L, 2);
  const char *name = luaL_optstring(L, 3, "?"), *dir = luaL_optstring(L, 4, NULL);
  salta_jit *jit;
  int st;
  push_cc(L, &jit);
  if ((st = salta_jit_cc_watch(jit, src, symbol, name, dir))) {
    luaL_pushfail(L);
    salta_l_pusherror(L, st, salta_jit_errmsg(jit));
    return 2;
  }
  return 1;
}

/* model(jit [, watch]) -> model: the jit is kept alive as the model's user
** value; with watch (core.cc_watch's), the model takes its kernels when
** they land (salta_l_checkmodel). */
static int l_model(lua_State *L) {
  salta_jit_ud *j = luaL_checkudata(L, 1, SALTA_JIT_MT);
  salta_model_ud *m;
  int st, watch = !lua_isnoneornil(L, 2);
  if (!j->def) return salta_l_error(L, "salta.core.model: the compiled code is closed");
  if (watch) luaL_checkudata(L, 2, SALTA_JIT_MT);
  lua_settop(L, 2);
  m = lua_newuserdatauv(L, sizeof *m, SALTA_MODEL_UVS);
  m->model = NULL;
  m->next_poll = 0;
  luaL_setmetatable(L, SALTA_MODEL_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  if (watch) {
    lua_pushvalue(L, 2);
    lua_setiuservalue(L, -2, 2);
  }
  st = salta_model_create(&m->model, j->def);
  if (st) {
    salta_l_pusherror(L, st, m->model ? salta_model_errmsg(m->model) : "out of memory");
    salta_model_free(&m->model);
    return lua_error(L);
  }
  return 1;
}

/* clock() -> seconds on a monotonic wall clock (for timings) */
static int l_clock(lua_State *L) {
  lua_pushnumber(L, salta_l_now());
  return 1;
}

/* hash(s) -> the 128-bit BLAKE2b digest of s as 32 hex digits (the hash of
** generated source; a model's source runs to megabytes) */
static int l_hash(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  char buf[SALTA_HASH_HEX + 1];
  if (salta_hash(s, n, buf) != SALTA_OK) return luaL_error(L, "salta: cannot hash (libsodium)");
  lua_pushstring(L, buf);
  return 1;
}

/* same_file(a, b) -> whether the paths name one existing file (device and
** inode), however they are spelled */
static int l_same_file(lua_State *L) {
  struct stat sa, sb;
  const char *a = luaL_checkstring(L, 1), *b = luaL_checkstring(L, 2);
  lua_pushboolean(L, stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
  return 1;
}

/* realpath(p) -> the absolute path with every symlink, . and .. resolved,
** or nil and the reason */
static int l_realpath(lua_State *L) {
  const char *p = luaL_checkstring(L, 1);
  char *r = realpath(p, NULL);
  if (!r) {
    lua_pushnil(L);
    lua_pushstring(L, strerror(errno));
    return 2;
  }
  lua_pushstring(L, r);
  free(r);
  return 1;
}

/* file_kind(p) -> "file", "directory" or "other" and the size in bytes
** (following symlinks), or nil and the reason */
static int l_file_kind(lua_State *L) {
  struct stat st;
  if (stat(luaL_checkstring(L, 1), &st) != 0) {
    lua_pushnil(L);
    lua_pushstring(L, strerror(errno));
    return 2;
  }
  lua_pushstring(L, S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "directory" : "other");
  lua_pushinteger(L, (lua_Integer)st.st_size);
  return 2;
}

/* interrupt(), interrupt_clear(): the engine's interrupt request */
static int l_interrupt(lua_State *L) { (void)L; salta_interrupt(); return 0; }
static int l_interrupt_clear(lua_State *L) { (void)L; salta_interrupt_clear(); return 0; }

/* version() -> the engine library's version string */
static int l_version(lua_State *L) {
  lua_pushstring(L, salta_version());
  return 1;
}

/* error(message, status) -> an error object (the front end's rewording of
** an engine error keeps its status) */
static int l_error(lua_State *L) {
  salta_l_pusherror(L, (int)luaL_checkinteger(L, 2), luaL_checkstring(L, 1));
  return 1;
}

/* errcode(e) -> the code of an error object, or nil (any other error) */
static int l_errcode(lua_State *L) {
  if (lua_type(L, 1) == LUA_TTABLE && lua_getmetatable(L, 1)) {
    luaL_getmetatable(L, SALTA_ERROR_MT);
    if (lua_rawequal(L, -1, -2)) {
      lua_getfield(L, 1, "code");
      return 1;
    }
  }
  lua_pushnil(L);
  return 1;
}

int luaopen_salta_core(lua_State *L) {
  static const luaL_Reg funcs[] = {
    {"clock", l_clock},
    {"compile_cc", l_compile_cc},
    {"error", l_error},
    {"errcode", l_errcode},
    {"hash", l_hash},
    {"cc_cached", l_cc_cached},
    {"carried_error", salta_l_carried_error},
    {"check_judge", salta_l_check_judge},
    {"cc_background", l_cc_background},
    {"cc_watch", l_cc_watch},
    {"interrupt", l_interrupt},
    {"interrupt_clear", l_interrupt_clear},
    {"kernel_abi", l_kernel_abi},
    {"loss", salta_l_loss_new},
    {"model", l_model},
    {"same_file", l_same_file},
    {"sim_options", salta_l_sim_option_list},
    {"sim_options_resolve", salta_l_sim_options_resolve},
    {"realpath", l_realpath},
    {"file_kind", l_file_kind},
    {"version", l_version},
    {NULL, NULL}
  };
  salta_l_open_model(L);
  salta_l_open_sim(L);
  salta_l_open_loss(L);
  luaL_newlib(L, funcs);
  salta_l_open_optim(L);
  lua_pushinteger(L, SALTA_ABI_VERSION);
  lua_setfield(L, -2, "abi");
  lua_pushinteger(L, SALTA_ROUTE_CROSSOVER);
  lua_setfield(L, -2, "route_crossover");
  salta_l_push_statuses(L);
  lua_setfield(L, -2, "status");
  return 1;
}
