/*
** lcore.c -- the helpers the files of salta.core share (lcore.h), the
** model userdata's check and the jit userdata (ljit.h): below every other
** binding file, calling none of them.
*/
#include <lua.h>
#include <stdarg.h>
#include <lauxlib.h>
#include <string.h>
#include <time.h>

#include "lcore.h"
#include "ljit.h"

int salta_l_error(lua_State *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return lua_error(L);
}

/* The engine's failure statuses by name. */
static const struct { int status; const char *name; } STATUS[] = {
  {SALTA_EMEM, "memory"}, {SALTA_EINPUT, "input"}, {SALTA_EJIT, "jit"}, {SALTA_EKERNEL, "kernel"},
  {SALTA_ESOLVER, "solver"}, {SALTA_EINTR, "interrupted"}, {SALTA_EALGEBRAIC, "algebraic"},
  {SALTA_ENODIFF, "nondifferentiable"}};
#define NSTATUS (sizeof STATUS / sizeof *STATUS)

static const char *status_name(int status) {
  size_t k;
  for (k = 0; k < NSTATUS; ++k)
    if (STATUS[k].status == status) return STATUS[k].name;
  return "error";
}

void salta_l_push_statuses(lua_State *L) {
  size_t k;
  lua_createtable(L, 0, (int)NSTATUS);
  for (k = 0; k < NSTATUS; ++k) {
    lua_pushinteger(L, STATUS[k].status);
    lua_setfield(L, -2, STATUS[k].name);
  }
}

static int error_tostring(lua_State *L) {
  lua_getfield(L, 1, "message");
  return 1;
}

static int error_concat(lua_State *L) {
  luaL_tolstring(L, 1, NULL);
  luaL_tolstring(L, 2, NULL);
  lua_concat(L, 2);
  return 1;
}

void salta_l_pusherror(lua_State *L, int status, const char *msg) {
  lua_createtable(L, 0, 3);
  lua_pushstring(L, msg);
  lua_setfield(L, -2, "message");
  lua_pushinteger(L, status);
  lua_setfield(L, -2, "status");
  lua_pushstring(L, status_name(status));
  lua_setfield(L, -2, "code");
  if (luaL_newmetatable(L, SALTA_ERROR_MT)) {
    lua_pushcfunction(L, error_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, error_concat);
    lua_setfield(L, -2, "__concat");
  }
  lua_setmetatable(L, -2);
}

int salta_l_raise(lua_State *L, int status, const char *msg) {
  salta_l_pusherror(L, status, msg);
  return lua_error(L);
}

void salta_l_checkvec(lua_State *L, int idx, double *out, int n, const char *what) {
  int i;
  lua_Integer len;
  luaL_checktype(L, idx, LUA_TTABLE);
  len = luaL_len(L, idx);
  if (len != n) salta_l_error(L, "%s: expected %d numbers, got %d", what, n, (int)len);
  for (i = 0; i < n; ++i) {
    int isnum;
    lua_geti(L, idx, i + 1);
    out[i] = lua_tonumberx(L, -1, &isnum);
    if (!isnum) salta_l_error(L, "%s[%d]: number expected, got %s", what, i + 1, luaL_typename(L, -1));
    lua_pop(L, 1);
  }
}

