/*
** lcore.h -- helpers shared by the files of the salta.core module
** (lcore.c), and what each file of the module gives the others.
*/
#ifndef SALTA_LCORE_H
#define SALTA_LCORE_H

#include <lua.h>
#include <lauxlib.h>

#include "salta.h"

#define SALTA_MODEL_MT "salta.model"

typedef struct salta_model_ud {
  salta_model *model;
} salta_model_ud;

/* Raises the formatted message as it is: no position prefix, since a
** binding's caller is salta's own Lua code, not the user's. */
int salta_l_error(lua_State *L, const char *fmt, ...);

/* Reads the array at index idx into out[0..n-1] (exactly n numbers);
** `what` names the argument in the error. */
void salta_l_checkvec(lua_State *L, int idx, double *out, int n, const char *what);

/* The number field k of the table at idx, or def when absent; anything
** else is an error naming `what` (the caller), the option and the value. */
double salta_l_optnumber(lua_State *L, int idx, const char *k, double def, const char *what);
/* The same for an integer option in [lo, hi], checked before any cast. */
long long salta_l_optint(lua_State *L, int idx, const char *k, long long def, long long lo, long long hi,
                         const char *what);

/* Pushes out[0..n-1] as a new array. */
void salta_l_pushvec(lua_State *L, const double *v, int n);

/* Pushes names[0..n-1] as a new array of strings. */
void salta_l_pushnames(lua_State *L, const char *const *names, int n);

/* The model userdata at idx; an error when it, or its compiled code, is
** closed. */
salta_model_ud *salta_l_checkmodel(lua_State *L, int idx);

/* Seconds on a monotonic wall clock (timings). */
double salta_l_now(void);

void salta_l_open_model(lua_State *L);   /* registers the model metatable */

/* core.loss(...) and the loss metatable (lloss.c) */
int salta_l_loss_new(lua_State *L);
void salta_l_open_loss(lua_State *L);

/* core.lbfgsb and core.lm (loptim.c): adds them to the table on top */
void salta_l_open_optim(lua_State *L);

/* model:simulate_raw(opts, p, x0, times) and the options table it shares
** with loss:configure (lsim.c); what names the caller in errors. */
void salta_l_sim_options(lua_State *L, int idx, salta_sim_options *o, const char *what);
int salta_l_model_simulate(lua_State *L);
/* Pushes a table of the last run's statistics (steps, events, ...). */
void salta_l_pushstats(lua_State *L, const salta_sim *sim);

/* Registers metatable mt for a userdata class: methods as __index, close
** as __gc and __close. Leaves the metatable on the stack. */
void salta_l_newclass(lua_State *L, const char *mt, const luaL_Reg *methods, lua_CFunction close);

/* lua_newuserdatauv + scratch buffer helper: a temporary array of n doubles
** owned by the Lua stack (pushed as userdata). */
double *salta_l_scratch(lua_State *L, int n);

#endif
