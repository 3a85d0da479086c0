/*
** lmodel.c -- the model userdata of salta.core: sizes, names and the
** evaluation API.
*/
#include <lua.h>
#include <lauxlib.h>

#include "lcore.h"
#include "ljit.h"

static const char *const fn_opts[] = {"f", "g", "h", "e", "r", NULL};
static const char *const wrt_opts[] = {"x", "z", "p", "t", NULL};

static int model_close(lua_State *L) {
  salta_model_ud *m = luaL_checkudata(L, 1, SALTA_MODEL_MT);
  salta_model_free(&m->model);
  return 0;
}

static int model_tostring(lua_State *L) {
  salta_model_ud *m = luaL_checkudata(L, 1, SALTA_MODEL_MT);
  const salta_model_def *d = salta_model_def_get(m->model);
  if (!d) lua_pushstring(L, "salta.model(closed)");
  else lua_pushfstring(L, "salta.model '%s' (%d states, %d algebraics, %d parameters, %d outputs, %d events)",
                       d->name, d->nx, d->nz, d->np, d->ny, d->ne);
  return 1;
}

static void set_int(lua_State *L, const char *k, int v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

/* info() -> table of sizes, names, start and nominal values, directions */
static int model_info(lua_State *L) {
  const salta_model_def *d = salta_model_def_get(salta_l_checkmodel(L, 1)->model);
  int j;
  lua_newtable(L);
  lua_pushstring(L, d->name); lua_setfield(L, -2, "name");
  lua_pushstring(L, d->hash); lua_setfield(L, -2, "hash");
  set_int(L, "nx", d->nx); set_int(L, "nz", d->nz); set_int(L, "np", d->np);
  set_int(L, "ny", d->ny); set_int(L, "ne", d->ne); set_int(L, "np_derived", d->np_derived);
  lua_pushboolean(L, d->reduced_dx != NULL); lua_setfield(L, -2, "reduced");
  salta_l_pushnames(L, d->x_names, d->nx); lua_setfield(L, -2, "x_names");
  salta_l_pushnames(L, d->z_names, d->nz); lua_setfield(L, -2, "z_names");
  salta_l_pushnames(L, d->p_names, d->np); lua_setfield(L, -2, "p_names");
  salta_l_pushnames(L, d->y_names, d->ny); lua_setfield(L, -2, "y_names");
  salta_l_pushnames(L, d->e_names, d->ne); lua_setfield(L, -2, "e_names");
  salta_l_pushvec(L, d->x_start, d->nx); lua_setfield(L, -2, "x_start");
  salta_l_pushvec(L, d->z_start, d->nz); lua_setfield(L, -2, "z_start");
  salta_l_pushvec(L, d->p_nominal, d->np); lua_setfield(L, -2, "p_nominal");
  lua_createtable(L, d->ne, 0);
  for (j = 0; j < d->ne; ++j) {
    lua_pushinteger(L, d->e_direction[j]);
    lua_rawseti(L, -2, j + 1);
  }
  lua_setfield(L, -2, "e_dir");
  return 1;
}

/* The point (t, x, z, p) at stack indices idx..idx+3, as scratch arrays. */
typedef struct point { double t, *x, *z, *p; } point;

static point check_point(lua_State *L, int idx, const salta_model_def *d) {
  point pt;
  pt.t = luaL_checknumber(L, idx);
  pt.x = salta_l_scratch(L, d->nx);
  salta_l_checkvec(L, idx + 1, pt.x, d->nx, "x");
  pt.z = salta_l_scratch(L, d->nz);
  if (d->nz > 0 || !lua_isnoneornil(L, idx + 2)) salta_l_checkvec(L, idx + 2, pt.z, d->nz, "z");
  pt.p = salta_l_scratch(L, d->np);
  salta_l_checkvec(L, idx + 3, pt.p, d->np, "p");
  return pt;
}

/* Event index argument (1-based in Lua), required for resets. */
static int check_event(lua_State *L, int idx, int fn, const salta_model_def *d) {
  lua_Integer ev = luaL_optinteger(L, idx, 1);
  if (fn == SALTA_FN_R && (ev < 1 || ev > d->ne))
    salta_l_error(L, "model '%s': no event %d (model has %d)", d->name, (int)ev, d->ne);
  return (int)ev - 1;
}

/* eval(fn, event, t, x, z, p) -> array */
static int model_eval(lua_State *L) {
  salta_model *m = salta_l_checkmodel(L, 1)->model;
  const salta_model_def *d = salta_model_def_get(m);
  int fn = luaL_checkoption(L, 2, NULL, fn_opts);
  int ev = check_event(L, 3, fn, d);
  point pt = check_point(L, 4, d);
  int n = salta_model_rows(m, fn), st;
  double *out = salta_l_scratch(L, n);
  if ((st = salta_model_eval(m, fn, ev, pt.t, pt.x, pt.z, pt.p, out))) return salta_l_raise(L, st, salta_model_errmsg(m));
  salta_l_pushvec(L, out, n);
  return 1;
}

static void push_pattern(lua_State *L, const int *idx, int nnz) {
  int k;
  lua_createtable(L, nnz, 0);
  for (k = 0; k < nnz; ++k) {
    lua_pushinteger(L, idx[k] + 1);
    lua_rawseti(L, -2, k + 1);
  }
}

/* pattern(fn, event, wrt) -> rows, cols (1-based, column-major) */
static int model_pattern(lua_State *L) {
  salta_model *m = salta_l_checkmodel(L, 1)->model;
  int fn = luaL_checkoption(L, 2, NULL, fn_opts);
  int ev = check_event(L, 3, fn, salta_model_def_get(m));
  int wrt = luaL_checkoption(L, 4, NULL, wrt_opts), nnz, st;
  const int *row, *col;
  if ((st = salta_model_pattern(m, fn, ev, wrt, &nnz, &row, &col))) return salta_l_raise(L, st, salta_model_errmsg(m));
  push_pattern(L, row, nnz);
  push_pattern(L, col, nnz);
  return 2;
}

/* jac(fn, event, wrt, t, x, z, p) -> vals (in pattern order) */
static int model_jac(lua_State *L) {
  salta_model *m = salta_l_checkmodel(L, 1)->model;
  const salta_model_def *d = salta_model_def_get(m);
  int fn = luaL_checkoption(L, 2, NULL, fn_opts);
  int ev = check_event(L, 3, fn, d);
  int wrt = luaL_checkoption(L, 4, NULL, wrt_opts), nnz, st;
  point pt = check_point(L, 5, d);
  double *vals;
  if ((st = salta_model_pattern(m, fn, ev, wrt, &nnz, NULL, NULL))) return salta_l_raise(L, st, salta_model_errmsg(m));
  vals = salta_l_scratch(L, nnz);
  if ((st = salta_model_jac(m, fn, ev, wrt, pt.t, pt.x, pt.z, pt.p, vals))) return salta_l_raise(L, st, salta_model_errmsg(m));
  salta_l_pushvec(L, vals, nnz);
  return 1;
}

/* Evaluates fn's value (or its 4 Jacobians) `reps` times; returns seconds
** per repetition. Timing loops live in C so the benchmark measures the
** kernels, not the binding. */
static double time_kernels(salta_model *m, int fn, int jacobians, int reps,
                           const double *x, const double *z, const double *p, double *buf) {
  double t0 = salta_l_now();
  int r, w;
  for (r = 0; r < reps; ++r) {
    if (!jacobians) salta_model_eval(m, fn, 0, 0.5, x, z, p, buf);
    else for (w = 0; w < 4; ++w) salta_model_jac(m, fn, 0, w, 0.5, x, z, p, buf);
  }
  return (salta_l_now() - t0) / reps;
}

/* bench(reps) -> seconds for f; for f, g, h, guards and all their Jacobians */
static int model_bench(lua_State *L) {
  salta_model *m = salta_l_checkmodel(L, 1)->model;
  const salta_model_def *d = salta_model_def_get(m);
  int reps = (int)luaL_optinteger(L, 2, 10000), fn, big = d->nx + d->nz + d->np + d->ny + d->ne + 1;
  double *buf = salta_l_scratch(L, big * big), all = 0;
  double t_f = time_kernels(m, SALTA_FN_F, 0, reps, d->x_start, d->z_start, d->p_nominal, buf);
  for (fn = SALTA_FN_F; fn <= SALTA_FN_E; ++fn)
    all += time_kernels(m, fn, 0, reps, d->x_start, d->z_start, d->p_nominal, buf)
         + time_kernels(m, fn, 1, reps, d->x_start, d->z_start, d->p_nominal, buf);
  lua_pushnumber(L, t_f);
  lua_pushnumber(L, all);
  return 2;
}

/* backend() -> "tcc" | "cc" (the code whose kernels it runs now), and
** whether it awaits a background cc build */
static int model_backend(lua_State *L) {
  const salta_jit_ud *j;
  salta_model *m = salta_l_checkmodel(L, 1)->model;
  lua_getiuservalue(L, 1, 1);
  j = luaL_testudata(L, -1, SALTA_JIT_MT);
  lua_pushstring(L, j && j->backend && j->def == salta_model_def_get(m) ? j->backend : "?");
  lua_pushboolean(L, lua_getiuservalue(L, 1, 2) == LUA_TUSERDATA);
  lua_remove(L, -2);
  return 2;
}

void salta_l_open_model(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"info", model_info},
    {"backend", model_backend},
    {"eval", model_eval},
    {"jac", model_jac},
    {"pattern", model_pattern},
    {"bench", model_bench},
    {"simulate_raw", salta_l_model_simulate},
    {"close", model_close},
    {NULL, NULL}
  };
  salta_l_newclass(L, SALTA_MODEL_MT, methods, model_close);
  lua_pushcfunction(L, model_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
}
