/*
** lmpi.c -- salta.mpi_core: the few MPI collectives salta's Lua layer
** needs (rank, size, element-wise sum, max, string broadcast), over
** Debian's OpenMPI. A separate module, built only where mpi.h is found, so
** that the engine, the core module and the host stay free of MPI.
**
** MPI is initialised when the module is loaded and ended when the process
** exits: finalised on exit status 0, aborted (MPI_Abort: every rank of the
** job ends) on any other. A rank that fails must not wait in MPI_Finalize
** while the others wait for it in a collective, and neither lua.c nor
** lua_close tells a finaliser whether the script failed; exit() does.
*/
#define _GNU_SOURCE   /* dladdr, on_exit */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "lauxlib.h"
#include "lua.h"

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

/* abort([code]): ends every rank of the job with status code (default 1):
** for a host that reports an uncaught error, so that the other ranks do
** not wait for this one in a collective. */
static int l_abort(lua_State *L) {
  int code = (int)luaL_optinteger(L, 1, 1);
  fflush(NULL);   /* MPI_Abort does not flush this rank's output */
  MPI_Abort(MPI_COMM_WORLD, code != 0 ? code : 1);
  return 0;
}

static int initialised_here = 0;   /* MPI_Init was ours: so is MPI_Finalize */

static void at_exit(int status, void *arg) {
  int ready = 0, done = 0;
  (void)arg;
  MPI_Initialized(&ready);
  MPI_Finalized(&done);
  if (!ready || done) return;
  if (status != 0) {
    fflush(NULL);
    MPI_Abort(MPI_COMM_WORLD, status);
    return;   /* not finalising: mpirun ends the job on the non-zero exit */
  }
  if (initialised_here) MPI_Finalize();
}

/* The exit handler runs after lua_close has dlclosed this module: keeps
** its code mapped. 0 on success. */
static int pin_module(void) {
  static const char anchor = 0;
  Dl_info info;
  if (dladdr(&anchor, &info) == 0 || info.dli_fname == NULL) return -1;
  return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != NULL ? 0 : -1;
}

int luaopen_salta_mpi_core(lua_State *L) {
  static const luaL_Reg fns[] = {
      {"rank", l_rank},
      {"size", l_size},
      {"allreduce_sum", l_allreduce_sum},
      {"allreduce_max", l_allreduce_max},
      {"bcast_string", l_bcast_string},
      {"abort", l_abort},
      {NULL, NULL}};
  static int hooked = 0;
  int ready = 0;
  /* Lua loads this module with RTLD_LOCAL; OpenMPI's plugins look for
  ** libmpi's symbols globally */
  dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  if (!hooked) {
    if (pin_module() != 0 || on_exit(at_exit, NULL) != 0)
      return luaL_error(L, "salta.mpi: cannot install the exit handler (MPI_Finalize or MPI_Abort)");
    hooked = 1;
  }
  MPI_Initialized(&ready);
  if (!ready) {
    check(L, MPI_Init(NULL, NULL), "MPI_Init");
    initialised_here = 1;
  }
  luaL_newlib(L, fns);
  return 1;
}
