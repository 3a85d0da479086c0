/*
** loptim.c -- the optimisers salta takes from well-kept libraries:
** L-BFGS-B 3.0 (liblbfgsb, reverse communication) and MINPACK's lmder
** (libcminpack, Levenberg-Marquardt). The loops that call the model live
** in lua/salta/optim.lua.
*/
#include <lua.h>
#include <lauxlib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cminpack-1/cminpack.h>

#include "lcore.h"

/* ---- L-BFGS-B ------------------------------------------------------------- */

#define LBFGSB_MT "salta.lbfgsb"

/* L-BFGS-B 3.0's driver, compiled Fortran: hidden string lengths last. */
extern void setulb_(int *n, int *m, double *x, double *l, double *u, int *nbd, double *f,
                    double *g, double *factr, double *pgtol, double *wa, int *iwa, char *task,
                    int *iprint, char *csave, int *lsave, int *isave, double *dsave,
                    size_t task_len, size_t csave_len);

typedef struct lbfgsb {
  int n, m, iprint;
  double f, factr, pgtol;
  double *x, *l, *u, *g, *wa, *dsave;
  int *nbd, *iwa, *isave, lsave[4];
  char task[61], csave[61];
} lbfgsb;

static void set_task(char *dst, const char *text) {
  size_t k = strlen(text);
  memset(dst, ' ', 60);
  memcpy(dst, text, k > 60 ? 60 : k);
  dst[60] = '\0';
}

static int lbfgsb_gc(lua_State *L) {
  lbfgsb *o = luaL_checkudata(L, 1, LBFGSB_MT);
  free(o->x);   /* one block holds every array */
  o->x = NULL;
  return 0;
}

/* core.lbfgsb(x0, lower, upper, m, factr, pgtol): bounds may hold
** -inf/+inf (unbounded on that side). */
static int l_lbfgsb(lua_State *L) {
  int n = (int)luaL_len(L, 1), m = (int)luaL_optinteger(L, 4, 10), i;
  size_t nwa;
  lbfgsb *o;
  double *lo, *hi;
  if (n < 1) return salta_l_error(L, "lbfgsb: no parameters");
  lo = salta_l_scratch(L, n);
  hi = salta_l_scratch(L, n);
  salta_l_checkvec(L, 2, lo, n, "lower");
  salta_l_checkvec(L, 3, hi, n, "upper");
  o = lua_newuserdatauv(L, sizeof *o, 0);
  memset(o, 0, sizeof *o);
  luaL_setmetatable(L, LBFGSB_MT);
  o->n = n;
  o->m = m;
  o->iprint = -1;
  o->factr = luaL_optnumber(L, 5, 1e7);
  o->pgtol = luaL_optnumber(L, 6, 1e-8);
  nwa = 2 * (size_t)m * n + 5 * (size_t)n + 11 * (size_t)m * m + 8 * (size_t)m;
  o->x = malloc(sizeof(double) * (4 * (size_t)n + nwa + 29) + sizeof(int) * (5 * (size_t)n + 44));
  if (!o->x) return salta_l_error(L, "out of memory");
  o->l = o->x + n;
  o->u = o->l + n;
  o->g = o->u + n;
  o->wa = o->g + n;
  o->dsave = o->wa + nwa;
  o->nbd = (int *)(o->dsave + 29);
  o->iwa = o->nbd + n;
  o->isave = o->iwa + 3 * n;
  salta_l_checkvec(L, 1, o->x, n, "x0");
  for (i = 0; i < n; ++i) {
    int has_lo = isfinite(lo[i]), has_hi = isfinite(hi[i]);
    if (has_lo && has_hi && lo[i] > hi[i])
      return salta_l_error(L, "lbfgsb: bound %d: lower %f > upper %f", i + 1, lo[i], hi[i]);
    o->l[i] = has_lo ? lo[i] : 0;
    o->u[i] = has_hi ? hi[i] : 0;
    o->nbd[i] = has_lo ? (has_hi ? 2 : 1) : (has_hi ? 3 : 0);
  }
  set_task(o->task, "START");
  set_task(o->csave, "");
  return 1;
}

