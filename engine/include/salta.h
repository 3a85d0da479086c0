/*
** salta.h -- the public C API of the salta engine.
**
** salta integrates hybrid DAEs (x' = f, 0 = g, events with resets) and
** differentiates least-squares losses through them. Models are compiled C
** kernels described by a salta_model_def (salta_kernel.h), produced by the
** Lua model compiler (JIT, or ahead of time with `salta compile`).
**
** Conventions
**  - Every handle is opaque; create functions take `T **out` and return a
**    status; free functions take `T **` and set it to NULL (NULL is fine).
**  - Status codes (salta_status): SALTA_OK (0) or a negative SALTA_E*
**    code, returned as int. After an error the handle's message
**    (salta_*_errmsg) says what failed, naming the model element, the time
**    and the value. The engine never prints, exits or aborts.
**  - Ownership is stated per function: "borrows" (caller keeps ownership and
**    must keep it alive), "copies", "returns owned". A returned pointer
**    says how long it stays valid; a message (salta_*_errmsg) stays valid
**    until the next call on its handle (for a model: see below) or the
**    handle's free.
**  - Threads: a salta_jit, salta_sim or salta_loss is used by one thread at
**    a time; different handles may run in different threads at once. A
**    salta_model is read-only once created: any number of threads may
**    evaluate it (salta_model_eval, _jac, _jac_dense, _pattern) and run
**    simulations and losses on it at once, each with its own salta_sim or
**    salta_loss; salta_model_errmsg gives the calling thread's message.
**    salta_model_swap_def, the one call that changes a model (its kernels,
**    for the same model's compiled by another compiler), is safe among
**    them. Free a model only when no call uses it. Kernels are pure and may be
**    shared. salta_interrupt is process-wide (below).
*/
#ifndef SALTA_H
#define SALTA_H

#include <stddef.h>
#include "salta_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; salta_version() gives the library's, so a
** host can check that the two agree (the shared library's soname carries
** the major number). */
#define SALTA_VERSION_MAJOR 0
#define SALTA_VERSION_MINOR 2
#define SALTA_VERSION_PATCH 0
#define SALTA_VERSION "0.2.0"

/* A static string, valid for the life of the program. */
const char *salta_version(void);

/* ---- status codes ---------------------------------------------------- */

typedef enum salta_status {
  SALTA_OK = 0,
  SALTA_EMEM = -1,      /* out of memory */
  SALTA_EINPUT = -2,    /* bad argument (sizes, indices, non-finite value) */
  SALTA_EJIT = -3,      /* compiling or loading generated code failed */
  SALTA_EKERNEL = -4,   /* a kernel failed (implicit reset did not converge) */
  SALTA_ESOLVER = -5,   /* the integrator or a Newton iteration failed */
  SALTA_EINTR = -6,     /* stopped by salta_interrupt() */
  SALTA_EALGEBRAIC = -7, /* the algebraic equations g = 0 have no solution the run can follow:
                            Newton on g failed (at the start, after a reset, along the run), or
                            they reach a fold or a singular point */
  SALTA_ENODIFF = -8     /* no gradient at this point: a grazing crossing, an event group that
                            a direction splits with members that do not commute, or (the
                            adjoint) a crossing its discrete trajectory cannot follow */
} salta_status;

/* ---- interrupts ------------------------------------------------------------ */

/* One request for the whole process, not per handle or per thread.
** salta_interrupt() asks every engine call running in any thread of the
** process (simulations with or without sensitivities, adjoint sweeps) to
** stop at its next step, failing with SALTA_EINTR (a message names the
** model and the time); a call started while the request stands fails at
** its first step. Safe to call from a signal handler (a SIGINT handler,
** say) and from any thread: the flag is a lock-free atomic. The request
** stays until salta_interrupt_clear(), which withdraws it for every thread.
** A host with several threads therefore uses it only to stop all of its
** engine work at once (Ctrl-C, shutdown), and clears it once, before
** starting a batch of work and while no engine call runs, not per call in
** each thread (a thread clearing it before its own call could cancel a
** request meant for the others); a run in one thread cannot be stopped
** alone. */
void salta_interrupt(void);
void salta_interrupt_clear(void);
int salta_interrupted(void);

/* ---- function selectors -------------------------------------------------- */

/* The vector functions of a model (salta_model_eval's `fn`). */
typedef enum salta_fn {
  SALTA_FN_F = 0,       /* x' = f(t,x,z,p), nx rows */
  SALTA_FN_G = 1,       /* 0 = g(t,x,z,p), nz rows */
  SALTA_FN_H = 2,       /* y = h(t,x,z,p), ny rows */
  SALTA_FN_E = 3,       /* event guards, ne rows */
  SALTA_FN_R = 4        /* reset of one event (x+), nx rows; a state it does
                           not assign keeps its value (x+_i = x_i), and its
                           row is left out of the Jacobians' patterns (the
                           identity: salta_model_jac_dense fills it in) */
} salta_fn;

/* ---- hashing ------------------------------------------------------------- */

#define SALTA_HASH_HEX 32

/* Writes the 128-bit BLAKE2b digest of n bytes of data into hex as
** SALTA_HASH_HEX hex digits and a NUL: the key of compiled code. SALTA_OK,
** or SALTA_EINPUT. */
int salta_hash(const void *data, size_t n, char hex[SALTA_HASH_HEX + 1]);

/* ---- compiled code (JIT, cc backend) --------------------------------------- */

typedef struct salta_jit salta_jit;

