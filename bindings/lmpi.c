/*
** lmpi.c -- salta.mpi_core: the few MPI collectives salta's Lua layer
** needs (rank, size, element-wise sum, max, string broadcast), over
** Debian's OpenMPI. A separate module, built only where mpi.h is found, so
** that the engine, the core module and the host stay free of MPI.
**
** MPI is initialised when the module is loaded and finalised when the Lua
** state closes (the __gc of a sentinel kept in the registry).
*/
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "lauxlib.h"
#include "lua.h"

#define SENTINEL "salta.mpi_core.sentinel"

/* Every call's status: an MPI error becomes a Lua error naming the call. */
static void check(lua_State *L, int rc, const char *what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    luaL_error(L, "salta.mpi: %s failed: %s", what, msg);
  }
}

static int l_rank(lua_State *L) {
  int r = 0;
  check(L, MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
  lua_pushinteger(L, r);
  return 1;
}

static int l_size(lua_State *L) {
  int n = 1;
  check(L, MPI_Comm_size(MPI_COMM_WORLD, &n), "MPI_Comm_size");
  lua_pushinteger(L, n);
  return 1;
}

/* allreduce_sum(xs): a new array, the element-wise sum over the ranks
** (every rank passes arrays of one length). */
static int l_allreduce_sum(lua_State *L) {
  lua_Integer n, k;
  double *buf;
  luaL_checktype(L, 1, LUA_TTABLE);
  n = luaL_len(L, 1);
  buf = lua_newuserdatauv(L, sizeof(double) * (size_t)(n + 1), 0);
  for (k = 0; k < n; ++k) {
    lua_geti(L, 1, k + 1);
    buf[k] = luaL_checknumber(L, -1);
    lua_pop(L, 1);
  }
  check(L, MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  lua_createtable(L, (int)n, 0);
  for (k = 0; k < n; ++k) {
    lua_pushnumber(L, buf[k]);
    lua_rawseti(L, -2, k + 1);
  }
  return 1;
}

static int l_allreduce_max(lua_State *L) {
  double v = luaL_checknumber(L, 1);
  check(L, MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  lua_pushnumber(L, v);
  return 1;
}

/* bcast_string(s | nil, root): root's string (nil when root passes nil)
** on every rank. */
static int l_bcast_string(lua_State *L) {
  int root = (int)luaL_checkinteger(L, 2), me = 0;
  long len = -1;
  char *buf;
  check(L, MPI_Comm_rank(MPI_COMM_WORLD, &me), "MPI_Comm_rank");
  if (me == root && lua_isstring(L, 1)) len = (long)luaL_len(L, 1);
  check(L, MPI_Bcast(&len, 1, MPI_LONG, root, MPI_COMM_WORLD), "MPI_Bcast");
  if (len < 0) {
    lua_pushnil(L);
    return 1;
  }
  buf = lua_newuserdatauv(L, (size_t)len + 1, 0);
  if (me == root) memcpy(buf, lua_tostring(L, 1), (size_t)len);
  check(L, MPI_Bcast(buf, (int)len, MPI_CHAR, root, MPI_COMM_WORLD), "MPI_Bcast");
  lua_pushlstring(L, buf, (size_t)len);
  return 1;
}

static int l_finalize(lua_State *L) {
  int done = 0;
  (void)L;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();
  return 0;
}

int luaopen_salta_mpi_core(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"rank", l_rank},
      {"size", l_size},
      {"allreduce_sum", l_allreduce_sum},
      {"allreduce_max", l_allreduce_max},
      {"bcast_string", l_bcast_string},
      {NULL, NULL}};
  int ready = 0;
  /* Lua loads this module with RTLD_LOCAL; OpenMPI's plugins look for
  ** libmpi's symbols globally */
  dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  MPI_Initialized(&ready);
  if (!ready) check(L, MPI_Init(NULL, NULL), "MPI_Init");
  if (luaL_newmetatable(L, SENTINEL)) {
    lua_pushcfunction(L, l_finalize);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  lua_newuserdatauv(L, 1, 0);
  luaL_setmetatable(L, SENTINEL);
  lua_setfield(L, LUA_REGISTRYINDEX, SENTINEL);
  luaL_newlib(L, fns);
  return 1;
}
