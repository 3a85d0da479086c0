/*
** lloss.c -- the loss userdata of salta.core: a thin wrapper of
** salta_loss; argument shapes are checked here, meaning in lua/salta/lsq.lua.
*/
#include <lua.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lcore.h"

#define SALTA_LOSS_MT "salta.loss"

typedef struct loss_ud { salta_loss *loss; int np, nx, ns, nres, ne, nout; } loss_ud;

/* The loss borrows its model (its user value): a closed model closes it. */
static loss_ud *check_loss(lua_State *L, int idx) {
  loss_ud *u = luaL_checkudata(L, idx, SALTA_LOSS_MT);
  if (!u->loss) salta_l_error(L, "salta: the loss is closed");
  lua_getiuservalue(L, idx, 1);
  if (!luaL_testudata(L, -1, SALTA_MODEL_MT) || !((salta_model_ud *)lua_touserdata(L, -1))->model) {
    salta_loss_free(&u->loss);
    salta_l_error(L, "salta: the loss's model is closed");
  }
  salta_l_checkmodel(L, lua_gettop(L));
  lua_pop(L, 1);
  return u;
}

static int loss_close(lua_State *L) {
  loss_ud *u = luaL_checkudata(L, 1, SALTA_LOSS_MT);
  salta_loss_free(&u->loss);
  return 0;
}

/* Reads an array of integers (as they are). */
static int *check_ints(lua_State *L, int idx, int *n) {
  int k, *v;
  luaL_checktype(L, idx, LUA_TTABLE);
  *n = (int)luaL_len(L, idx);
  v = lua_newuserdatauv(L, sizeof(int) * (size_t)(*n + 1), 0);
  for (k = 0; k < *n; ++k) {
    lua_geti(L, idx, k + 1);
    v[k] = (int)luaL_checkinteger(L, -1);
    lua_pop(L, 1);
  }
  return v;
}

/* core.loss(model, times, outputs (1-based), data (flat, row per time), weights|nil) */
int salta_l_loss_new(lua_State *L) {
  salta_model_ud *m = salta_l_checkmodel(L, 1);
  const salta_model_def *d = salta_model_def_get(m->model);
  int nt, nout, k, st;
  double *times, *data, *weights = NULL;
  int *outputs;
  loss_ud *u;
  nt = (int)luaL_len(L, 2);
  times = salta_l_scratch(L, nt);
  salta_l_checkvec(L, 2, times, nt, "times");
  outputs = check_ints(L, 3, &nout);
  for (k = 0; k < nout; ++k) outputs[k] -= 1;
  data = salta_l_scratch(L, nt * nout);
  salta_l_checkvec(L, 4, data, nt * nout, "data");
  if (!lua_isnoneornil(L, 5)) {
    weights = salta_l_scratch(L, nout);
    salta_l_checkvec(L, 5, weights, nout, "weights");
  }
  u = lua_newuserdatauv(L, sizeof *u, 1);
  u->loss = NULL;
  u->np = d->np;
  u->nx = d->nx;
  u->ns = 0;
  u->ne = d->ne;
  u->nout = nout;
  luaL_setmetatable(L, SALTA_LOSS_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);     /* the model outlives the loss */
  st = salta_loss_create(&u->loss, m->model, times, nt, outputs, nout, data, weights);
  if (st) {
    salta_l_pusherror(L, st, u->loss ? salta_loss_errmsg(u->loss) : "out of memory");
    salta_loss_free(&u->loss);
    return lua_error(L);
  }
  u->nres = salta_loss_nresid(u->loss);
  return 1;
}

/* loss:nresid(): the number of residuals (finite data). */
static int loss_nresid(lua_State *L) {
  lua_pushinteger(L, check_loss(L, 1)->nres);
  return 1;
}

/* loss:datum_weights(w): per-datum weights (flat, row per time). */
static int loss_datum_weights(lua_State *L) {
  loss_ud *u = check_loss(L, 1);
  int n = (int)luaL_len(L, 2);
  double *w = salta_l_scratch(L, n);
  int st;
  salta_l_checkvec(L, 2, w, n, "datum weights");
  if ((st = salta_loss_set_datum_weights(u->loss, w))) return salta_l_raise(L, st, salta_loss_errmsg(u->loss));
  return 0;
}

