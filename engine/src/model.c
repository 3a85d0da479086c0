/*
** model.c -- the model object: a checked view of a salta_model_def with an
** evaluation API.
*/
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "matching.h"
#include "params.h"
#include "salta.h"

struct salta_model {
  /* the kernels in use: salta_model_swap_def replaces them while other
  ** threads may read them, so that each call reads them once */
  _Atomic(const salta_model_def *) def;
  char err[SALTA_ERRMSG_SIZE];   /* creation's message; written only by salta_model_create */
};

static const salta_model_def *def_of(const salta_model *m) {
  return atomic_load_explicit(&m->def, memory_order_acquire);
}

/* An evaluation's failure. Evaluations write no field of the model, so
** that threads may share it: each thread keeps the message of its own
** last failed evaluation, and the model it was about. */
static _Thread_local const salta_model *failed_model;
static _Thread_local char failed_err[SALTA_ERRMSG_SIZE];

static int eval_fail(const salta_model *m, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int eval_fail(const salta_model *m, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(failed_err, sizeof failed_err, fmt, ap);
  va_end(ap);
  failed_model = m;
  return status;
}

static const char *const fn_names[] = {"f", "g", "h", "guard", "reset"};
static const char *const wrt_names[] = {"x", "z", "p", "t"};

/* The function definition selected by (fn, event), or NULL. */
static const salta_function_def *function_of(const salta_model_def *d,
                                             salta_fn fn, int event) {
  switch (fn) {
    case SALTA_FN_F: return &d->f;
    case SALTA_FN_G: return &d->g;
    case SALTA_FN_H: return &d->h;
    case SALTA_FN_E: return &d->e;
    case SALTA_FN_R:
      return (event >= 0 && event < d->ne) ? &d->r[event] : NULL;
  }
  return NULL;
}

static int wrt_cols(const salta_model_def *d, int wrt) {
  switch (wrt) {
    case SALTA_WRT_X: return d->nx;
    case SALTA_WRT_Z: return d->nz;
    case SALTA_WRT_P: return d->np;
    case SALTA_WRT_T: return 1;
  }
  return -1;
}

static int check_sparse(salta_model *m, const salta_sparse_def *s, int rows,
                        int cols, const char *what, int wrt) {
  int k;
  if (s->nnz < 0 || (s->nnz > 0 && (!s->row || !s->col || !s->eval)))
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': d%s/d%s has a bad pattern",
                       def_of(m)->name, what, wrt_names[wrt]);
  for (k = 0; k < s->nnz; ++k) {
    int bad = s->row[k] < 0 || s->row[k] >= rows || s->col[k] < 0 || s->col[k] >= cols;
    if (!bad && k > 0)  /* column-major, rows increasing within a column */
      bad = s->col[k] < s->col[k - 1] ||
            (s->col[k] == s->col[k - 1] && s->row[k] <= s->row[k - 1]);
    if (bad)
      return salta__fail(m->err, SALTA_EINPUT,
                         "model '%s': d%s/d%s entry %d at (%d, %d) is out of order or range",
                         def_of(m)->name, what, wrt_names[wrt], k, s->row[k], s->col[k]);
  }
  return SALTA_OK;
}

static int check_function(salta_model *m, const salta_function_def *f, int rows,
                          const char *what) {
  int w, st;
  if (f->n != rows || !f->eval)   /* the engine calls every function, even with 0 rows */
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': %s has %d rows, expected %d",
                       def_of(m)->name, what, f->n, rows);
  for (w = 0; w < 4; ++w)
    if ((st = check_sparse(m, &f->d[w], rows, wrt_cols(def_of(m), w), what, w)))
      return st;
  return SALTA_OK;
}

static int check_names(salta_model *m, const char *const *names, int n,
                       const char *what) {
  int i;
  if (n > 0 && !names)
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': no %s names", def_of(m)->name, what);
  for (i = 0; i < n; ++i)
    if (!names[i] || !names[i][0])
      return salta__fail(m->err, SALTA_EINPUT, "model '%s': %s %d has no name",
                         def_of(m)->name, what, i);
  return SALTA_OK;
}

/* Appends item to the list in buf, separated by commas, up to a few. */
static void list_item(char *buf, size_t cap, int *count, const char *item) {
  size_t len = strlen(buf);
  if (*count < 4) snprintf(buf + len, cap - len, "%s%s", *count > 0 ? ", " : "", item);
  else if (*count == 4) snprintf(buf + len, cap - len, ", ...");
  ++*count;
}