/* Returns owned, empty; free with salta_jit_free. */
int salta_jit_create(salta_jit **out);
void salta_jit_free(salta_jit **jit);
/* The last failure's message: owned by the jit, valid until its next
** compile or its free. */
const char *salta_jit_errmsg(const salta_jit *jit);

/* Compiles src with the system C compiler (`$CC`, else `cc`, with
** `-O2 -fPIC -std=gnu11`, and `-mavx2` where the processor has AVX2:
** without FMA, so the same values on any machine; the source on stdin so
** that the library's bytes depend on the source and the flags alone) into
** cache_dir (NULL: $XDG_CACHE_HOME/salta, else ~/.cache/salta, else a
** fresh private folder for this process), named by a BLAKE2b digest of
** the source and the flags so that an unchanged model is not recompiled, then loads it and looks up the
** salta_model_def `symbol`. model_name is used in messages. A compile
** error's message quotes the generated line. One compile per handle.
** A source cut into units (by lines that hold the comment "salta:unit"
** alone, as salta's code generator cuts a large model; the text before
** the first is each unit's start) has its units compiled with SALTA_UNITS defined, as many at once as there are
** processors online (the environment's SALTA_JOBS sets another number),
** each cached on its own by a digest of its text so that an unchanged unit
** is not compiled again, and linked.
** The cache folder must belong to this user and be writable by nobody else
** (it is made with mode 0700); another is refused with SALTA_EJIT. A library
** is loaded only when this user owns it and it matches the BLAKE2b-512
** checksum written beside it at build; anything else is rebuilt. */
int salta_jit_compile_cc(salta_jit *jit, const char *src, const char *symbol,
                         const char *model_name, const char *cache_dir);

/* Whether the cache (as for salta_jit_compile_cc) holds a library for src
** that would be loaded: 1 or 0; it compiles nothing. */
int salta_jit_cc_cached(const char *src, const char *symbol, const char *cache_dir);

/* Starts compiling src into the cache in the background (a process of its
** own, not a child to wait for) and returns at once: SALTA_OK, or SALTA_EJIT
** when it could not be started (or the cache folder is refused). A later
** salta_jit_compile_cc of the same source loads the result once it is there
** (and compiles it itself, as usual, before); both builds give the same
** bytes. */
int salta_jit_cc_background(const char *src, const char *symbol, const char *cache_dir);

/* Arms an empty handle to load src's library (as salta_jit_compile_cc
** would) once a background build has put it into the cache; compiles
** nothing. SALTA_OK, or SALTA_EJIT (the cache folder is refused). */
int salta_jit_cc_watch(salta_jit *jit, const char *src, const char *symbol, const char *model_name,
                       const char *cache_dir);

/* 1 when the watched library has landed and is now loaded (salta_jit_def
** gives it, and the watch ends), 0 while it has not (a stat of one file),
** or a negative status when it landed but cannot be loaded (the message
** says why; the watch ends). */
int salta_jit_cc_poll(salta_jit *jit);

/* The loaded definition (borrowed, valid until salta_jit_free), or NULL. */
const salta_model_def *salta_jit_def(const salta_jit *jit);

/* Whether the last compile was served from the cache. */
int salta_jit_cached(const salta_jit *jit);

/* ---- the model ----------------------------------------------------------------- */

typedef struct salta_model salta_model;

/* Returns owned; borrows def, which must outlive the model. Checks the ABI
** version and that sizes, names, patterns and nominal values make sense.
** On failure *out is still set for salta_model_errmsg: free it. */
int salta_model_create(salta_model **out, const salta_model_def *def);
void salta_model_free(salta_model **model);
/* The message of the calling thread's last failed evaluation of this
** model (each thread has its own, so that threads may share a model), else
** of its creation: valid until the thread's next failed evaluation of a
** model, or the model's free. */
const char *salta_model_errmsg(const salta_model *model);

/* The def the model borrows: valid as long as the def (it outlives the
** model). */
const salta_model_def *salta_model_def_get(const salta_model *model);

/* Replaces the model's kernels with def's, compiled from the same source
** (by another compiler: the defs' hash strings must agree, else
** SALTA_EINPUT and the calling thread's message): borrows def, and the
** replaced def must outlive the model too. Safe while other threads use
** the model: each evaluation, simulation run and loss evaluation reads
** the kernels once, at its start, so that a run in progress finishes on
** the kernels it started with and the runs after it use def's. */
int salta_model_swap_def(salta_model *model, const salta_model_def *def);

/* Rows of function fn (for SALTA_FN_R: nx), or a negative status. */
int salta_model_rows(const salta_model *model, salta_fn fn);

/* Evaluates fn at (t, x, z, p) into out (rows(fn) values). `event` selects
** the event for SALTA_FN_R and is ignored otherwise. p holds the np
** parameters: the values the kernels derive from them (salta_kernel.h,
** np_derived) are computed here, in memory of the call's own (SALTA_EMEM
** when there is none). Writes nothing of the model: threads may evaluate
** one model at once. */
int salta_model_eval(const salta_model *model, salta_fn fn, int event, double t,
                     const double *x, const double *z, const double *p,
                     double *out);

/* The sparsity pattern of d fn / d wrt: *nnz entries at (row[k], col[k]),
** column-major. The arrays are the def's: valid as long as the def. */
int salta_model_pattern(const salta_model *model, salta_fn fn, int event,
                        salta_wrt wrt, int *nnz, const int **row, const int **col);

