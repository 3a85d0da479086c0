/*
** lsim.c -- model:simulate_raw{...}: runs the engine's simulation and
** returns plain Lua tables (columns per variable).
*/
#include <lua.h>
#include <lauxlib.h>
#include <limits.h>
#include <string.h>

#include "lcore.h"

/* A table of arrays, one per variable, over the stored outputs/steps. */
static void push_columns(lua_State *L, int nvar, int nrow, const double *(*row)(void *, int),
                         void *ctx, int offset) {
  int i, k;
  lua_createtable(L, nvar, 0);
  for (i = 0; i < nvar; ++i) {
    lua_createtable(L, nrow, 0);
    for (k = 0; k < nrow; ++k) {
      lua_pushnumber(L, row(ctx, k)[offset + i]);
      lua_rawseti(L, -2, k + 1);
    }
    lua_rawseti(L, -2, i + 1);
  }
}

typedef struct cols { salta_sim *sim; int which; } cols;

static const double *out_row(void *ctx, int k) {
  cols *c = ctx;
  const double *x, *y;
  salta_sim_out(c->sim, k, NULL, &x, NULL, &y);
  return c->which ? y : x;   /* x and z are contiguous: [x; z] */
}

static const double *step_row(void *ctx, int k) {
  cols *c = ctx;
  const double *x;
  salta_sim_step(c->sim, k, NULL, &x, NULL);
  return x;
}

static void set_long(lua_State *L, const char *k, long v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}

static void push_events(lua_State *L, salta_sim *sim, const salta_model_def *d) {
  int k, n = salta_sim_nevents(sim);
  lua_createtable(L, n, 0);
  for (k = 0; k < n; ++k) {
    salta_event_record r;
    salta_sim_event(sim, k, &r);
    lua_createtable(L, 0, 11);
    lua_pushnumber(L, r.t); lua_setfield(L, -2, "t");
    set_long(L, "index", r.event + 1);
    lua_pushstring(L, d->e_names[r.event]); lua_setfield(L, -2, "name");
    set_long(L, "group", r.group + 1);
    set_long(L, "group_size", r.group_size);
    set_long(L, "cascade", r.cascade);
    lua_pushnumber(L, r.rate); lua_setfield(L, -2, "rate");
    lua_pushnumber(L, r.rate_scale); lua_setfield(L, -2, "rate_scale");
    salta_l_pushvec(L, r.x_minus, d->nx); lua_setfield(L, -2, "x_minus");
    salta_l_pushvec(L, r.z_minus, d->nz); lua_setfield(L, -2, "z_minus");
    salta_l_pushvec(L, r.x_plus, d->nx); lua_setfield(L, -2, "x_plus");
    salta_l_pushvec(L, r.z_plus, d->nz); lua_setfield(L, -2, "z_plus");
    lua_rawseti(L, -2, k + 1);
  }
}

void salta_l_pushstats(lua_State *L, const salta_sim_stats *stats) {
  const salta_sim_stats st = *stats;
  lua_createtable(L, 0, 8);
  set_long(L, "steps", st.steps);
  set_long(L, "residual_evals", st.res_evals);
  set_long(L, "jacobian_evals", st.jac_evals);
  set_long(L, "guard_evals", st.guard_evals);
  set_long(L, "newton_iters", st.newton_iters);
  set_long(L, "newton_conv_fails", st.newton_conv_fails);
  set_long(L, "error_test_fails", st.err_test_fails);
  set_long(L, "algebraic_newton_iters", st.alg_newton_iters);
  set_long(L, "events", st.events);
  lua_pushstring(L, st.linear_solver == SALTA_LS_KLU ? "klu" : st.linear_solver == SALTA_LS_DENSE ? "dense" : "none");
  lua_setfield(L, -2, "linear_solver");
  lua_pushstring(L, st.method == SALTA_METHOD_ERK ? "erk" : "bdf");
  lua_setfield(L, -2, "method");
  lua_pushboolean(L, st.stiff_restart);
  lua_setfield(L, -2, "stiff_restart");
  if (st.terminal_event >= 0) {   /* 1-based; the Lua layer names it */
    lua_pushinteger(L, st.terminal_event + 1);
    lua_setfield(L, -2, "terminal_event");
  }
  lua_pushnumber(L, st.t_end);
  lua_setfield(L, -2, "t_end");
}