/* An index-1 DAE needs dg/dz nonsingular, so at least structurally: every
** algebraic equation matched to an algebraic variable it involves. */
static int check_index1(salta_model *m) {
  const salta_model_def *d = def_of(m);
  const salta_sparse_def *gz = &d->g.d[SALTA_WRT_Z];
  int nz = d->nz, *col_of_row, *row_of_col, size, i, st, neq = 0, nvar = 0;
  char eqs[256] = "", vars[256] = "";
  if (nz == 0) return SALTA_OK;
  col_of_row = malloc(sizeof(int) * 2 * (size_t)nz);
  if (!col_of_row) return salta__fail(m->err, SALTA_EMEM, "out of memory");
  row_of_col = col_of_row + nz;
  if ((st = salta__max_matching(nz, nz, gz->nnz, gz->row, gz->col, col_of_row, row_of_col, &size, m->err)) ||
      size == nz) {
    free(col_of_row);
    return st;
  }
  for (i = 0; i < nz; ++i) {
    char item[80];
    if (col_of_row[i] < 0) snprintf(item, sizeof item, "g[%d]", i + 1), list_item(eqs, sizeof eqs, &neq, item);
    if (row_of_col[i] < 0) snprintf(item, sizeof item, "'%.60s'", d->z_names[i]), list_item(vars, sizeof vars, &nvar, item);
  }
  free(col_of_row);
  return salta__fail(m->err, SALTA_EINPUT,
                     "model '%s': not an index-1 DAE: dg/dz is structurally singular (rank %d of %d): no algebraic "
                     "variable is left for equation%s %s, and variable%s %s appear%s in no equation left to "
                     "determine %s (an equation without an algebraic variable it can be solved for is a "
                     "constraint on the states: reduce the index, as salta's structural compiler does by default)",
                     d->name, size, nz, neq > 1 ? "s" : "", eqs, nvar > 1 ? "s" : "", vars, nvar > 1 ? "" : "s",
                     nvar > 1 ? "them" : "it");
}

static int check_def(salta_model *m) {
  const salta_model_def *d = def_of(m);
  char what[64];
  int st, j;
  if (d->nx < 0 || d->nz < 0 || d->np < 0 || d->ny < 0 || d->ne < 0)
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': negative size", d->name);
  if ((st = check_names(m, d->x_names, d->nx, "state")) ||
      (st = check_names(m, d->z_names, d->nz, "algebraic")) ||
      (st = check_names(m, d->p_names, d->np, "parameter")) ||
      (st = check_names(m, d->y_names, d->ny, "output")) ||
      (st = check_names(m, d->e_names, d->ne, "event")))
    return st;
  if ((d->np > 0 && !d->p_nominal) || (d->nx > 0 && !d->x_start) || (d->nz > 0 && !d->z_start))
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': missing nominal or start values", d->name);
  if (d->nx == 0)
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': no differential states", d->name);
  for (j = 0; j < d->np; ++j)
    if (!isfinite(d->p_nominal[j]))
      return salta__fail(m->err, SALTA_EINPUT, "model '%s': parameter '%s' has non-finite nominal value %g",
                         d->name, d->p_names[j], d->p_nominal[j]);
  if ((st = check_function(m, &d->f, d->nx, "f")) ||
      (st = check_function(m, &d->g, d->nz, "g")) ||
      (st = check_function(m, &d->h, d->ny, "h")) ||
      (st = check_function(m, &d->e, d->ne, "guard")))
    return st;
  if (d->ne > 0 && (!d->r || !d->e_direction || !d->r_assign_ptr || (d->r_assign_ptr[d->ne] > 0 && !d->r_assign_rows)))
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': events without resets or directions", d->name);
  for (j = 0; j < d->ne; ++j) {
    int dir = d->e_direction[j];
    if (dir < SALTA_DIR_DOWN || dir > SALTA_DIR_UP)
      return salta__fail(m->err, SALTA_EINPUT, "model '%s': event '%s' has direction %d",
                         d->name, d->e_names[j], dir);
    snprintf(what, sizeof what, "reset of event %d", j);
    if ((st = check_function(m, &d->r[j], d->nx, what))) return st;
  }
  if (d->np_derived < 0 || (d->np_derived > 0 && !d->derive))
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': %d derived parameter values without their kernel", d->name,
                       d->np_derived);
  if (!d->reduced_dx != !d->reduced_dp)
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': one of the reduced right-hand side's kernels without the "
                       "other", d->name);
  if (d->reduced_dx && (d->nblocks != 0 || !d->z_block || !d->z_assign))
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': a reduced right-hand side, but z_assign does not compute "
                       "every algebraic", d->name);
  if (d->npivots < 0 || (d->npivots > 0 && !d->pivots))
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': %d dummy pivots without their kernel", d->name, d->npivots);
  if ((st = check_names(m, d->pivot_dummy, d->npivots, "dummy")) ||
      (st = check_names(m, d->pivot_eq, d->npivots, "dummy's constraint")))
    return st;
  if (d->ninputs < 0 ||
      (d->ninputs > 0 && (!d->input_args || !d->input_lo || !d->input_hi || !d->input_affine)))
    return salta__fail(m->err, SALTA_EINPUT, "model '%s': %d input reads without their kernel or tables' ends",
                       d->name, d->ninputs);
  if ((st = check_names(m, d->input_name, d->ninputs, "input")) ||
      (st = check_names(m, d->input_arg, d->ninputs, "input's argument")))
    return st;
  for (j = 0; d->e_input && j < d->ne; ++j)
    if (d->e_input[j] < -1 || d->e_input[j] >= d->ninputs)
      return salta__fail(m->err, SALTA_EINPUT, "model '%s': event '%s' names input read %d (model has %d)", d->name,
                         d->e_names[j], d->e_input[j], d->ninputs);
  return check_index1(m);
}