/* Evaluates the nonzeros of d fn / d wrt into vals (nnz values). */
int salta_model_jac(const salta_model *model, salta_fn fn, int event, salta_wrt wrt,
                    double t, const double *x, const double *z,
                    const double *p, double *vals);

/* Same, scattered into a dense column-major rows(fn) x ncols(wrt) matrix
** with leading dimension ld (entries outside the pattern are set to 0). */
int salta_model_jac_dense(const salta_model *model, salta_fn fn, int event, salta_wrt wrt,
                          double t, const double *x, const double *z,
                          const double *p, double *dense, int ld);

/* ---- simulation ------------------------------------------------------------------ */

typedef struct salta_sim salta_sim;

/* Linear solvers for the Newton iterations (IDAS, the adjoint's steps):
** dense LU, or KLU on the model's compile-time sparsity pattern. AUTO takes
** KLU from SALTA_KLU_MIN_N unknowns (nx + nz) on, where its sparsity pays
** for its overhead. NONE: the run solved no linear system (ERK). */
typedef enum salta_linear_solver {
  SALTA_LS_NONE = -1, SALTA_LS_DENSE = 0, SALTA_LS_KLU = 1, SALTA_LS_AUTO = 2
} salta_linear_solver;
#define SALTA_KLU_MIN_N 16

/* Integrators: IDAS's variable-order BDF for any index-1 model, stiff or
** not; or explicit Dormand-Prince 5(4) with z solved from g at every stage,
** much cheaper per step for non-stiff models (it reports a collapsing step
** size on a stiff one). AUTO runs ERK and watches its stability (Hairer's
** test: h times the estimated spectral radius above 2.5, near the method's
** stability boundary, on 15 accepted steps without 6 clear ones between
** them); on a stiff model, or a collapsing step, it restarts the run with
** BDF, and the simulation object keeps BDF for its later runs. The stats
** say which ran. */
typedef enum salta_method { SALTA_METHOD_BDF = 0, SALTA_METHOD_ERK = 1, SALTA_METHOD_AUTO = 2 } salta_method;

/* The options of a run. Each field but atol_vec is an option declared
** below (salta_sim_option_info: its type, default and range);
** salta_sim_options_init fills the defaults, and a run refuses a value
** outside its option's range (SALTA_EINPUT naming the option). */
typedef struct salta_sim_options {
  double t0, tf;         /* the interval, t0 < tf */
  double rtol, atol;     /* the tolerances */
  const double *atol_vec;/* NULL, or nx + nz absolute tolerances (borrowed), instead of atol */
  double max_step;       /* 0: no limit */
  double init_step;      /* 0: the integrator chooses */
  int max_order;         /* BDF's highest order, 1 to 5 */
  int max_events;        /* more events is an error */
  int zeno_count;        /* zeno_count event instants (groups) within zeno_window ... */
  double zeno_window;    /* ... is a Zeno cascade */
  long max_steps;        /* internal steps in total */
  int record_steps;      /* keep every internal step (t, x, z): salta_sim_step */
  int terminal_output;   /* a run a terminal event ends gets one more output at its time (the
                            state the event group left), unless an output time is there already */
  salta_linear_solver linear_solver;   /* AUTO, DENSE (LAPACK) or KLU */
  salta_method method;   /* AUTO, BDF (IDAS) or ERK */
  /* the continuous adjoint (salta_loss_eval_adjoint_cont); a simulation ignores them */
  double adjoint_rtol, adjoint_atol;   /* its backward problem's tolerances (0: rtol, atol) */
  double quad_rtol, quad_atol;         /* its quadratures' (0: adjoint_rtol, adjoint_atol) */
  int checkpoint_steps;                /* the re-run's steps between its checkpoints */
} salta_sim_options;

/* Fills the declared defaults for [t0, tf]. */
void salta_sim_options_init(salta_sim_options *o, double t0, double tf);

/* The options, declared: one salta_option_info per field of
** salta_sim_options (atol_vec is atol's per-unknown form), in a static
** table. salta.core exports it to Lua, whose option checker, help() and
** doc/options.md are made from it. */
typedef enum salta_option_type {
  SALTA_OPTION_NUMBER = 0,    /* a double within [lo, hi] */
  SALTA_OPTION_INTEGER = 1,   /* a whole number within [lo, hi] */
  SALTA_OPTION_BOOLEAN = 2,   /* 0 or 1 */
  SALTA_OPTION_CHOICE = 3     /* one of choices; the field holds its index */
} salta_option_type;

/* salta_option_info.flags */
enum {
  SALTA_OPTION_INTERVAL = 1,    /* t0 or tf: an argument of salta_sim_options_init, no default */
  SALTA_OPTION_SPAN = 2,        /* the default is def times (tf - t0) */
  SALTA_OPTION_PER_UNKNOWN = 4, /* a simulation may give one value per state and algebraic (atol_vec) */
  SALTA_OPTION_SIM_ONLY = 8,    /* means nothing to a loss (salta.lsq does not take it) */
  SALTA_OPTION_LOSS_ONLY = 16   /* means nothing to a simulation (model:simulate does not take it) */
};

typedef struct salta_option_info {
  const char *name;            /* the field of salta_sim_options it sets, and Lua's key */
  salta_option_type type;
  double def;                  /* the default (a choice's index) */
  double lo, hi;               /* the range (NUMBER, INTEGER; +-HUGE_VAL: none) ... */
  int lo_open, hi_open;        /* ... an end excluded when set */
  const char *const *choices;  /* CHOICE: the names by index, NULL-terminated */
  const char *def_text;        /* the default in words, where the number alone misleads; or NULL */
  const char *help;            /* one line: what it does */
  int flags;                   /* SALTA_OPTION_* */
} salta_option_info;