/* loss:event_data(events (1-based), times, weights|nil): salta_loss_set_event_data */
static int loss_event_data(lua_State *L) {
  loss_ud *u = check_loss(L, 1);
  int n, k, st, *ev = check_ints(L, 2, &n);
  double *t = salta_l_scratch(L, n), *w = NULL;
  for (k = 0; k < n; ++k) ev[k] -= 1;
  salta_l_checkvec(L, 3, t, n, "event times");
  if (!lua_isnoneornil(L, 4)) {
    w = salta_l_scratch(L, n);
    salta_l_checkvec(L, 4, w, n, "event weights");
  }
  if ((st = salta_loss_set_event_data(u->loss, ev, t, w, n))) return salta_l_raise(L, st, salta_loss_errmsg(u->loss));
  u->nres = salta_loss_nresid(u->loss);
  return 0;
}

/* loss:configure{t0, tf, rtol, atol, max_events, ..., blend, free = {dirs}} */
static int loss_configure(lua_State *L) {
  loss_ud *u = check_loss(L, 1);
  salta_sim_options o;
  int st;
  salta_l_sim_options(L, 2, &o, "salta.lsq", SALTA_L_LOSS, 0);   /* a scalar atol: the loss keeps no borrowed arrays */
  if ((st = salta_loss_set_options(u->loss, &o)) ||
      (st = salta_loss_set_blend(u->loss, salta_l_optnumber(L, 2, "blend", 0, "salta.lsq"))))
    return salta_l_raise(L, st, salta_loss_errmsg(u->loss));
  lua_getfield(L, 2, "drop_after_end");
  if ((st = salta_loss_set_drop_after_end(u->loss, lua_toboolean(L, -1))))
    return salta_l_raise(L, st, salta_loss_errmsg(u->loss));
  lua_pop(L, 1);
  lua_getfield(L, 2, "free");
  if (!lua_isnil(L, -1)) {
    int ns, *dirs = check_ints(L, lua_absindex(L, -1), &ns);   /* salta_sim_set_sens's encoding */
    if ((st = salta_loss_set_free(u->loss, dirs, ns))) return salta_l_raise(L, st, salta_loss_errmsg(u->loss));
    u->ns = ns;
  }
  return 0;
}

/* loss:robust(kind, scale): kind "linear", "soft_l1", "huber" or "cauchy"
** (salta_loss_set_robust). */
static int loss_robust(lua_State *L) {
  static const char *const kinds[] = {"linear", "soft_l1", "huber", "cauchy", NULL};
  loss_ud *u = check_loss(L, 1);
  int kind = luaL_checkoption(L, 2, "linear", kinds), st;
  if ((st = salta_loss_set_robust(u->loss, kind, luaL_optnumber(L, 3, 1.0))))
    return salta_l_raise(L, st, salta_loss_errmsg(u->loss));
  return 0;
}

/* loss:event_windows(width, ramp, jumps|nil): jumps flat, ne x nout
** booleans, row per event (salta_loss_set_event_windows). */
static int loss_event_windows(lua_State *L) {
  loss_ud *u = check_loss(L, 1);
  double width = luaL_checknumber(L, 2), ramp = luaL_checknumber(L, 3);
  unsigned char *jumps = NULL;
  int st;
  if (!lua_isnoneornil(L, 4)) {
    int n = (int)luaL_len(L, 4), k;
    if (n != u->ne * u->nout)
      salta_l_error(L, "salta.lsq: the event windows' jumps have %d flags, expected %d (events x outputs)", n,
                    u->ne * u->nout);
    jumps = lua_newuserdatauv(L, (size_t)n + 1, 0);
    for (k = 0; k < n; ++k) {
      lua_geti(L, 4, k + 1);
      jumps[k] = (unsigned char)lua_toboolean(L, -1);
      lua_pop(L, 1);
    }
  }
  if ((st = salta_loss_set_event_windows(u->loss, width, ramp, jumps)))
    return salta_l_raise(L, st, salta_loss_errmsg(u->loss));
  return 0;
}

