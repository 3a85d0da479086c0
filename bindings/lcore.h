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

/* User values: 1, the compiled code the model runs (a salta_jit_ud); 2,
** the code of a background cc build it watches, or nil; 3, a table of the
** code it ran before (runs made then may still point into it). */
typedef struct salta_model_ud {
  salta_model *model;
  double next_poll;     /* salta_l_now() before which the watch is not polled */
} salta_model_ud;
#define SALTA_MODEL_UVS 3

/* Raises the formatted message as it is: no position prefix, since a
** binding's caller is salta's own Lua code, not the user's. */
int salta_l_error(lua_State *L, const char *fmt, ...);

/* The error of an engine call that returned status with message msg: a
** table {message = msg, status = the SALTA_E* code, code = its name
** ("memory", "input", "jit", "kernel", "solver", "interrupted",
** "algebraic", "nondifferentiable")} whose tostring, and whose
** concatenation, is the message. salta_l_pusherror pushes it,
** salta_l_raise raises it; salta_l_push_statuses pushes a table of the
** codes by name (core.status). */
#define SALTA_ERROR_MT "salta.error"
void salta_l_pusherror(lua_State *L, int status, const char *msg);
int salta_l_raise(lua_State *L, int status, const char *msg);
void salta_l_push_statuses(lua_State *L);

/* Reads the array at index idx into out[0..n-1] (exactly n numbers);
** `what` names the argument in the error. */
void salta_l_checkvec(lua_State *L, int idx, double *out, int n, const char *what);

/* The number field k of the table at idx, or def when absent; anything
** else is an error naming `what` (the caller), the option and the value. */
double salta_l_optnumber(lua_State *L, int idx, const char *k, double def, const char *what);

/* Pushes out[0..n-1] as a new array. */
void salta_l_pushvec(lua_State *L, const double *v, int n);

/* Pushes names[0..n-1] as a new array of strings. */
void salta_l_pushnames(lua_State *L, const char *const *names, int n);

/* The model userdata at idx; an error when it, or its compiled code, is
** closed. A model whose watched background build has landed takes its
** kernels first: every call into the bindings is a safe point, since no run
** of the model is in progress in this Lua state then. */
salta_model_ud *salta_l_checkmodel(lua_State *L, int idx);

/* Seconds on a monotonic wall clock (timings). */
double salta_l_now(void);

void salta_l_open_model(lua_State *L);   /* registers the model metatable */

/* core.loss(...) and the loss metatable (lloss.c) */
int salta_l_loss_new(lua_State *L);
void salta_l_open_loss(lua_State *L);
int salta_l_check_judge(lua_State *L);     /* core.check_judge: salta_check_judge */
int salta_l_carried_error(lua_State *L);   /* core.carried_error: salta_carried_error */

/* core.lbfgsb and core.lm (loptim.c): adds them to the table on top */
void salta_l_open_optim(lua_State *L);

/* model:simulate_raw(opts, p, x0, times) and the options it shares with
** loss:configure (lsim.c). salta_l_sim_options reads the declared options
** (salta_sim_option_info) from the table at idx into o: t0 and tf
** (default 0 and 1), then every option the table gives, for a loss
** (scope SALTA_L_LOSS) those that mean something to one. A value of the
** wrong type or outside its range is an error naming `what` (the caller),
** the option and the value. With nvec > 0 a per-unknown option (atol) may
** be an array of nvec numbers, read into a scratch vector left on the
** stack that o borrows (atol_vec). */
enum { SALTA_L_SIMULATE, SALTA_L_LOSS };
void salta_l_sim_options(lua_State *L, int idx, salta_sim_options *o, const char *what, int scope, int nvec);
int salta_l_model_simulate(lua_State *L);
/* core.sim_options() and core.sim_options_resolve(opts [, "loss"]) */
int salta_l_sim_option_list(lua_State *L);
int salta_l_sim_options_resolve(lua_State *L);
void salta_l_open_sim(lua_State *L);   /* registers the run's metatable */
/* Pushes a table of a run's statistics (steps, events, ...). */
void salta_l_pushstats(lua_State *L, const salta_sim_stats *stats);

/* Registers metatable mt for a userdata class: methods as __index, close
** as __gc and __close. Leaves the metatable on the stack. */
void salta_l_newclass(lua_State *L, const char *mt, const luaL_Reg *methods, lua_CFunction close);

/* lua_newuserdatauv + scratch buffer helper: a temporary array of n doubles
** owned by the Lua stack (pushed as userdata). */
double *salta_l_scratch(lua_State *L, int n);

#endif