int salta_model_create(salta_model **out, const salta_model_def *def) {
  salta_model *m;
  int st;
  if (!out) return SALTA_EINPUT;
  *out = NULL;
  if (!def) return SALTA_EINPUT;
  m = calloc(1, sizeof *m);
  if (!m) return SALTA_EMEM;
  atomic_init(&m->def, def);
  if (def->abi != SALTA_ABI_VERSION || !def->name) {
    st = salta__fail(m->err, SALTA_EINPUT, "model: kernel ABI %d, engine expects %d",
                     def->abi, SALTA_ABI_VERSION);
  } else {
    st = check_def(m);
  }
  *out = m;  /* returned even on failure, so the caller can read errmsg */
  return st;
}

void salta_model_free(salta_model **model) {
  if (!model || !*model) return;
  if (failed_model == *model) failed_model = NULL;
  free(*model);
  *model = NULL;
}

const char *salta_model_errmsg(const salta_model *model) {
  if (!model) return "no model";
  return model == failed_model ? failed_err : model->err;
}

const salta_model_def *salta_model_def_get(const salta_model *model) {
  return model ? def_of(model) : NULL;
}

int salta_model_swap_def(salta_model *model, const salta_model_def *def) {
  const salta_model_def *d;
  if (!model) return SALTA_EINPUT;
  d = def_of(model);
  if (!def || def->abi != SALTA_ABI_VERSION || !def->hash || !d->hash || strcmp(def->hash, d->hash) != 0)
    return eval_fail(model, SALTA_EINPUT, "model '%s': the new kernels are not the model's (source hash %s, the "
                     "model's %s)", d->name, def && def->abi == SALTA_ABI_VERSION && def->hash ? def->hash : "none",
                     d->hash ? d->hash : "none");
  atomic_store_explicit(&model->def, def, memory_order_release);
  return SALTA_OK;
}

int salta_model_rows(const salta_model *model, salta_fn fn) {
  const salta_model_def *d;
  const salta_function_def *f;
  if (!model) return SALTA_EINPUT;
  d = def_of(model);
  if (fn == SALTA_FN_R) return d->nx;
  f = function_of(d, fn, 0);
  return f ? f->n : SALTA_EINPUT;
}

/* Resolves (fn, event) in d or sets the thread's error. */
static const salta_function_def *select_fn(const salta_model *m, const salta_model_def *d, salta_fn fn, int event) {
  const salta_function_def *f = function_of(d, fn, event);
  if (!f) {
    if ((unsigned)fn <= SALTA_FN_R)
      eval_fail(m, SALTA_EINPUT, "model '%s': no event %d (model has %d)", d->name, event, d->ne);
    else
      eval_fail(m, SALTA_EINPUT, "model '%s': unknown function %d", d->name, (int)fn);
  }
  return f;
}

static int kernel_failed(const salta_model *m, const salta_model_def *d, salta_fn fn, int event, double t) {
  if (fn == SALTA_FN_R)
    return eval_fail(m, SALTA_EKERNEL, "model '%s': the implicit reset of event '%s' did not converge at t = %.17g",
                     d->name, d->e_names[event], t);
  return eval_fail(m, SALTA_EKERNEL, "model '%s': kernel %s failed at t = %.17g", d->name, fn_names[fn], t);
}

/* The parameters as the kernels read them: p itself when d derives no
** values from them, else a copy with those values (*owned, for the
** caller to free); NULL when out of memory. */
static const double *full_params(const salta_model_def *d, const double *p, double **owned) {
  *owned = NULL;
  if (d->np_derived == 0) return p;
  if (!(*owned = malloc(sizeof(double) * salta__params_len(d)))) return NULL;
  salta__params_fill(d, p, *owned);
  return *owned;
}