/* opt:iterate([f, g]) -> kind, x, message, iterations. kind: "fg" (give f
** and g at x), "new_x" (an iteration ended), "converged", "abnormal",
** "error", "warning". */
static int lbfgsb_iterate(lua_State *L) {
  lbfgsb *o = luaL_checkudata(L, 1, LBFGSB_MT);
  const char *kind;
  int end;
  if (!o->x) return salta_l_error(L, "lbfgsb: closed");
  if (!lua_isnoneornil(L, 2)) {
    o->f = luaL_checknumber(L, 2);
    salta_l_checkvec(L, 3, o->g, o->n, "gradient");
  }
  setulb_(&o->n, &o->m, o->x, o->l, o->u, o->nbd, &o->f, o->g, &o->factr, &o->pgtol, o->wa, o->iwa,
          o->task, &o->iprint, o->csave, o->lsave, o->isave, o->dsave, 60, 60);
  if (strncmp(o->task, "FG", 2) == 0) kind = "fg";
  else if (strncmp(o->task, "NEW_X", 5) == 0) kind = "new_x";
  else if (strncmp(o->task, "CONV", 4) == 0) kind = "converged";
  else if (strncmp(o->task, "ABNO", 4) == 0) kind = "abnormal";
  else if (strncmp(o->task, "WARN", 4) == 0) kind = "warning";
  else kind = "error";
  lua_pushstring(L, kind);
  salta_l_pushvec(L, o->x, o->n);
  for (end = 60; end > 0 && o->task[end - 1] == ' '; --end) {}
  lua_pushlstring(L, o->task, (size_t)end);
  lua_pushinteger(L, o->isave[29]);   /* iterations so far */
  return 4;
}

/* opt:stop(): tells L-BFGS-B to finish (a user stop rule fired). */
static int lbfgsb_stop(lua_State *L) {
  lbfgsb *o = luaL_checkudata(L, 1, LBFGSB_MT);
  set_task(o->task, "STOP");
  return 0;
}

/* ---- Levenberg-Marquardt (MINPACK lmder) --------------------------------- */

typedef struct lm_ctx {
  lua_State *L;
  int fn, progress;  /* stack indices of the Lua callbacks */
  int failed;        /* a Lua error is on the stack at index `err` */
  int err;
  double *grad;      /* 2 J'r at the last Jacobian, for the progress report */
  int fresh;         /* grad belongs to the x being reported */
} lm_ctx;

/* The gradient of sum r^2 where lmder just took the Jacobian: lmder calls
** for it with fvec = r at the same x, and reports progress right after.
** Its last report, at termination, may follow a step taken without a new
** Jacobian; that report gets no gradient. */
static void lm_store_grad(lm_ctx *c, int m, int n, const double *fvec, const double *fjac,
                          int ldfjac) {
  int i, j;
  for (j = 0; j < n; ++j) {
    double s = 0;
    for (i = 0; i < m; ++i) s += fjac[(size_t)j * ldfjac + i] * fvec[i];
    c->grad[j] = 2 * s;
  }
  c->fresh = 1;
}