/* loss:eval(p, x0|nil, what) -> value [, grad] [, resid] [, jac]; what is a
** string of letters: g (gradient), r (residuals), j (Jacobian rows).
** On failure: nil, message. */
static int loss_eval(lua_State *L) {
  loss_ud *u = check_loss(L, 1);
  const char *what = luaL_optstring(L, 4, "");
  int want_g = strchr(what, 'g') != NULL, want_r = strchr(what, 'r') != NULL;
  int want_j = strchr(what, 'j') != NULL, k, i, nret = 1, st;
  double *p = salta_l_scratch(L, u->np), *x0 = NULL, value = 0;
  double *g = want_g ? salta_l_scratch(L, u->ns) : NULL;
  double *r = want_r ? salta_l_scratch(L, u->nres) : NULL;
  double *J = want_j ? salta_l_scratch(L, u->nres * u->ns) : NULL;
  salta_l_checkvec(L, 2, p, u->np, "params");
  if (!lua_isnoneornil(L, 3)) {
    x0 = salta_l_scratch(L, u->nx);
    salta_l_checkvec(L, 3, x0, u->nx, "x0");
  }
  if ((st = salta_loss_eval(u->loss, p, x0, &value, g, r, J))) {
    luaL_pushfail(L);
    salta_l_pusherror(L, st, salta_loss_errmsg(u->loss));
    return 2;
  }
  lua_pushnumber(L, value);
  if (want_g) salta_l_pushvec(L, g, u->ns), ++nret;
  if (want_r) salta_l_pushvec(L, r, u->nres), ++nret;
  if (want_j) {
    lua_createtable(L, u->nres, 0);
    for (k = 0; k < u->nres; ++k) {
      lua_createtable(L, u->ns, 0);
      for (i = 0; i < u->ns; ++i) {
        lua_pushnumber(L, J[(size_t)k * u->ns + i]);
        lua_rawseti(L, -2, i + 1);
      }
      lua_rawseti(L, -2, k + 1);
    }
    ++nret;
  }
  return nret;
}

/* The adjoint's mesh from a Lua integer (0: the integrator's steps): the
** engine checks its range; one beyond an int is refused here, before the
** cast. */
static int check_mesh(lua_State *L, int idx) {
  lua_Integer mesh = luaL_optinteger(L, idx, 0);
  if (mesh < INT_MIN || mesh > INT_MAX)
    salta_l_error(L, "salta.lsq: the adjoint's option 'mesh' is beyond an int, got %I", mesh);
  return (int)mesh;
}

/* Reads p (np) at idx and x0 (nx, or nil: NULL) at idx + 1. */
static void check_point(lua_State *L, const loss_ud *u, int idx, double **p, double **x0) {
  *p = salta_l_scratch(L, u->np);
  salta_l_checkvec(L, idx, *p, u->np, "params");
  *x0 = NULL;
  if (!lua_isnoneornil(L, idx + 1)) {
    *x0 = salta_l_scratch(L, u->nx);
    salta_l_checkvec(L, idx + 1, *x0, u->nx, "x0");
  }
}

/* loss:eval_adjoint(p, x0|nil, mesh_k, want_grad, ida, want_resid) ->
** value [, grad] [, resid] | nil, msg */
static int loss_eval_adjoint(lua_State *L) {
  loss_ud *u = check_loss(L, 1);
  int mesh_k = check_mesh(L, 4), want_g = lua_toboolean(L, 5), want_r = lua_toboolean(L, 7), st, nret = 1;
  double *p, *x0, value = 0, *g = want_g ? salta_l_scratch(L, u->ns) : NULL;
  double *r = want_r ? salta_l_scratch(L, u->nres) : NULL;
  check_point(L, u, 2, &p, &x0);
  if ((st = salta_loss_eval_adjoint_residuals(u->loss, p, x0, mesh_k, !lua_toboolean(L, 6), &value, g, r))) {
    luaL_pushfail(L);
    salta_l_pusherror(L, st, salta_loss_errmsg(u->loss));
    return 2;
  }
  lua_pushnumber(L, value);
  if (want_g) salta_l_pushvec(L, g, u->ns), ++nret;
  if (want_r) salta_l_pushvec(L, r, u->nres), ++nret;
  return nret;
}