/* The number of options, and option k (0 <= k < count): static, valid
** for the life of the program; NULL for k out of range. */
int salta_sim_option_count(void);
const salta_option_info *salta_sim_option_info(int k);

/* Sets option `name` of o to value (a choice: its index; a boolean: 0 or
** 1), or reads it into *value. SALTA_EINPUT for an unknown name or a value
** outside the option's range; then, when err is not NULL, a message of at
** most n bytes (NUL included) names the option, what it must be and the
** value. */
int salta_sim_options_set(salta_sim_options *o, const char *name, double value, char *err, size_t n);
int salta_sim_options_get(const salta_sim_options *o, const char *name, double *value);

typedef struct salta_sim_stats {
  long steps, res_evals, jac_evals;
  long guard_evals;      /* guard evaluations: of every guard (samples of a step) or of one (a crossing's refinement) */
  long newton_iters, newton_conv_fails, err_test_fails;
  long alg_newton_iters; /* salta's own Newton on g (initial, after resets) */
  long events;
  salta_linear_solver linear_solver;   /* the one the run used: DENSE, KLU, or NONE (ERK) */
  salta_method method;   /* the integrator that produced the results: BDF or ERK */
  int stiff_restart;     /* AUTO: this run found ERK unstable and restarted with BDF */
  int terminal_event;    /* the terminal event that ended the run, or -1 */
  double t_end;          /* where the run ended: tf, or that event's time */
} salta_sim_stats;

/* Event semantics, the same for every route (simulation, sensitivities,
** adjoint, blending):
**  - An armed guard fires where it reaches its firing side (SALTA_DIR_DOWN:
**    e <= 0, SALTA_DIR_UP: e >= 0, SALTA_DIR_BOTH: a change of sign), located
**    on the integrator's interpolant to a few ulps of t.
**  - Every armed guard on its firing side at that instant fires with it,
**    as a group, recorded in declaration order. An armed guard outside
**    the group that the resets leave where it was stays armed (it may
**    cross a few ulps later, in a group of its own). Every reset of a group reads
**    the left limits (x-, z-); states no member resets keep their value;
**    then z+ solves g = 0 by Newton from z-. Two members resetting the same
**    state is an error (SALTA_EINPUT) naming both events.
**  - A guard a reset leaves at zero (within a band of its rate times the
**    time tolerance) is not armed until it has left its firing side by that
**    band; if the reset turned it around, it is armed at once and fires at
**    its own next crossing.
**  - Event iteration: when the resets of a group push an armed guard
**    outside it clearly past zero, that guard's event fires at the same
**    instant in a new group (a cascade round, event_record.cascade), its
**    resets reading the previous round's state; more than 32 rounds is an
**    error naming the events. A round's sensitivity jump and adjoint block
**    keep the instant of the located group (d tau / dp is its).
**  - An output time equal to an event time sees the post-event state.
**  - A group with a terminal event (SALTA_EVENT_TERMINAL in e_flags) fires, and
**    the run ends at its time: output times after it get no outputs
**    (salta_sim_nout is smaller than nt), and stats.t_end says where.
**  - Errors (SALTA_ESOLVER) name the event, the time and the value: a
**    guard that is not finite, a guard crossing against its direction or a
**    turned-around guard that never gets clear (a Zeno point), zeno_count
**    event instants (groups) within zeno_window, more than max_events, a
**    non-finite reset; Newton failing after a reset is SALTA_EALGEBRAIC.
**  - The sensitivity jump and the adjoint's event block are the group's
**    composite reset's, each member with its own event time; a crossing
**    whose guard rate is below 1e-6 of its terms (grazing) has no gradient:
**    an error by every route (SALTA_ENODIFF).
**
** One event firing. The states are borrowed from the simulation and valid
** until its next run or free. group is the record index of the group's
** first event and group_size how many fired together. */
typedef struct salta_event_record {
  double t;
  int event;
  int group, group_size;
  int cascade;           /* 0: its group was located in time; k: fired in round k of the event
                            iteration after it (a reset pushed its guard across zero) */
  const double *x_minus, *z_minus, *x_plus, *z_plus;
  double rate, rate_scale;  /* its guard's rate along the flow at the left limit (e_t + e_x x' +
                               e_z z'), and the size of its terms: a ratio |rate| / rate_scale
                               below 1e-6 is a grazing crossing */
} salta_event_record;

/* Returns owned; borrows model (which must outlive it). */
int salta_sim_create(salta_sim **out, salta_model *model);
void salta_sim_free(salta_sim **sim);
/* The last failure's message: owned by the simulation, valid until its
** next call that can fail, or its free. */
const char *salta_sim_errmsg(const salta_sim *sim);

/* Simulates on [o->t0, o->tf] with parameters p (np values) from x0 (NULL:
** the model's start values), recording the solution at the nt sorted
** output times in [t0, tf] (right-continuous: a time equal to an event
** time sees the post-event state). On error, what was computed before the
** failure stays readable. */
int salta_sim_run(salta_sim *sim, const salta_sim_options *o, const double *p,
                  const double *x0, const double *times, int nt);

/* Output k (0 <= k < nout): borrowed x (nx), z (nz) and y (ny), valid
** until the next salta_sim_run, salta_sim_set_sens (which clears the
** results) or salta_sim_free; likewise for every pointer the calls below
** return. An index out of range is SALTA_EINPUT with a message naming it
** (likewise for events, steps and sensitivities below); these calls write
** only that message. */
int salta_sim_nout(const salta_sim *sim);
int salta_sim_out(salta_sim *sim, int k, double *t, const double **x,
                  const double **z, const double **y);
