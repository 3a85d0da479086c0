/*
** salta_kernel.h -- the binary interface between generated model code and
** the engine. Generated C (JIT or ahead-of-time) defines one constant
** salta_model_def; the engine reads everything about a model from it.
**
** This header is embedded verbatim into every generated translation unit,
** so it must stay self-contained: no includes, plain C11.
*/
#ifndef SALTA_KERNEL_H
#define SALTA_KERNEL_H

#define SALTA_ABI_VERSION 12

/*
** A kernel evaluates one vector function or one sparse Jacobian at a point.
** x: differential states (nx), z: algebraic variables (nz), p: parameters
** (np), then the model's derived values (np_derived: see salta_model_def).
** out: the values, dense (length n) for a function, in pattern order
** (length nnz) for a Jacobian. Returns 0, or nonzero when an implicit reset
** equation's Newton iteration failed (the only way a kernel can fail).
** Kernels allocate nothing, keep no state and are safe to call from any
** thread.
*/
typedef int (*salta_kernel_fn)(double t, const double *x, const double *z,
                               const double *p, double *out);

/* One guard alone: guard j's value at (t, x, z, p), for locating a
** crossing without evaluating every guard. */
typedef double (*salta_guard_fn)(int j, double t, const double *x, const double *z,
                                 const double *p);

/* The explicit algebraics of segment seg (0 .. the number of stages), computed in
** place from x, p and the algebraics solved before them. Returns nonzero
** when a nested scalar Newton failed. */
typedef int (*salta_assign_fn)(int seg, double t, const double *x, double *z, const double *p);

/* The arguments of a kernel, as bits. */
enum { SALTA_ARG_T = 1, SALTA_ARG_X = 2, SALTA_ARG_Z = 4, SALTA_ARG_P = 8 };
/* A sparse Jacobian: nonzeros in column-major order (CSC-compatible).
** indep: the SALTA_ARG_* bits of the arguments its values do not depend
** on (0 when unknown), so the engine can keep a factorisation of g_z for a
** run or take one Newton step on g linear in z. */
typedef struct salta_sparse_def {
  int nnz;
  const int *row;
  const int *col;
  salta_kernel_fn eval;
  int indep;
} salta_sparse_def;

/* Which argument a Jacobian differentiates by (the index into d[]). */
typedef enum salta_wrt { SALTA_WRT_X = 0, SALTA_WRT_Z = 1, SALTA_WRT_P = 2, SALTA_WRT_T = 3 } salta_wrt;

/* A Jacobian of a function times ns columns at once (a directional
** kernel): column k of R (the function's n rows, at R + k ldr) gains the
** Jacobian by x (or by z) times column k of V (an x or z vector, at V + k
** ldv). The sparse product of the Jacobian kernel unrolled, its entries
** computed once for every column: row i receives its terms in increasing
** column, the sums of that product in its order. V and R do not overlap. */
typedef void (*salta_dirs_fn)(double t, const double *x, const double *z, const double *p,
                              const double *V, int ldv, int ns, double *R, int ldr);

/* The same by p, whose directions are its columns: column k of R gains
** column col[k] of the Jacobian by p (nothing where col[k] < 0). */
typedef void (*salta_dirs_p_fn)(double t, const double *x, const double *z, const double *p,
                                const int *col, int ns, double *R, int ldr);

/* A vector function of n rows with its four Jacobians (by x, z, p, t; the
** t-Jacobian has one column), and its directional kernels by x, z and p
** (NULL where not generated: the engine multiplies by d[] instead). */
typedef struct salta_function_def {
  int n;
  salta_kernel_fn eval;
  salta_sparse_def d[4];
  salta_dirs_fn dirs_x, dirs_z;
  salta_dirs_p_fn dirs_p;
} salta_function_def;

/* Event flags (salta_model_def.e_flags): a terminal event ends the run; a
** breakpoint is an input table's kink or step, an event of the engine's (it
** counts toward neither max_events nor the Zeno check); a guard with hidden
** reads reads states its row of e_x does not show (through floor, ceil,
** sign or a condition, whose derivatives are 0), so that a probe of it
** needs every state, not only those of its row. */
enum { SALTA_EVENT_TERMINAL = 1, SALTA_EVENT_BREAKPOINT = 2, SALTA_EVENT_HIDDEN_READS = 4 };

/* Event guard crossing directions (the values of e_direction, an int
** array so that the struct's layout stays the ABI's). */
typedef enum salta_dir { SALTA_DIR_DOWN = -1, SALTA_DIR_BOTH = 0, SALTA_DIR_UP = 1 } salta_dir;