int salta_model_eval(const salta_model *model, salta_fn fn, int event, double t,
                     const double *x, const double *z, const double *p,
                     double *out) {
  const salta_model_def *d;
  const salta_function_def *f;
  double *pf;
  int st;
  if (!model) return SALTA_EINPUT;
  d = def_of(model);
  if (!(f = select_fn(model, d, fn, event))) return SALTA_EINPUT;
  if (f->n == 0) return SALTA_OK;
  if (fn == SALTA_FN_R) memcpy(out, x, sizeof(double) * (size_t)f->n);   /* the states it keeps */
  if (!(p = full_params(d, p, &pf))) return eval_fail(model, SALTA_EMEM, "out of memory");
  st = f->eval(t, x, z, p, out);
  free(pf);
  return st ? kernel_failed(model, d, fn, event, t) : SALTA_OK;
}

int salta_model_pattern(const salta_model *model, salta_fn fn, int event,
                        salta_wrt wrt, int *nnz, const int **row, const int **col) {
  const salta_function_def *f;
  if (!model || (unsigned)wrt > SALTA_WRT_T) return SALTA_EINPUT;
  if (!(f = function_of(def_of(model), fn, event))) return SALTA_EINPUT;
  if (nnz) *nnz = f->d[wrt].nnz;
  if (row) *row = f->d[wrt].row;
  if (col) *col = f->d[wrt].col;
  return SALTA_OK;
}

/* salta_model_jac with the kernels d. */
static int jac_of(const salta_model *model, const salta_model_def *d, salta_fn fn, int event, salta_wrt wrt,
                  double t, const double *x, const double *z, const double *p, double *vals) {
  const salta_function_def *f;
  double *pf;
  int st;
  if ((unsigned)wrt > SALTA_WRT_T)
    return eval_fail(model, SALTA_EINPUT, "model '%s': unknown Jacobian argument %d", d->name, (int)wrt);
  if (!(f = select_fn(model, d, fn, event))) return SALTA_EINPUT;
  if (f->d[wrt].nnz == 0) return SALTA_OK;
  if (!(p = full_params(d, p, &pf))) return eval_fail(model, SALTA_EMEM, "out of memory");
  st = f->d[wrt].eval(t, x, z, p, vals);
  free(pf);
  return st ? kernel_failed(model, d, fn, event, t) : SALTA_OK;
}

int salta_model_jac(const salta_model *model, salta_fn fn, int event, salta_wrt wrt,
                    double t, const double *x, const double *z,
                    const double *p, double *vals) {
  if (!model) return SALTA_EINPUT;
  return jac_of(model, def_of(model), fn, event, wrt, t, x, z, p, vals);
}

int salta_model_jac_dense(const salta_model *model, salta_fn fn, int event, salta_wrt wrt,
                          double t, const double *x, const double *z,
                          const double *p, double *dense, int ld) {
  const salta_model_def *d;
  const salta_function_def *f;
  const salta_sparse_def *s;
  double *vals;
  int k, j, cols, st;
  if (!model) return SALTA_EINPUT;
  d = def_of(model);
  if (!(f = select_fn(model, d, fn, event))) return SALTA_EINPUT;
  if ((unsigned)wrt > SALTA_WRT_T || ld < f->n)
    return eval_fail(model, SALTA_EINPUT, "model '%s': bad Jacobian argument %d or leading dimension %d",
                     d->name, (int)wrt, ld);
  s = &f->d[wrt];
  cols = wrt_cols(d, wrt);
  for (j = 0; j < cols; ++j) memset(dense + (size_t)j * ld, 0, sizeof(double) * f->n);
  vals = malloc(sizeof(double) * ((size_t)s->nnz + 1));
  if (!vals) return eval_fail(model, SALTA_EMEM, "out of memory");
  st = s->nnz ? jac_of(model, d, fn, event, wrt, t, x, z, p, vals) : SALTA_OK;
  if (st == SALTA_OK)
    for (k = 0; k < s->nnz; ++k) dense[(size_t)s->col[k] * ld + s->row[k]] = vals[k];
  free(vals);
  if (st == SALTA_OK && fn == SALTA_FN_R && wrt == SALTA_WRT_X && d->r_assign_ptr) {
    const int *rows = d->r_assign_rows, lo = d->r_assign_ptr[event], hi = d->r_assign_ptr[event + 1];
    int q = lo;
    for (k = 0; k < f->n; ++k) {   /* the states the reset keeps */
      while (q < hi && rows[q] < k) ++q;
      if (!(q < hi && rows[q] == k)) dense[(size_t)k * ld + k] = 1.0;
    }
  }
  return st;
}