int salta_sim_nevents(const salta_sim *sim);
int salta_sim_event(salta_sim *sim, int k, salta_event_record *rec);
/* Internal steps (with record_steps): t, borrowed x and z (valid as the
** outputs are). */
int salta_sim_nsteps(const salta_sim *sim);
int salta_sim_step(salta_sim *sim, int k, double *t, const double **x,
                   const double **z);
void salta_sim_stats_get(const salta_sim *sim, salta_sim_stats *stats);

/* ---- forward sensitivities ------------------------------------------------------ */

/* Chooses the sensitivity directions for the next runs: dirs[k] >= 0 is
** parameter dirs[k], dirs[k] = -(i + 1) the initial value of state i.
** ns = 0 turns sensitivities off; ns above np + nx is refused before dirs
** is read. Copies dirs. Clears the last run's results (outputs, events,
** steps, sensitivities): their pointers are no longer valid. */
int salta_sim_set_sens(salta_sim *sim, const int *dirs, int ns);
int salta_sim_nsens(const salta_sim *sim);

/* At output k: S = d[x; z]/dp (n x ns, column-major, one column per
** direction) and dy = dy/dp (ny x ns). Borrowed, valid as the outputs
** are. */
int salta_sim_out_sens(salta_sim *sim, int k, const double **S, const double **dy);

/* Sensitivity data of event record k (borrowed, valid as the outputs
** are): tau_p = d tau / dp (ns), one per direction: the event time's
** derivative, -(e_x s_x + e_z s_z + e_p) / (its guard's rate) at the left
** limit for a located crossing (each member of a group its own, members
** composed in the order a direction moves them), the located instant's
** for a round of event iteration;
** s_minus, s_plus = d[x; z]/dp at fixed t just before and after the
** event's instant (n x ns); y_minus, y_plus = the outputs there (ny) and
** dy_minus, dy_plus their derivatives along the moving event time,
** dy/dp + dy/dt tau_p (ny x ns). */
typedef struct salta_event_sens {
  const double *tau_p, *s_minus, *s_plus, *y_minus, *dy_minus, *y_plus, *dy_plus;
} salta_event_sens;
int salta_sim_event_sens(salta_sim *sim, int k, salta_event_sens *rec);

/* d t_end / dp (ns, borrowed, valid as the outputs are) of the last run
** with sensitivities, which succeeded: where it ended (stats.t_end) moves
** with the terminal event that ended it (that event record's tau_p), and
** not at all when it reached tf (zeros). SALTA_EINPUT without
** sensitivities, or when the last run failed. */
int salta_sim_t_end_sens(salta_sim *sim, const double **t_end_p);

/* ---- the least-squares loss ------------------------------------------------------ */

typedef struct salta_loss salta_loss;

/* L(p) = sum_m r_m^2 with residuals r_m = w_j (yhat_j(t_k) - data_kj) / sqrt(N)
** over the N finite data entries (NaN marks a missing datum): the mean of
** the weighted squared errors. outputs: nout output indices; data: nt x
** nout, row per target time; weights: nout or NULL (all 1). Targets are
** right-continuous (a target at an event time sees the post-event value).
** nt = 0 (times, outputs, data NULL): no targets, for a loss of event
** times alone (salta_loss_set_event_data). Returns owned; borrows model;
** copies the arrays. On failure *out is still set, so salta_loss_errmsg
** can say why: free it with salta_loss_free. */
int salta_loss_create(salta_loss **out, salta_model *model, const double *times, int nt,
                      const int *outputs, int nout, const double *data, const double *weights);
void salta_loss_free(salta_loss **loss);
/* The last failure's message: owned by the loss, valid until its next
** call that can fail, or its free. */
const char *salta_loss_errmsg(const salta_loss *loss);

