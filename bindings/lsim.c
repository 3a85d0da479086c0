/*
** lsim.c -- model:simulate_raw{...}: runs the engine's simulation and
** returns plain Lua tables (columns per variable).
*/
#include <lua.h>
#include <lauxlib.h>
#include <string.h>

#include "lcore.h"

/* The simulation of one simulate_raw call, freed by __gc should it raise. */
#define SALTA_SIM_RUN_MT "salta.sim_run"

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
    salta_event_sens es;
    salta_sim_event(sim, k, &r);
    lua_createtable(L, 0, 12);
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
    if (salta_sim_nsens(sim) > 0 && salta_sim_event_sens(sim, k, &es) == SALTA_OK) {
      salta_l_pushvec(L, es.tau_p, salta_sim_nsens(sim));
      lua_setfield(L, -2, "tau_p");
    }
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
    const double *dt_end;
    if (salta_sim_nsens(sim) > 0 && salta_sim_t_end_sens(sim, &dt_end) == SALTA_OK) {
      salta_l_pushvec(L, dt_end, salta_sim_nsens(sim));
      lua_setfield(L, -2, "t_end_p");
    }
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
  salta_sim **s = luaL_checkudata(L, 1, SALTA_SIM_RUN_MT);
  salta_sim_free(s);
  return 0;
}

/* ---- the declared options (salta_sim_option_info) ------------------------ */

/* The index of the string on top among i's choices; an error naming them
** otherwise. */
static int choice(lua_State *L, const salta_option_info *i, const char *what) {
  const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
  int k, j;
  for (k = 0; i->choices[k] && !(v && strcmp(v, i->choices[k]) == 0); ++k) {}
  if (i->choices[k]) return k;
  v = luaL_tolstring(L, -1, NULL);
  lua_pushfstring(L, "%s: option '%s' must be one of ", what, i->name);
  for (j = 0; i->choices[j]; ++j) lua_pushfstring(L, "%s\"%s\"", j ? ", " : "", i->choices[j]);
  lua_pushfstring(L, ", got %s", v);
  lua_concat(L, j + 2);
  return lua_error(L);
}

/* The per-unknown form of atol on top, an array of nvec numbers, into a
** scratch vector that o->atol_vec borrows, left on the stack below it. */
static void read_vector(lua_State *L, salta_sim_options *o, int nvec) {
  double *v = salta_l_scratch(L, nvec);
  lua_insert(L, -2);
  salta_l_checkvec(L, lua_gettop(L), v, nvec, "atol");
  o->atol_vec = v;
}

/* Option i from the value on top of the stack into o. */
static void read_option(lua_State *L, const salta_option_info *i, salta_sim_options *o, const char *what,
                        int nvec) {
  char err[256];
  double v;
  if (i->type == SALTA_OPTION_BOOLEAN) {
    v = lua_toboolean(L, -1);
  } else if (i->type == SALTA_OPTION_CHOICE) {
    v = choice(L, i, what);
  } else if ((i->flags & SALTA_OPTION_PER_UNKNOWN) && nvec > 0 && lua_istable(L, -1)) {
    read_vector(L, o, nvec);
    return;
  } else {
    if (lua_type(L, -1) != LUA_TNUMBER)
      salta_l_error(L, "%s: option '%s' must be a number, got %s", what, i->name, luaL_typename(L, -1));
    v = lua_tonumber(L, -1);
  }
  if (salta_sim_options_set(o, i->name, v, err, sizeof err)) salta_l_error(L, "%s: %s", what, err);
}

void salta_l_sim_options(lua_State *L, int idx, salta_sim_options *o, const char *what, int scope, int nvec) {
  int k, n = salta_sim_option_count();
  idx = lua_absindex(L, idx);
  luaL_checktype(L, idx, LUA_TTABLE);
  salta_sim_options_init(o, salta_l_optnumber(L, idx, "t0", 0, what), salta_l_optnumber(L, idx, "tf", 1, what));
  for (k = 0; k < n; ++k) {
    const salta_option_info *i = salta_sim_option_info(k);
    if ((i->flags & SALTA_OPTION_INTERVAL) || (scope == SALTA_L_LOSS && (i->flags & SALTA_OPTION_SIM_ONLY)) ||
        (scope == SALTA_L_SIMULATE && (i->flags & SALTA_OPTION_LOSS_ONLY)))
      continue;
    lua_getfield(L, idx, i->name);
    if (!lua_isnil(L, -1)) read_option(L, i, o, what, nvec);
    lua_pop(L, 1);
  }
}

static void set_bool(lua_State *L, const char *k, int v) {
  lua_pushboolean(L, v);
  lua_setfield(L, -2, k);
}