static void push_result(lua_State *L, salta_sim *sim, const salta_model_def *d) {
  int k, nout = salta_sim_nout(sim), nst = salta_sim_nsteps(sim);
  cols c = {sim, 0};
  lua_createtable(L, 0, 8);
  lua_createtable(L, nout, 0);
  for (k = 0; k < nout; ++k) {
    double t;
    salta_sim_out(sim, k, &t, NULL, NULL, NULL);
    lua_pushnumber(L, t);
    lua_rawseti(L, -2, k + 1);
  }
  lua_setfield(L, -2, "t");
  push_columns(L, d->nx, nout, out_row, &c, 0); lua_setfield(L, -2, "x");
  push_columns(L, d->nz, nout, out_row, &c, d->nx); lua_setfield(L, -2, "z");
  c.which = 1;
  push_columns(L, d->ny, nout, out_row, &c, 0); lua_setfield(L, -2, "y");
  push_events(L, sim, d); lua_setfield(L, -2, "events");
  if (salta_sim_out_sens(sim, 0, NULL, NULL) == SALTA_OK) {
    lua_createtable(L, nout, 0);
    for (k = 0; k < nout; ++k) {
      const double *dy;
      salta_sim_out_sens(sim, k, NULL, &dy);
      salta_l_pushvec(L, dy, d->ny * salta_sim_nsens(sim));
      lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "dy");
  }
  {
    salta_sim_stats st;
    salta_sim_stats_get(sim, &st);
    salta_l_pushstats(L, &st);
    lua_setfield(L, -2, "stats");
  }
  if (nst > 0) {
    lua_createtable(L, 0, 3);
    lua_createtable(L, nst, 0);
    for (k = 0; k < nst; ++k) {
      double t;
      salta_sim_step(sim, k, &t, NULL, NULL);
      lua_pushnumber(L, t);
      lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "t");
    push_columns(L, d->nx, nst, step_row, &c, 0); lua_setfield(L, -2, "x");
    push_columns(L, d->nz, nst, step_row, &c, d->nx); lua_setfield(L, -2, "z");
    lua_setfield(L, -2, "steps");
  }
}

static int sim_gc(lua_State *L) {
  salta_sim **s = lua_touserdata(L, 1);
  salta_sim_free(s);
  return 0;
}

/* Reads the simulation options shared by model:simulate_raw and
** loss:configure from the table at idx into o. */
/* A string option among names (index into them), def when absent. */
static int optchoice(lua_State *L, int idx, const char *k, int def, const char *const *names, const char *what) {
  int i = def;
  lua_getfield(L, idx, k);
  if (!lua_isnil(L, -1)) {
    const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    for (i = 0; names[i] && !(v && strcmp(v, names[i]) == 0); ++i) {}
    if (!names[i]) {
      int j;
      const char *given = luaL_tolstring(L, -1, NULL);
      lua_pushfstring(L, "%s: option '%s' must be one of ", what, k);
      for (j = 0; names[j]; ++j) lua_pushfstring(L, "%s\"%s\"", j ? ", " : "", names[j]);
      lua_pushfstring(L, ", got %s", given);
      lua_concat(L, j + 2);
      lua_error(L);
    }
  }
  lua_pop(L, 1);
  return i;
}