/* Simulation options (copied; [t0, tf] must contain the target times). */
int salta_loss_set_options(salta_loss *loss, const salta_sim_options *o);
/* Sigmoid blending across event boundaries with sharpness beta (0: off):
** the prediction at T is the normalised sum over the segments [a, b]
** between boundaries (t0, the event groups, tf) of their values clipped
** into them, weighted s(beta (T - a)) - s(beta (T - b)); a segment of zero
** length weighs nothing, so a group that splits changes it continuously. */
int salta_loss_set_blend(salta_loss *loss, double beta);
/* The free directions of the gradient (see salta_sim_set_sens). */
int salta_loss_set_free(salta_loss *loss, const int *dirs, int ns);
/* Per-datum weights w (nt x nout, row per target time; copied), multiplying
** the outputs' weights: 1 / sigma for data with known standard deviations.
** Each must be finite and >= 0; SALTA_EINPUT names the first that is not. */
int salta_loss_set_datum_weights(salta_loss *loss, const double *w);
/* Event times as data (copied; replaces any before): datum i is a
** measured time[i] of event event[i] (0-based), with weight weight[i]
** (1 / sigma; NULL: all 1). The data of one event, in the order given, are
** its firings in the run in order (its k-th datum, its k-th firing: the
** times must increase); a NaN time counts a firing that was not measured.
** Residual r_i = weight_i (tau_i - time_i) / sqrt(N), after the outputs'
** residuals in datum order, N counting the finite output data and the
** measured event times: the mean of all weighted squared errors. tau_i is
** the firing's time in the route's trajectory, differentiated by every
** route (sens: its tau_p, salta_event_sens). A firing the run does not
** reach (it ends first, at tf or a terminal event) is matched with the
** end of the run: tau_i = stats.t_end, with its derivative
** (salta_sim_t_end_sens), a penalty continuous as the firing leaves the
** run; later firings than an event's data are not data. A measured time
** outside [t0, tf] is an error at evaluation. SALTA_EINPUT names the
** first datum that is not an event of the model, a non-finite time or
** weight, or an event's times that decrease. */
int salta_loss_set_event_data(salta_loss *loss, const int *event, const double *time, const double *weight, int n);
/* Targets after a terminal event's end of the run: an error (SALTA_EINPUT
** naming the event and the first such target; the default) or, with drop
** = 1, zero residuals (the loss keeps its normalisation over all data). */
int salta_loss_set_drop_after_end(salta_loss *loss, int drop);
/* A robust loss (scipy.optimize.least_squares' loss functions): with u =
** w_j (yhat - data) and z = (u / scale)^2, L = sum scale^2 rho(z) / N where
** rho(z) is z (SALTA_ROBUST_LINEAR, least squares, the default),
** 2 (sqrt(1 + z) - 1) (SOFT_L1), z up to 1 and 2 sqrt(z) - 1 beyond (HUBER)
** or log(1 + z) (CAUCHY); scale in units of u (of sigma with per-datum
** weights 1 / sigma). The residuals become u sqrt(rho(z) / z) / sqrt(N):
** their squares sum to L, and their Jacobian is exact. */
enum { SALTA_ROBUST_LINEAR = 0, SALTA_ROBUST_SOFT_L1 = 1, SALTA_ROBUST_HUBER = 2, SALTA_ROBUST_CAUCHY = 3 };
int salta_loss_set_robust(salta_loss *loss, int kind, double scale);
/* Event windows: a datum of output j within width of an event of the run
** at which jumps[e * nout + j] (ne x nout flags, row per model event;
** copied; NULL: every output at every event) is dropped, and one within
** width + ramp is down-weighted smoothly (its residual times phi rising
** from 0 to 1 along a C2 quintic). The windows move with the event times
** and the gradient carries that motion (ramp 0: a hard drop, recomputed at
** each evaluation, whose motion the gradient does not see). N keeps
** counting every finite datum. width = ramp = 0: none (the default). */
int salta_loss_set_event_windows(salta_loss *loss, double width, double ramp, const unsigned char *jumps);
int salta_loss_nresid(const salta_loss *loss);

/* Evaluates at parameters p (np) and initial state x0 (NULL: start
** values). Any of value, grad (ns), resid (N), jac (N x ns, row-major) may
** be NULL; grad and jac use forward sensitivities through the events. */
int salta_loss_eval(salta_loss *loss, const double *p, const double *x0, double *value,
                    double *grad, double *resid, double *jac);

/* How salta_loss_grad_fd differences (salta_fd_options_init: the
** defaults). D(s) = (L(p + s e_k) - L(p - s e_k)) / 2s for direction k. */
typedef struct salta_fd_options {
  double h;              /* the relative step (2e-5): direction k's step s is h |p_k|, with a floor
                            for |p_k| (floor, else the parameter's nominal value or the state's start
                            value; 1 when both are 0) */
  int richardson;        /* 1: one Richardson step, (4 D(s) - D(2s)) / 3 (the default); 0: D(s) */
  const int *log;        /* NULL, or a flag per free direction (borrowed for the call): 1 steps by
                            the factor exp(+-h) and gives the derivative by log p_k */
  const double *floor;   /* NULL, or per free direction the floor of its step's scale */
  int adjoint;           /* 1: difference the discrete loss of salta_loss_eval_adjoint with mesh_k
                            and consistent (1 by default) instead of the loss */
  int mesh_k, consistent;
} salta_fd_options;

void salta_fd_options_init(salta_fd_options *o);

/* The gradient (ns) by central differences of the value, for checking the
** other routes; o NULL: the defaults. err: NULL, or room for ns error
** estimates: then each direction also takes the step s / 2, grad holds
** the formula at s / 2 and err its difference from the formula at s. */
int salta_loss_grad_fd(salta_loss *loss, const double *p, const double *x0, const salta_fd_options *o,
                       double *grad, double *err);

/* The simplest gradient check: the gradient by forward sensitivities
** (grad, ns) against Richardson-extrapolated central differences with the
** step rule of salta_loss_grad_fd at step h (ref, ns) and their error
** estimate (err, ns): salta_loss_grad_fd's grad and err. A route
** agrees where |grad - ref| <= tol * max |ref| + 10 err; the loss's own
** options (tolerances) apply to both, so check at a tight rtol.
** salta_loss_check below is the whole check, with every route, a tighter
** reference and a verdict. */
int salta_loss_check_gradient(salta_loss *loss, const double *p, const double *x0, double h, double *grad,
                              double *ref, double *err);

/* The routes salta_loss_check compares (loss:check_gradient's): forward
** sensitivities and the discrete adjoint (on the integrator's own steps,
** consistent) each on the options' method, on ERK and on BDF; the
** continuous adjoint; differences (salta_loss_grad_fd at its defaults,
** with their error estimate). */
typedef enum salta_check_route {
  SALTA_CHECK_SENS = 0, SALTA_CHECK_SENS_ERK, SALTA_CHECK_SENS_BDF, SALTA_CHECK_ADJOINT, SALTA_CHECK_ADJOINT_ERK,
  SALTA_CHECK_ADJOINT_BDF, SALTA_CHECK_ADJOINT_CONT, SALTA_CHECK_FD, SALTA_CHECK_NROUTES
} salta_check_route;