/* A declared value as Lua sees it: an integer, a choice's name, a boolean. */
static void push_value(lua_State *L, const salta_option_info *i, double v) {
  lua_Integer iv;
  if (i->type == SALTA_OPTION_CHOICE) lua_pushstring(L, i->choices[(int)v]);
  else if (i->type == SALTA_OPTION_BOOLEAN) lua_pushboolean(L, v != 0);
  else if (i->type == SALTA_OPTION_INTEGER && lua_numbertointeger(v, &iv)) lua_pushinteger(L, iv);
  else lua_pushnumber(L, v);
}

static void push_info(lua_State *L, const salta_option_info *i) {
  static const char *const types[] = {"number", "integer", "boolean", "choice"};
  lua_createtable(L, 0, 12);
  lua_pushstring(L, i->name); lua_setfield(L, -2, "name");
  lua_pushstring(L, types[i->type]); lua_setfield(L, -2, "type");
  if (!(i->flags & SALTA_OPTION_INTERVAL)) { push_value(L, i, i->def); lua_setfield(L, -2, "default"); }
  if (i->def_text) { lua_pushstring(L, i->def_text); lua_setfield(L, -2, "default_text"); }
  if (i->type == SALTA_OPTION_NUMBER || i->type == SALTA_OPTION_INTEGER) {
    lua_createtable(L, 4, 0);
    push_value(L, i, i->lo); lua_rawseti(L, -2, 1);
    push_value(L, i, i->hi); lua_rawseti(L, -2, 2);
    lua_pushboolean(L, i->lo_open); lua_rawseti(L, -2, 3);
    lua_pushboolean(L, i->hi_open); lua_rawseti(L, -2, 4);
    lua_setfield(L, -2, "range");
  }
  if (i->choices) {
    int k;
    lua_newtable(L);
    for (k = 0; i->choices[k]; ++k) { lua_pushstring(L, i->choices[k]); lua_rawseti(L, -2, k + 1); }
    lua_setfield(L, -2, "choices");
  }
  lua_pushstring(L, i->help); lua_setfield(L, -2, "help");
  set_bool(L, "interval", i->flags & SALTA_OPTION_INTERVAL);
  set_bool(L, "span", i->flags & SALTA_OPTION_SPAN);
  set_bool(L, "per_unknown", i->flags & SALTA_OPTION_PER_UNKNOWN);
  set_bool(L, "sim_only", i->flags & SALTA_OPTION_SIM_ONLY);
  set_bool(L, "loss_only", i->flags & SALTA_OPTION_LOSS_ONLY);
}

/* sim_options() -> the declared options, in order: { name, type ("number",
** "integer", "boolean", "choice"), default, default_text, range = { lo,
** hi, lo_open, hi_open }, choices, help, interval, span, per_unknown,
** sim_only, loss_only } each */
int salta_l_sim_option_list(lua_State *L) {
  int k, n = salta_sim_option_count();
  lua_createtable(L, n, 0);
  for (k = 0; k < n; ++k) {
    push_info(L, salta_sim_option_info(k));
    lua_rawseti(L, -2, k + 1);
  }
  return 1;
}

/* sim_options_resolve(opts [, "loss"]) -> each declared option's value
** as the engine would run with it, read from opts as a simulation (or a
** loss) reads them */
int salta_l_sim_options_resolve(lua_State *L) {
  static const char *const scopes[] = {"simulate", "loss", NULL};
  salta_sim_options o;
  int k, n = salta_sim_option_count(), scope = luaL_checkoption(L, 2, "simulate", scopes);
  salta_l_sim_options(L, 1, &o, "sim_options_resolve", scope == 1 ? SALTA_L_LOSS : SALTA_L_SIMULATE, 0);
  lua_createtable(L, 0, n);
  for (k = 0; k < n; ++k) {
    const salta_option_info *i = salta_sim_option_info(k);
    double v = 0;
    salta_sim_options_get(&o, i->name, &v);
    push_value(L, i, v);
    lua_setfield(L, -2, i->name);
  }
  return 1;
}

/* simulate_raw(opts, p, x0|nil, times) -> result | nil, message, partial */
int salta_l_model_simulate(lua_State *L) {
  salta_model *m = salta_l_checkmodel(L, 1)->model;
  const salta_model_def *d = salta_model_def_get(m);
  salta_sim_options o;
  salta_sim **sim;
  double *p, *x0 = NULL, *times;
  int nt, st, *sens_dirs = NULL, sens_n = 0;
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_pushfstring(L, "model '%s': simulate", d->name);
  salta_l_sim_options(L, 2, &o, lua_tostring(L, -1), SALTA_L_SIMULATE, d->nx + d->nz);
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
  luaL_setmetatable(L, SALTA_SIM_RUN_MT);
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

void salta_l_open_sim(lua_State *L) {
  static const luaL_Reg none[] = {{NULL, NULL}};
  salta_l_newclass(L, SALTA_SIM_RUN_MT, none, sim_gc);
  lua_pop(L, 1);
}