/* lmder's callback: runs fn(x, "r" | "j") under lua_pcall, so no Lua error
** unwinds through MINPACK's frames; a failure stops lmder (iflag < 0). */
static int lm_callback(void *p, int m, int n, const double *x, double *fvec, double *fjac,
                       int ldfjac, int iflag) {
  lm_ctx *c = p;
  lua_State *L = c->L;
  int i, j;
  if (iflag == 0) {   /* progress report every nprint iterations */
    /* after a failure lmder still reports once, with fvec unset if the
    ** start failed; the Lua side keeps the last accepted iterate itself */
    if (c->progress == 0 || c->failed) return c->failed ? -1 : 0;
    lua_pushvalue(L, c->progress);
    salta_l_pushvec(L, x, n);
    salta_l_pushvec(L, fvec, m);
    if (c->fresh) salta_l_pushvec(L, c->grad, n);
    else lua_pushnil(L);
    c->fresh = 0;
    if (lua_pcall(L, 3, 1, 0) != LUA_OK) goto fail;
    i = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return i ? -1 : 0;   /* a true return asks to stop */
  }
  lua_pushvalue(L, c->fn);
  salta_l_pushvec(L, x, n);
  lua_pushstring(L, iflag == 1 ? "r" : "j");
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) goto fail;
  if (!lua_istable(L, -1)) {
    lua_pushstring(L, "lm: the residual function must return a table");
    goto fail_msg;
  }
  if (iflag == 1) {
    for (i = 0; i < m; ++i) {
      lua_geti(L, -1, i + 1);
      fvec[i] = lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
  } else {
    for (i = 0; i < m; ++i) {
      lua_geti(L, -1, i + 1);
      for (j = 0; j < n; ++j) {
        lua_geti(L, -1, j + 1);
        fjac[(size_t)j * ldfjac + i] = lua_tonumber(L, -1);
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
    if (c->progress) lm_store_grad(c, m, n, fvec, fjac, ldfjac);
  }
  lua_pop(L, 1);
  return 0;
fail_msg:
  lua_remove(L, -2);
fail:
  c->failed = 1;
  c->err = lua_gettop(L);   /* leave the message on the stack */
  return -1;
}

/* lmder's own words for its info code (MINPACK's documentation), with
** the code: a stop is reported as MINPACK states it. */
static const char *lm_message(int info) {
  switch (info) {
    case 0: return "lmder info 0: improper input parameters";
    case 1: return "lmder info 1: both actual and predicted relative reductions in the sum of squares are at most ftol";
    case 2: return "lmder info 2: relative error between two consecutive iterates is at most xtol";
    case 3: return "lmder info 3: conditions for info = 1 and info = 2 both hold";
    case 4: return "lmder info 4: the cosine of the angle between fvec and any column of the jacobian is at most gtol "
                   "in absolute value";
    case 5: return "lmder info 5: number of calls to fcn has reached or exceeded maxfev";
    case 6: return "lmder info 6: ftol is too small; no further reduction in the sum of squares is possible";
    case 7: return "lmder info 7: xtol is too small; no further improvement in the approximate solution x is possible";
    case 8: return "lmder info 8: gtol is too small; fvec is orthogonal to the columns of the jacobian to machine "
                   "precision";
    default: return "lmder: stopped by the callback";
  }
}

/* core.lm(fn, x0, m, {ftol, xtol, gtol, maxfev, factor, progress, nprint})
**   -> x, info, message, nfev, njev, fvec */
static int l_lm(lua_State *L) {
  int n = (int)luaL_len(L, 2), m = (int)luaL_checkinteger(L, 3), info, nfev = 0, njev = 0;
  double ftol, xtol, gtol, factor, *x, *fvec, *fjac, *diag, *qtf, *wa;
  int *ipvt, maxfev, nprint;
  lm_ctx c;
  luaL_checktype(L, 1, LUA_TFUNCTION);
  luaL_checktype(L, 4, LUA_TTABLE);
  if (n < 1 || m < n) return salta_l_error(L, "lm: needs at least as many residuals (%d) as parameters (%d)", m, n);
  ftol = (lua_getfield(L, 4, "ftol"), luaL_optnumber(L, -1, 1e-12));
  xtol = (lua_getfield(L, 4, "xtol"), luaL_optnumber(L, -1, 1e-12));
  gtol = (lua_getfield(L, 4, "gtol"), luaL_optnumber(L, -1, 0));
  maxfev = (int)(lua_getfield(L, 4, "maxfev"), luaL_optinteger(L, -1, 200));
  nprint = (int)(lua_getfield(L, 4, "nprint"), luaL_optinteger(L, -1, 1));
  factor = (lua_getfield(L, 4, "factor"), luaL_optnumber(L, -1, 100.0));
  lua_pop(L, 6);
  lua_getfield(L, 4, "progress");   /* index 5 */
  c.L = L;
  c.fn = 1;
  c.progress = lua_isfunction(L, 5) ? 5 : 0;
  c.failed = 0;
  x = salta_l_scratch(L, n);
  salta_l_checkvec(L, 2, x, n, "x0");
  fvec = salta_l_scratch(L, m);
  fjac = salta_l_scratch(L, m * n);
  diag = salta_l_scratch(L, n);
  qtf = salta_l_scratch(L, n);
  wa = salta_l_scratch(L, 3 * n + m);
  c.grad = salta_l_scratch(L, n);
  c.fresh = 0;
  ipvt = lua_newuserdatauv(L, sizeof(int) * (size_t)n, 0);
  info = lmder(lm_callback, &c, m, n, x, fvec, fjac, m, ftol, xtol, gtol, maxfev, diag, 1, factor,
               c.progress ? nprint : 0, &nfev, &njev, ipvt, qtf, wa, wa + n, wa + 2 * n, wa + 3 * n);
  if (c.failed) {
    lua_pushvalue(L, c.err);
    return lua_error(L);
  }
  salta_l_pushvec(L, x, n);
  lua_pushinteger(L, info);
  lua_pushstring(L, lm_message(info));
  lua_pushinteger(L, nfev);
  lua_pushinteger(L, njev);
  salta_l_pushvec(L, fvec, m);
  return 6;
}

void salta_l_open_optim(lua_State *L) {
  static const luaL_Reg methods[] = {
    {"iterate", lbfgsb_iterate},
    {"stop", lbfgsb_stop},
    {NULL, NULL}
  };
  salta_l_newclass(L, LBFGSB_MT, methods, lbfgsb_gc);
  lua_pop(L, 1);
  lua_pushcfunction(L, l_lbfgsb);
  lua_setfield(L, -2, "lbfgsb");
  lua_pushcfunction(L, l_lm);
  lua_setfield(L, -2, "lm");
}