/* A route's verdict, and the check's (the worst over its routes: NOT_
** DIFFERENTIABLE, DISAGREE, ILL_CONDITIONED, INCONCLUSIVE, OK in that
** order; a refused route does not count). ILL_CONDITIONED: beyond the
** tolerance, but within what the route's outputs' integration error
** carries (salta_carried_error): the model amplifies it, a smaller rtol
** tightens it. UNCERTAIN (a route): beyond, but within its own error
** estimate (differences whose step is coarser than the loss's curvature);
** the check is then INCONCLUSIVE, as it is when the reference's own error
** estimate exceeds the tolerance. */
typedef enum salta_verdict {
  SALTA_VERDICT_OK = 0, SALTA_VERDICT_ILL_CONDITIONED = 1, SALTA_VERDICT_UNCERTAIN = 2,
  SALTA_VERDICT_INCONCLUSIVE = 3, SALTA_VERDICT_DISAGREE = 4, SALTA_VERDICT_NOT_DIFFERENTIABLE = 5,
  SALTA_VERDICT_REFUSED = 6,   /* the route failed: its status and message */
  SALTA_VERDICT_SKIPPED = 7    /* the route was not asked for */
} salta_verdict;

/* The rule by which a route's gradient grad (ns) agrees with a reference
** ref (ns) whose error estimate is err (ns), relative tolerance tol:
** component k is beyond when |grad_k - ref_k| > tol max_j |ref_j| +
** 10 err_k (bad: NULL, or ns flags set for those). None beyond: OK. Else
** ILL_CONDITIONED when each beyond is within that bound plus carried_k
** (carried: NULL, or salta_carried_error's), else UNCERTAIN when each is
** within it plus carried_k plus 10 own_k (own: NULL, or the route's own
** error estimate), else DISAGREE. *worst (NULL: not wanted) gets
** max_k |grad_k - ref_k| / max_j |ref_j| (over 1 when ref is 0). */
salta_verdict salta_check_judge(int ns, const double *grad, const double *ref, const double *err, double tol,
                                const double *carried, const double *own, unsigned char *bad, double *worst);

/* What the error of a run's residuals carries into each gradient
** component: with L = sum r_i^2, errors e_i in the residuals move
** dL/dp_k by 2 sum_i e_i J_ik; out (ns) gets ten times its bound,
** 10 * 2 sum_i |resid_i - resid_ref_i| |J_ik|, which covers the
** sensitivities' own, correlated, error. resid and resid_ref (nres): the
** residuals of the run and of a tighter one; jac (nres x ns, row-major):
** the residuals' Jacobian (salta_loss_eval's layout). */
void salta_carried_error(int nres, int ns, const double *jac, const double *resid, const double *resid_ref,
                         double *out);

/* salta_loss_check's options (salta_check_options_init: zeros, each the
** default given). */
typedef struct salta_check_options {
  double tol;        /* of the largest reference component (0: max(1000 rtol, 1e-8)); differences get at
                        least rtol / h, their noise over the reference's step */
  double h;          /* the reference's relative step (0: 1e-4, retried at h / 10 and h / 100 for a
                        reference whose error estimate exceeds the tolerance) */
  double rtol_ref;   /* the reference's rtol (0: rtol / 1000 within [1e-13, 1e-10]); its atol is the
                        loss's scaled alike */
  unsigned routes;   /* 1u << route for each route to check; 0: every route */
} salta_check_options;

void salta_check_options_init(salta_check_options *o);

/* One route's outcome in salta_loss_check. */
typedef struct salta_check_result {
  salta_verdict verdict;
  int status;          /* REFUSED or NOT_DIFFERENTIABLE: the route's status (SALTA_ENODIFF for the
                          latter), and its message in message; else SALTA_OK */
  double worst;        /* max |grad - ref| over the largest |ref| */
  double carried;      /* the largest carried error over the largest |ref|: computed (and nonzero) only
                          for a route with a component beyond the tolerance */
  double own;          /* differences: ten times their largest error estimate over the largest |ref| */
  char message[1024];  /* REFUSED or NOT_DIFFERENTIABLE: the route's message, whole; else empty */
} salta_check_result;

/* The gradient check of loss:check_gradient, for a C host: every route
** asked for against Richardson-extrapolated central differences of the
** loss at rtol_ref (salta_loss_grad_fd's step rule and error estimate),
** each route judged by salta_check_judge with the error its outputs'
** integration error carries (its residuals against those at rtol_ref,
** the Jacobian at rtol_ref). Caller's room: ref and err (ns), grad
** (SALTA_CHECK_NROUTES x ns: route r's gradient at grad + r ns), routes
** (SALTA_CHECK_NROUTES results), *verdict. SALTA_OK when the check ran:
** *verdict says how it came out (a route that fails is that route's
** outcome); an error code when the reference failed, an argument is bad,
** memory ran out or salta_interrupt() stopped it. The loss's options and route are as they were
** afterwards, whatever the outcome. Cost: 6 evaluations per free
** direction for the reference (18 when refined), a gradient per route
** and, for a route beyond the tolerance, its residuals and (once) the
** reference's residual Jacobian: a check of every route can take
** hundreds of evaluations' time (the discrete adjoint on BDF's steps of a
** long run is the dearest). In the loss's parameter space (log
** transforms are loss:check_gradient's). The event structure at p (the
** groups, cascade rounds and near-grazing crossings loss:check_gradient
** names) is in the event records of salta_loss_sim after an evaluation at
** p (the check's last evaluation is at a point of its own). */
int salta_loss_check(salta_loss *loss, const double *p, const double *x0, const salta_check_options *o,
                     double *ref, double *err, double *grad, salta_check_result *routes, salta_verdict *verdict);