/* loss:eval_adjoint_cont(p, x0|nil, want_grad) -> value [, grad] | nil, msg */
static int loss_eval_adjoint_cont(lua_State *L) {
  loss_ud *u = check_loss(L, 1);
  int want_g = lua_toboolean(L, 4), st;
  double *p, *x0, value = 0, *g = want_g ? salta_l_scratch(L, u->ns) : NULL;
  check_point(L, u, 2, &p, &x0);
  if ((st = salta_loss_eval_adjoint_cont(u->loss, p, x0, &value, g))) {
    luaL_pushfail(L);
    salta_l_pusherror(L, st, salta_loss_errmsg(u->loss));
    return 2;
  }
  lua_pushnumber(L, value);
  if (!want_g) return 1;
  salta_l_pushvec(L, g, u->ns);
  return 2;
}

/* loss:route([name]) -> the route of eval's gradient, "sens" or
** "adjoint_cont"; name ("auto", "sens", "adjoint_cont") sets it first. */
static int loss_route(lua_State *L) {
  static const char *const names[] = {"auto", "sens", "adjoint_cont", NULL};
  loss_ud *u = check_loss(L, 1);
  int st;
  if (!lua_isnoneornil(L, 2) &&
      (st = salta_loss_set_route(u->loss, (salta_route)luaL_checkoption(L, 2, NULL, names))))
    return salta_l_raise(L, st, salta_loss_errmsg(u->loss));
  lua_pushstring(L, names[salta_loss_route(u->loss)]);
  return 1;
}