void salta_l_pushvec(lua_State *L, const double *v, int n) {
  int i;
  lua_createtable(L, n, 0);
  for (i = 0; i < n; ++i) {
    lua_pushnumber(L, v[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

void salta_l_pushnames(lua_State *L, const char *const *names, int n) {
  int i;
  lua_createtable(L, n, 0);
  for (i = 0; i < n; ++i) {
    lua_pushstring(L, names[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

double salta_l_optnumber(lua_State *L, int idx, const char *k, double def, const char *what) {
  double v = def;
  lua_getfield(L, idx, k);
  if (!lua_isnil(L, -1)) {
    int isnum;
    v = lua_tonumberx(L, -1, &isnum);
    if (!isnum || lua_type(L, -1) != LUA_TNUMBER)
      salta_l_error(L, "%s: option '%s' must be a number, got %s", what, k, luaL_typename(L, -1));
  }
  lua_pop(L, 1);
  return v;
}

void salta_l_newclass(lua_State *L, const char *mt, const luaL_Reg *methods, lua_CFunction close) {
  if (!luaL_newmetatable(L, mt)) return;
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, close);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, close);
  lua_setfield(L, -2, "__close");
}

double *salta_l_scratch(lua_State *L, int n) {
  return lua_newuserdatauv(L, sizeof(double) * (size_t)(n > 0 ? n : 1), 0);
}

double salta_l_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the model userdata ------------------------------------------------- */

#define POLL_SECONDS 0.02   /* a watch's poll is a stat: not at every call */

/* Swaps the model at idx to its watched build's kernels once they have
** landed (the watch ends then, as when they cannot be loaded: the model
** keeps its kernels). */
static void take_landed(lua_State *L, int idx, salta_model_ud *m) {
  salta_jit_ud *w;
  double now;
  int r;
  if (lua_getiuservalue(L, idx, 2) != LUA_TUSERDATA || (now = salta_l_now()) < m->next_poll) {
    lua_pop(L, 1);
    return;
  }
  m->next_poll = now + POLL_SECONDS;
  w = luaL_checkudata(L, -1, SALTA_JIT_MT);
  if ((r = w->owner ? salta_jit_cc_poll(w->owner) : SALTA_EINPUT) == 0) {
    lua_pop(L, 1);
    return;
  }
  if (r == 1 && (w->def = salta_jit_def(w->owner)) && salta_model_swap_def(m->model, w->def) == SALTA_OK) {
    if (lua_getiuservalue(L, idx, 3) != LUA_TTABLE) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_setiuservalue(L, idx, 3);
    }
    lua_getiuservalue(L, idx, 1);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, idx, 1);
  }
  lua_pop(L, 1);
  lua_pushnil(L);
  lua_setiuservalue(L, idx, 2);
}

/* A model whose compiled code (its user value) was closed is closed too:
** its kernels are gone. */
salta_model_ud *salta_l_checkmodel(lua_State *L, int idx) {
  salta_model_ud *m = luaL_checkudata(L, idx, SALTA_MODEL_MT);
  const salta_jit_ud *j;
  if (!m->model) salta_l_error(L, "salta: the model is closed");
  idx = lua_absindex(L, idx);
  take_landed(L, idx, m);
  lua_getiuservalue(L, idx, 1);
  j = luaL_testudata(L, -1, SALTA_JIT_MT);
  if (j && !j->def) {
    salta_model_free(&m->model);
    salta_l_error(L, "salta: the model's compiled code is closed");
  }
  lua_pop(L, 1);
  return m;
}

/* ---- the jit userdata --------------------------------------------------- */

static int jit_release(lua_State *L) {
  salta_jit_ud *j = luaL_checkudata(L, 1, SALTA_JIT_MT);
  if (j->release && j->owner) j->release(j->owner);
  j->owner = NULL;
  j->def = NULL;
  j->release = NULL;
  return 0;
}

static int jit_tostring(lua_State *L) {
  salta_jit_ud *j = luaL_checkudata(L, 1, SALTA_JIT_MT);
  if (j->def) lua_pushfstring(L, "salta.jit(%s, model '%s')", j->backend, j->def->name);
  else if (j->owner) lua_pushfstring(L, "salta.jit(%s, awaiting a background build)", j->backend);
  else lua_pushstring(L, "salta.jit(closed)");
  return 1;
}

salta_jit_ud *salta_jit_push(lua_State *L) {
  salta_jit_ud *j = lua_newuserdatauv(L, sizeof *j, 0);
  memset(j, 0, sizeof *j);
  if (luaL_newmetatable(L, SALTA_JIT_MT)) {
    lua_pushcfunction(L, jit_release);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, jit_release);
    lua_setfield(L, -2, "__close");
    lua_pushcfunction(L, jit_tostring);
    lua_setfield(L, -2, "__tostring");
  }
  lua_setmetatable(L, -2);
  return j;
}