/* The event-split discrete adjoint: the loss of the discrete trajectory
** (trapezoidal steps on a mesh of mesh_k uniform nodes per segment, 1 to
** SALTA_MESH_MAX, or the integrator's own steps when mesh_k = 0, at most
** 10 SALTA_MESH_MAX nodes in all; re-solved to Newton tolerance
** with the forward run's event sequence) and its exact gradient (ns), by
** one backward sweep whatever the number of parameters. consistent = 0
** takes the integrator's values at the nodes as they are (the seed paper's
** approach; the gradient is then only approximate). Blending is
** supported; an event group's discrete time is its first member's guard
** root (exact for groups whose members stay simultaneous). With
** mesh_k = 0 the forward run uses BDF orders up to 2, so that the
** trapezoid on its steps is as accurate as the tolerance asks. Its step
** solves follow the options' linear_solver (AUTO resolved on nx + nz). */
#define SALTA_MESH_MAX 1000000
int salta_loss_eval_adjoint(salta_loss *loss, const double *p, const double *x0, int mesh_k,
                            int consistent, double *value, double *grad);
/* The same, and the discrete loss's residuals into resid
** (salta_loss_nresid, in salta_loss_eval's layout; NULL: none): what the
** adjoint differentiates, comparable with salta_loss_eval's residuals
** (their difference is the discrete trajectory's error at the data). */
int salta_loss_eval_adjoint_residuals(salta_loss *loss, const double *p, const double *x0, int mesh_k,
                                      int consistent, double *value, double *grad, double *resid);

/* The continuous adjoint: the loss (as salta_loss_eval's) and its gradient
** (ns), whatever the number of free directions. One forward run gives the
** loss and its event groups; each segment between groups is then run
** again and the adjoint solved backward over it, its algebraic part
** consistent with g, with quadratures for the parameters' terms, to the
** options' adjoint_rtol, adjoint_atol, quad_rtol and quad_atol: where the
** run was by BDF, by IDAS's adjoint module; where by ERK, by
** Dormand-Prince on the interpolants of an explicit re-run; either
** re-run is checkpointed every checkpoint_steps steps, its memory that
** many steps' states and one state per checkpoint. The adjoint jumps at
** each datum and through each event group by the transpose of the
** forward sensitivities' jump (cascade rounds, members a direction moves
** apart, terminal events, input breakpoints and a start that follows the
** parameters alike), measured event times adding their term to the jump
** at their firing; robust losses too. It
** neither blends nor follows event windows (SALTA_EINPUT), and reports a
** group whose members do not commute (SALTA_ENODIFF: its gradient depends
** on whether a direction moves them apart). The forward run is BDF's,
** ERK's or AUTO's as the options say. */
int salta_loss_eval_adjoint_cont(salta_loss *loss, const double *p, const double *x0, double *value,
                                 double *grad);

/* The route of salta_loss_eval's gradient when neither residuals nor
** their Jacobian are asked for: forward sensitivities (cost growing with
** the free directions) or the continuous adjoint (cost about that of a
** few forward runs whatever their number). AUTO (the default) chooses by
** salta_route_for; a loss that blends or has event windows always takes
** SENS. */
typedef enum salta_route { SALTA_ROUTE_AUTO = 0, SALTA_ROUTE_SENS = 1, SALTA_ROUTE_ADJOINT_CONT = 2 } salta_route;
int salta_loss_set_route(salta_loss *loss, salta_route route);
/* The route salta_loss_eval's gradient takes now: SENS or ADJOINT_CONT.
** AUTO's rule is salta_route_for's, its crossover raised by the targets
** per step of the loss's last run where they outnumber its steps (the
** continuous adjoint's backward problem stops at every target): so a
** loss's first evaluation and the next may take different routes. */
salta_route salta_loss_route(const salta_loss *loss);
/* The rule AUTO follows, for nfree free directions of a model of n
** unknowns (nx + nz): the continuous adjoint from SALTA_ROUTE_CROSSOVER
** free directions on, near where make bench measures it the faster (Cauer
** ladders of 15, 150 and 1,500 unknowns with 40 targets: beyond their 10
** free parameters, near 7 to 8 and near 8 on runs by ERK; near 7, 9 and 9 by
** BDF), for data no denser than the run's steps (salta_loss_route). */
#define SALTA_ROUTE_CROSSOVER 12
salta_route salta_route_for(int nfree, int n);

/* The simulation of the last evaluation: owned by the loss (do not free
** it), valid until the loss's free; its results, until the loss's next
** evaluation. It has every output at the target times (and, with
** sensitivities, their derivatives and the events' sensitivity records):
** an evaluation computes only what the loss compares, so that this call
** runs the evaluation's simulation again in full the first time it is
** made after salta_loss_eval. If that run fails (out of memory,
** interrupted), the simulation holds what it computed and its message
** (and the loss's) says why. After salta_loss_eval_adjoint: the
** adjoint's forward run, as it made it. */
salta_sim *salta_loss_sim(salta_loss *loss);

/* The statistics of the last evaluation's simulation (as
** salta_sim_stats_get; zeros before any), without running it again. */
void salta_loss_stats_get(const salta_loss *loss, salta_sim_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