/* Field k of the table at idx, an array of n flags, into out; NULL when absent. */
static const int *read_flags(lua_State *L, int idx, const char *k, int *out, int n) {
  int i, any = lua_getfield(L, idx, k) == LUA_TTABLE;
  for (i = 0; any && i < n; ++i) {
    lua_geti(L, -1, i + 1);
    out[i] = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return any ? out : NULL;
}

/* The same for an array of n numbers. */
static const double *read_numbers(lua_State *L, int idx, const char *k, double *out, int n) {
  int any = lua_getfield(L, idx, k) == LUA_TTABLE;
  if (any) salta_l_checkvec(L, lua_gettop(L), out, n, k);
  lua_pop(L, 1);
  return any ? out : NULL;
}

/* loss:grad_fd(p, x0|nil, {h, richardson, log = {bool...}, floor = {...},
** mesh, ida, error}) -> grad [, err] | nil, msg: salta_loss_grad_fd; mesh
** (nil: the loss itself) differences the adjoint's discrete loss. */
static int loss_grad_fd(lua_State *L) {
  loss_ud *u = check_loss(L, 1);
  salta_fd_options o;
  double *p, *x0, *g = salta_l_scratch(L, u->ns), *err = NULL;
  int st, *log = lua_newuserdatauv(L, sizeof(int) * (size_t)(u->ns + 1), 0);
  double *floor = salta_l_scratch(L, u->ns);
  check_point(L, u, 2, &p, &x0);
  luaL_checktype(L, 4, LUA_TTABLE);
  salta_fd_options_init(&o);
  o.h = salta_l_optnumber(L, 4, "h", o.h, "salta.lsq: fd");
  lua_getfield(L, 4, "richardson");
  o.richardson = lua_isnil(L, -1) || lua_toboolean(L, -1);
  o.log = read_flags(L, 4, "log", log, u->ns);
  o.floor = read_numbers(L, 4, "floor", floor, u->ns);
  lua_getfield(L, 4, "mesh");
  if ((o.adjoint = !lua_isnil(L, -1))) o.mesh_k = check_mesh(L, lua_gettop(L));
  lua_getfield(L, 4, "ida");
  o.consistent = !lua_toboolean(L, -1);
  lua_getfield(L, 4, "error");
  if (lua_toboolean(L, -1)) err = salta_l_scratch(L, u->ns);
  if ((st = salta_loss_grad_fd(u->loss, p, x0, &o, g, err))) {
    luaL_pushfail(L);
    salta_l_pusherror(L, st, salta_loss_errmsg(u->loss));
    return 2;
  }
  salta_l_pushvec(L, g, u->ns);
  if (!err) return 1;
  salta_l_pushvec(L, err, u->ns);
  return 2;
}

/* The check's route and verdict names, as loss:check_gradient writes them. */
static const char *const ROUTE_NAMES[SALTA_CHECK_NROUTES] = {"sens", "sens, erk", "sens, bdf", "adjoint",
                                                             "adjoint, erk", "adjoint, bdf", "adjoint_cont", "fd"};
static const char *const VERDICT_NAMES[] = {"ok", "ill-conditioned", "uncertain", "inconclusive", "disagree",
                                            "not differentiable", "refused", "skipped"};

/* The routes named in the array at idx (nil: 0, every route). */
static unsigned check_routes(lua_State *L, int idx) {
  unsigned bits = 0;
  int k, r, n;
  if (lua_isnil(L, idx)) return 0;
  luaL_checktype(L, idx, LUA_TTABLE);
  n = (int)luaL_len(L, idx);
  for (k = 1; k <= n; ++k) {
    const char *name = (lua_geti(L, idx, k), luaL_checkstring(L, -1));
    for (r = 0; r < SALTA_CHECK_NROUTES && strcmp(name, ROUTE_NAMES[r]) != 0; ++r) {}
    if (r == SALTA_CHECK_NROUTES) salta_l_error(L, "salta.lsq: check: no route '%s'", name);
    bits |= 1u << r;
    lua_pop(L, 1);
  }
  return bits;
}

/* A route's outcome as a table: name, verdict, worst, carried, own, grad
** (unless refused), error (its message, when refused). */
static void push_route(lua_State *L, int r, const salta_check_result *res, const double *g, int ns) {
  lua_createtable(L, 0, 7);
  lua_pushstring(L, ROUTE_NAMES[r]);
  lua_setfield(L, -2, "name");
  lua_pushstring(L, VERDICT_NAMES[res->verdict]);
  lua_setfield(L, -2, "verdict");
  if (res->status) {
    lua_pushstring(L, res->message);
    lua_setfield(L, -2, "error");
    return;
  }
  lua_pushnumber(L, res->worst);
  lua_setfield(L, -2, "worst");
  lua_pushnumber(L, res->carried);
  lua_setfield(L, -2, "carried");
  lua_pushnumber(L, res->own);
  lua_setfield(L, -2, "own");
  salta_l_pushvec(L, g, ns);
  lua_setfield(L, -2, "grad");
}

/* loss:check(p, x0|nil, {tol, h, rtol_ref, routes = {names}}) -> {verdict,
** reference, reference_err, routes = {outcome...}} | nil, msg:
** salta_loss_check (the skipped routes left out). */
static int loss_check(lua_State *L) {
  loss_ud *u = check_loss(L, 1);
  salta_check_options o;
  salta_check_result res[SALTA_CHECK_NROUTES];
  salta_verdict verdict;
  double *p, *x0, *ref = salta_l_scratch(L, u->ns), *err = salta_l_scratch(L, u->ns);
  double *g = salta_l_scratch(L, SALTA_CHECK_NROUTES * u->ns);
  int st, r, n = 0;
  check_point(L, u, 2, &p, &x0);
  luaL_checktype(L, 4, LUA_TTABLE);
  salta_check_options_init(&o);
  o.tol = salta_l_optnumber(L, 4, "tol", 0, "salta.lsq: check");
  o.h = salta_l_optnumber(L, 4, "h", 0, "salta.lsq: check");
  o.rtol_ref = salta_l_optnumber(L, 4, "rtol_ref", 0, "salta.lsq: check");
  lua_getfield(L, 4, "routes");
  o.routes = check_routes(L, lua_gettop(L));
  if ((st = salta_loss_check(u->loss, p, x0, &o, ref, err, g, res, &verdict))) {
    luaL_pushfail(L);
    salta_l_pusherror(L, st, salta_loss_errmsg(u->loss));
    return 2;
  }
  lua_createtable(L, 0, 4);
  lua_pushstring(L, VERDICT_NAMES[verdict]);
  lua_setfield(L, -2, "verdict");
  salta_l_pushvec(L, ref, u->ns);
  lua_setfield(L, -2, "reference");
  salta_l_pushvec(L, err, u->ns);
  lua_setfield(L, -2, "reference_err");
  lua_createtable(L, SALTA_CHECK_NROUTES, 0);
  for (r = 0; r < SALTA_CHECK_NROUTES; ++r)
    if (res[r].verdict != SALTA_VERDICT_SKIPPED) {
      push_route(L, r, &res[r], g + (size_t)r * u->ns, u->ns);
      lua_rawseti(L, -2, ++n);
    }
  lua_setfield(L, -2, "routes");
  return 1;
}

/* An array argument: its numbers in scratch; n < 0: any length, put in
** *len, else exactly n. */
static double *vec_arg(lua_State *L, int idx, int n, int *len, const char *what) {
  double *v;
  luaL_checktype(L, idx, LUA_TTABLE);
  if (n < 0) n = (int)luaL_len(L, idx);
  if (len) *len = n;
  v = salta_l_scratch(L, n);
  salta_l_checkvec(L, idx, v, n, what);
  return v;
}

/* core.check_judge(grad, ref, err, tol, carried|nil, own|nil) -> verdict,
** {bad flags}, worst: salta_check_judge. */
int salta_l_check_judge(lua_State *L) {
  int ns, k;
  double *g, *ref, *err, *carried = NULL, *own = NULL, worst, tol = luaL_checknumber(L, 4);
  unsigned char *bad;
  salta_verdict v;
  lua_settop(L, 6);   /* the scratch below stays clear of the optional arguments */
  g = vec_arg(L, 1, -1, &ns, "grad");
  bad = lua_newuserdatauv(L, (size_t)ns + 1, 0);
  ref = vec_arg(L, 2, ns, NULL, "reference");
  err = vec_arg(L, 3, ns, NULL, "reference error");
  if (!lua_isnoneornil(L, 5)) carried = vec_arg(L, 5, ns, NULL, "carried error");
  if (!lua_isnoneornil(L, 6)) own = vec_arg(L, 6, ns, NULL, "own error");
  v = salta_check_judge(ns, g, ref, err, tol, carried, own, bad, &worst);
  lua_pushstring(L, VERDICT_NAMES[v]);
  lua_createtable(L, ns, 0);
  for (k = 0; k < ns; ++k) {
    lua_pushboolean(L, bad[k]);
    lua_rawseti(L, -2, k + 1);
  }
  lua_pushnumber(L, worst);
  return 3;
}

/* core.carried_error(J (rows), r, r_ref) -> {per component}: salta_carried_error. */
int salta_l_carried_error(lua_State *L) {
  int nres, ns = 0, i;
  double *r, *r_ref, *J, *out;
  lua_settop(L, 3);
  luaL_checktype(L, 1, LUA_TTABLE);
  r = vec_arg(L, 2, -1, &nres, "residuals");
  r_ref = vec_arg(L, 3, nres, NULL, "reference residuals");
  if ((int)luaL_len(L, 1) != nres) salta_l_error(L, "residual Jacobian: expected %d rows, got %d", nres, (int)luaL_len(L, 1));
  if (nres > 0 && lua_geti(L, 1, 1) == LUA_TTABLE) ns = (int)luaL_len(L, -1);   /* the rows' length, from the first */
  J = salta_l_scratch(L, nres * ns);
  out = salta_l_scratch(L, ns);
  for (i = 0; i < nres; ++i) {
    lua_geti(L, 1, i + 1);
    salta_l_checkvec(L, lua_gettop(L), J + (size_t)i * ns, ns, "residual Jacobian row");
    lua_pop(L, 1);
  }
  salta_carried_error(nres, ns, J, r, r_ref, out);
  salta_l_pushvec(L, out, ns);
  return 1;
}

/* loss:stats() -> the statistics of the last evaluation's run */
static int loss_stats(lua_State *L) {
  loss_ud *u = check_loss(L, 1);
  salta_sim_stats st;
  salta_loss_stats_get(u->loss, &st);
  salta_l_pushstats(L, &st);
  return 1;
}

void salta_l_open_loss(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"configure", loss_configure},
    {"datum_weights", loss_datum_weights},
    {"event_data", loss_event_data},
    {"robust", loss_robust},
    {"event_windows", loss_event_windows},
    {"nresid", loss_nresid},
    {"eval", loss_eval},
    {"eval_adjoint", loss_eval_adjoint},
    {"eval_adjoint_cont", loss_eval_adjoint_cont},
    {"route", loss_route},
    {"grad_fd", loss_grad_fd},
    {"check", loss_check},
    {"stats", loss_stats},
    {"close", loss_close},
    {NULL, NULL}
  };
  salta_l_newclass(L, SALTA_LOSS_MT, methods, loss_close);
  lua_pop(L, 1);
}
