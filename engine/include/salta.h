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
**  - Status codes: SALTA_OK (0) or a negative SALTA_E* code. After an error
**    the handle's message (salta_*_errmsg) says what failed, naming the
**    model element, the time and the value. The engine never prints, exits
**    or aborts.
**  - Ownership is stated per function: "borrows" (caller keeps ownership and
**    must keep it alive), "copies", "returns owned".
**  - Threads: handles are independent; use one handle from one thread at a
**    time. Kernels are pure and may be shared.
*/
#ifndef SALTA_H
#define SALTA_H

#include <stddef.h>
#include "salta_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes ---------------------------------------------------- */

enum {
  SALTA_OK = 0,
  SALTA_EMEM = -1,      /* out of memory */
  SALTA_EINPUT = -2,    /* bad argument (sizes, indices, non-finite value) */
  SALTA_EJIT = -3,      /* compiling or loading generated code failed */
  SALTA_EKERNEL = -4,   /* a kernel failed (implicit reset did not converge) */
  SALTA_ESOLVER = -5    /* the integrator or a Newton iteration failed */
};

/* ---- function selectors -------------------------------------------------- */

/* The vector functions of a model (salta_model_eval's `fn`). */
typedef enum salta_fn {
  SALTA_FN_F = 0,       /* x' = f(t,x,z,p), nx rows */
  SALTA_FN_G = 1,       /* 0 = g(t,x,z,p), nz rows */
  SALTA_FN_H = 2,       /* y = h(t,x,z,p), ny rows */
  SALTA_FN_E = 3,       /* event guards, ne rows */
  SALTA_FN_R = 4        /* reset of one event (x+), nx rows */
} salta_fn;

/* ---- compiled code (JIT, cc backend) --------------------------------------- */

typedef struct salta_jit salta_jit;

/* Returns owned, empty; free with salta_jit_free. */
int salta_jit_create(salta_jit **out);
void salta_jit_free(salta_jit **jit);
const char *salta_jit_errmsg(const salta_jit *jit);

/* Compiles src with the system C compiler (`$CC`, else `cc`, with
** `-O2 -shared -fPIC`) into cache_dir (NULL: $XDG_CACHE_HOME/salta, else
** ~/.cache/salta), named by a content hash so an unchanged model is not
** recompiled, then loads it and looks up the salta_model_def `symbol`.
** model_name is used in messages. A compile error's message quotes the
** generated line. One compile per handle. */
int salta_jit_compile_cc(salta_jit *jit, const char *src, const char *symbol,
                         const char *model_name, const char *cache_dir);

/* The loaded definition (borrowed, valid until salta_jit_free), or NULL. */
const salta_model_def *salta_jit_def(const salta_jit *jit);

/* Whether the last compile was served from the cache. */
int salta_jit_cached(const salta_jit *jit);

/* ---- the model ----------------------------------------------------------------- */

typedef struct salta_model salta_model;

/* Returns owned; borrows def, which must outlive the model. Checks the ABI
** version and that sizes, names, patterns and nominal values make sense. */
int salta_model_create(salta_model **out, const salta_model_def *def);
void salta_model_free(salta_model **model);
const char *salta_model_errmsg(const salta_model *model);

const salta_model_def *salta_model_def_get(const salta_model *model);

/* Rows of function fn (for SALTA_FN_R: nx), or a negative status. */
int salta_model_rows(const salta_model *model, salta_fn fn);

/* Evaluates fn at (t, x, z, p) into out (rows(fn) values). `event` selects
** the event for SALTA_FN_R and is ignored otherwise. */
int salta_model_eval(salta_model *model, salta_fn fn, int event, double t,
                     const double *x, const double *z, const double *p,
                     double *out);

/* The sparsity pattern of d fn / d wrt (wrt: SALTA_WRT_X/Z/P/T): *nnz
** entries at (row[k], col[k]), column-major. Borrowed arrays. */
int salta_model_pattern(const salta_model *model, salta_fn fn, int event,
                        int wrt, int *nnz, const int **row, const int **col);

/* Evaluates the nonzeros of d fn / d wrt into vals (nnz values). */
int salta_model_jac(salta_model *model, salta_fn fn, int event, int wrt,
                    double t, const double *x, const double *z,
                    const double *p, double *vals);

/* Same, scattered into a dense column-major rows(fn) x ncols(wrt) matrix
** with leading dimension ld (entries outside the pattern are set to 0). */
int salta_model_jac_dense(salta_model *model, salta_fn fn, int event, int wrt,
                          double t, const double *x, const double *z,
                          const double *p, double *dense, int ld);

#ifdef __cplusplus
}
#endif

#endif