typedef struct salta_model_def {
  int abi;                     /* SALTA_ABI_VERSION */
  const char *name;
  const char *hash;            /* content hash of the generating source */
  int nx, nz, np, ny, ne;
  const char *const *x_names;
  const char *const *z_names;
  const char *const *p_names;
  const char *const *y_names;
  const char *const *e_names;
  const double *x_start;
  const double *z_start;
  const double *p_nominal;
  /* Subexpressions of the parameters alone, computed once per parameter
  ** vector instead of at every call: every p given to a kernel holds
  ** np + np_derived values, the last np_derived written by derive from the
  ** first np (derive is NULL when np_derived is 0). */
  int np_derived;
  void (*derive)(double *p);
  const int *e_direction;      /* SALTA_DIR_* per event */
  salta_function_def f;        /* x' = f(t,x,z,p), n = nx */
  salta_function_def g;        /* 0 = g(t,x,z,p), n = nz */
  salta_function_def h;        /* y = h(t,x,z,p), n = ny */
  salta_function_def e;        /* guards, n = ne */
  const salta_function_def *r; /* ne resets, each n = nx: x+ on the states the
                                  reset assigns (its kernel writes only those
                                  rows, and its Jacobians have only those) */
  const int *r_assign_ptr;     /* ne + 1: event j's reset names the states
                                  r_assign_rows[r_assign_ptr[j] ..
                                  r_assign_ptr[j + 1]) (increasing) */
  const int *r_assign_rows;
  salta_guard_fn e_one;        /* guard j alone; NULL: the engine evaluates e */
  const int *y_state;          /* ny: j where output i is state j (y_i = x_j),
                                  else -1; NULL: none known */
  salta_function_def start;    /* x0 = start(p), n = nx, read at t0 (x and z
                                  are x_start and z_start); eval NULL: the
                                  constant x_start */
  const unsigned char *e_flags; /* ne: SALTA_EVENT_* bits per event; NULL:
                                   every event is plain */
  const int *x_mode;           /* nx: for the mode of an if-expression (a
                                  state f keeps constant), the event whose
                                  guard sets it at the start (1 where the
                                  guard is < 0, else 0); for an input's
                                  piece index with events up j and down
                                  j + 1, -2 - j (at the start on its down
                                  breakpoint heading down, it takes the
                                  piece before); -1 for other states;
                                  NULL: no modes */
  /* The structure of g = 0 (salta's structural compiler): row i of g
  ** solves algebraic i. The engine solves segment 0 of the explicit
  ** algebraics (z_assign), then the blocks of stage 0 by Newton, each on
  ** its own rows, then segment 1, ..., the blocks of the last stage, the
  ** last segment. Blocks of one stage do not read each other's unknowns.
  ** z_block NULL: one Newton on all of g. */
  int nblocks;
  const int *z_block;          /* nz: the block that solves algebraic i, or
                                  -1 where z_assign computes it */
  salta_assign_fn z_assign;    /* NULL: no explicit algebraics */
  const int *block_stage;      /* nblocks: the stage of each block (the
                                  segments of z_assign are 0 .. the number
                                  of stages); NULL: block b is stage b */
  /* The reduced right-hand side F(t, x, p) = f(t, x, z(t, x, p), p) of a
  ** model whose algebraics z_assign computes alone (nblocks 0, one
  ** segment): its directional kernels by x and by p, as f's (z holds the
  ** assigned values at x). Both or neither; NULL: the engine solves the
  ** sensitivities' z rows by g_z, then multiplies by f's. */
  salta_dirs_fn reduced_dx;
  salta_dirs_p_fn reduced_dp;
  /* Index reduction's dummy derivatives (the structural compiler): each
  ** made a state algebraic where a constraint's derivative by it, its
  ** pivot, was largest at the start values. The engine stops a run where
  ** a pivot vanishes against the constraint's gradient: the constraint no
  ** longer determines the dummy there. npivots 0: none to check. */
  int npivots;
  salta_kernel_fn pivots;      /* out[2k]: pivot k; out[2k + 1]: the norm of
                                  its constraint's gradient by the states
                                  the dummy was chosen from */
  const char *const *pivot_dummy;   /* npivots: the dummy's name */
  const char *const *pivot_eq;      /* npivots: its constraint, as text */
  /* Input tables: the reads whose argument must lie inside its table,
  ** which the engine checks before a run (ninputs 0: none). Read k's
  ** argument is out[k] of input_args at (t, x, z, p): at t0 with the start
  ** state (z at z_start), and also at tf where input_affine[k] (an
  ** argument of t and the parameters alone, affine in t) must lie in
  ** [input_lo[k], input_hi[k]]; input_name[k] is the input's name,
  ** input_arg[k] the argument as text. */
  int ninputs;
  salta_kernel_fn input_args;
  const double *input_lo, *input_hi;
  const unsigned char *input_affine;
  const char *const *input_name;
  const char *const *input_arg;
  const int *e_input;          /* ne: for an event that moves an input's
                                  piece index, the read (an index of the
                                  input arrays) whose argument left its
                                  table when the reset makes the index NaN;
                                  -1 for other events; NULL: none */
  /* The piece indices of input tables (hidden states) of a start state
  ** given to a run, from its other states at t0: writes those rows of
  ** out (nx) alone. NULL: none. */
  salta_kernel_fn held;
} salta_model_def;

#endif