void salta_l_sim_options(lua_State *L, int idx, salta_sim_options *o, const char *what) {
  static const char *const methods[] = {"bdf", "erk", "auto", NULL};
  static const char *const solvers[] = {"dense", "klu", "auto", NULL};
  luaL_checktype(L, idx, LUA_TTABLE);
  salta_sim_options_init(o, salta_l_optnumber(L, idx, "t0", 0, what), salta_l_optnumber(L, idx, "tf", 1, what));
  o->rtol = salta_l_optnumber(L, idx, "rtol", o->rtol, what);
  o->atol = salta_l_optnumber(L, idx, "atol", o->atol, what);
  o->max_step = salta_l_optnumber(L, idx, "max_step", 0, what);
  o->init_step = salta_l_optnumber(L, idx, "init_step", 0, what);
  o->max_order = (int)salta_l_optint(L, idx, "max_order", 0, 1, 5, what);
  o->max_events = (int)salta_l_optint(L, idx, "max_events", o->max_events, 0, INT_MAX, what);
  o->zeno_count = (int)salta_l_optint(L, idx, "zeno_count", o->zeno_count, 0, INT_MAX, what);
  o->zeno_window = salta_l_optnumber(L, idx, "zeno_window", o->zeno_window, what);
  o->max_steps = (long)salta_l_optint(L, idx, "max_steps", o->max_steps, 1, LONG_MAX, what);
  o->method = optchoice(L, idx, "method", SALTA_METHOD_AUTO, methods, what);
  o->linear_solver = optchoice(L, idx, "linear_solver", SALTA_LS_AUTO, solvers, what);
}

/* simulate_raw(opts, p, x0|nil, times) -> result | nil, message, partial */
int salta_l_model_simulate(lua_State *L) {
  salta_model *m = salta_l_checkmodel(L, 1)->model;
  const salta_model_def *d = salta_model_def_get(m);
  salta_sim_options o;
  salta_sim **sim;
  double *p, *x0 = NULL, *times, *atol = NULL;
  int nt, st, *sens_dirs = NULL, sens_n = 0;
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_pushfstring(L, "model '%s': simulate", d->name);
  salta_l_sim_options(L, 2, &o, lua_tostring(L, -1));
  lua_getfield(L, 2, "record_steps");
  o.record_steps = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, 2, "atol_vec");
  if (!lua_isnil(L, -1)) {
    atol = salta_l_scratch(L, d->nx + d->nz);
    salta_l_checkvec(L, lua_absindex(L, -2), atol, d->nx + d->nz, "atol");
    o.atol_vec = atol;
  }
  lua_getfield(L, 2, "sens");   /* directions, as salta_sim_set_sens takes them */
  if (!lua_isnil(L, -1)) {
    int k, ns = (int)luaL_len(L, -1);
    int *dirs = lua_newuserdatauv(L, sizeof(int) * (size_t)(ns + 1), 0);
    for (k = 0; k < ns; ++k) {
      lua_geti(L, -2, k + 1);
      dirs[k] = (int)luaL_checkinteger(L, -1);
      lua_pop(L, 1);
    }
    sens_dirs = dirs;
    sens_n = ns;
  }
  p = salta_l_scratch(L, d->np);
  salta_l_checkvec(L, 3, p, d->np, "params");
  if (!lua_isnoneornil(L, 4)) {
    x0 = salta_l_scratch(L, d->nx);
    salta_l_checkvec(L, 4, x0, d->nx, "x0");
  }
  nt = (int)luaL_len(L, 5);
  times = salta_l_scratch(L, nt);
  salta_l_checkvec(L, 5, times, nt, "times");
  sim = lua_newuserdatauv(L, sizeof *sim, 0);   /* freed by __gc even on error */
  *sim = NULL;
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, sim_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  if ((st = salta_sim_create(sim, m))) return salta_l_raise(L, st, "out of memory");
  if (sens_n > 0 && (st = salta_sim_set_sens(*sim, sens_dirs, sens_n))) return salta_l_raise(L, st, salta_sim_errmsg(*sim));
  st = salta_sim_run(*sim, &o, p, x0, times, nt);
  if (st) {
    luaL_pushfail(L);
    salta_l_pusherror(L, st, salta_sim_errmsg(*sim));
    push_result(L, *sim, d);
    salta_sim_free(sim);
    return 3;
  }
  push_result(L, *sim, d);
  salta_sim_free(sim);
  return 1;
}
