/*
** erk_adj.c -- the continuous adjoint's backward problem by Dormand-Prince
** (see backward.h), for runs by ERK. The segment is run again by ERK at a
** tenth of the tolerances, checkpointed every checkpoint_steps steps: the
** steps of one interval between checkpoints are kept (each step's
** interpolant of x, and z at its end), and an earlier interval is run
** again from its checkpoint when the backward problem reaches it, so that
** the memory is that of one interval and the cost at most a second run.
** The adjoint and its quadratures are integrated in reversed time s = -t,
** as the ODE
**   d lam / ds = F_x^T lam,   d q / ds = F_p^T lam   (q's chosen rows),
** F_w^T lam = f_w^T lam - g_w^T g_z^-T f_z^T lam (the algebraics eliminated
** through g, as ERK eliminates them forward), reading x from the
** interpolants and solving z from g there; its steps stop at each
** checkpoint, so that none reads two intervals. Being one-step, it
** restarts at a datum's jump with its last step size and no loss of
** order, where BDF starts again from order 1 and tiny steps.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "backward.h"
#include "dopri.h"
#include "errors.h"
#include "integrator.h"

typedef struct erk_adj {
  salta__dae *dae;
  salta__backward_opts op;
  int nx, nz, n, nq;
  /* the forward re-run */
  salta_sim_options fo;         /* its options: the run's, at a tenth of its tolerances */
  double init_step;             /* the run's first step size (fo.init_step varies by interval) */
  salta_sim_stats fstats;
  salta__track track;
  salta__integrator it;
  int nck, ck_cap;              /* its checkpoints, and room for so many */
  double *ck_t, *ck_h;          /* ck_cap: each one's time, and the step size before it (0: the start) */
  double *ck_w;                 /* ck_cap x n: each one's state */
  int loaded;                   /* the checkpoint whose interval's steps are kept */
  double t_end;                 /* the run's end, the last interval's */
  int nsteps, cap;              /* the interval's steps, and room for so many */
  double *t_step, *h_step;      /* cap: each step's start and size */
  double *coef;                 /* cap x 5 nx: each step's interpolant of x */
  double *z_end;                /* (cap + 1) x nz: z at the interval's start, then at each step's end */
  int cur;                      /* the step the last right-hand side read */
  /* the backward problem over Y = [lam / scale; q / scale] (dp.h its next step size, 0: none yet) */
  salta__dopri dp;
  double *w;                    /* n: the forward state at a stage */
  double *v;                    /* n: the transposed products there */
  double *gp;                   /* np: their parameter rows */
  double scale;                 /* 0: lam = 0 since the last restart */
  double tb;                    /* where it is (in t) */
} erk_adj;

static const char *name_of(const erk_adj *c) { return c->dae->d->name; }

/* ---- the forward re-run ------------------------------------------------------------ */

/* Room for one more step. */
static int reserve(erk_adj *c) {
  int cap = c->cap ? 2 * c->cap : 64;
  double *t, *h, *coef, *z;
  if (c->nsteps < c->cap) return SALTA_OK;
  t = realloc(c->t_step, sizeof(double) * (size_t)cap), c->t_step = t ? t : c->t_step;
  h = realloc(c->h_step, sizeof(double) * (size_t)cap), c->h_step = h ? h : c->h_step;
  coef = realloc(c->coef, sizeof(double) * 5 * (size_t)c->nx * (size_t)cap), c->coef = coef ? coef : c->coef;
  z = realloc(c->z_end, sizeof(double) * (size_t)c->nz * ((size_t)cap + 1) + 1), c->z_end = z ? z : c->z_end;
  if (!t || !h || !coef || !z) return salta__fail(c->dae->err, SALTA_EMEM, "out of memory");
  c->cap = cap;
  return SALTA_OK;
}

/* The accepted step just taken: its interpolant and its end's z. */
static int keep_step(erk_adj *c) {
  const double *d;
  int st;
  if ((st = reserve(c))) return st;
  if (!(d = salta__erk_interpolant(&c->it, &c->t_step[c->nsteps], &c->h_step[c->nsteps])))
    return salta__fail(c->dae->err, SALTA_EINPUT, "model '%s': continuous adjoint: the re-run has sensitivities",
                       name_of(c));
  memcpy(c->coef + (size_t)5 * c->nx * c->nsteps, d, sizeof(double) * 5 * (size_t)c->nx);
  if ((st = c->it.ops->end_state(c->it.self, c->w, NULL))) return st;
  memcpy(c->z_end + (size_t)c->nz * (c->nsteps + 1), c->w + c->nx, sizeof(double) * (size_t)c->nz);
  c->nsteps++;
  return SALTA_OK;
}

/* A checkpoint at (t, w), h the size of the step that ended there (0 at
** the run's start). */
static int add_checkpoint(erk_adj *c, double t, double h, const double *w) {
  if (c->nck == c->ck_cap) {
    int cap = c->ck_cap ? 2 * c->ck_cap : 16;
    double *ct = realloc(c->ck_t, sizeof(double) * (size_t)cap), *ch, *cw;
    c->ck_t = ct ? ct : c->ck_t;
    ch = realloc(c->ck_h, sizeof(double) * (size_t)cap), c->ck_h = ch ? ch : c->ck_h;
    cw = realloc(c->ck_w, sizeof(double) * (size_t)c->n * (size_t)cap), c->ck_w = cw ? cw : c->ck_w;
    if (!ct || !ch || !cw) return salta__fail(c->dae->err, SALTA_EMEM, "out of memory");
    c->ck_cap = cap;
  }
  c->ck_t[c->nck] = t, c->ck_h[c->nck] = h;
  memcpy(c->ck_w + (size_t)c->n * c->nck, w, sizeof(double) * (size_t)c->n);
  c->nck++;
  return SALTA_OK;
}

/* The interval from checkpoint j run to t1, its steps kept; the first
** run (j == 0, first set) adds a checkpoint every checkpoint_steps steps
** and keeps only the last interval's steps. */
static int run_interval(erk_adj *c, int j, double t1, int first) {
  const double t0 = c->ck_t[j];
  double told = t0, tnew = t0;
  long steps = 0;
  int st;
  c->nsteps = 0, c->cur = 0, c->loaded = j;
  if ((st = reserve(c))) return st;
  memcpy(c->z_end, c->ck_w + (size_t)c->n * j + c->nx, sizeof(double) * (size_t)c->nz);
  c->fo.init_step = j > 0 ? c->ck_h[j] : c->init_step;
  if ((st = c->it.ops->start(c->it.self, t0, c->ck_w + (size_t)c->n * j, NULL))) return st;
  while (tnew < t1) {
    if (salta_interrupted()) return salta__cadj_interrupted(c->dae->err, name_of(c), tnew);
    if (c->fo.max_steps > 0 && steps >= c->fo.max_steps)
      return salta__fail(c->dae->err, SALTA_ESOLVER, "model '%s': continuous adjoint: its re-run took %ld steps from "
                         "t = %.17g to %.17g (max_steps)", name_of(c), steps, t0, tnew);
    if ((st = c->it.ops->step(c->it.self, t1, &told, &tnew)) || (st = keep_step(c))) return st;
    ++steps;
    if (first && c->nsteps >= c->op.checkpoint_steps && tnew < t1) {
      if ((st = add_checkpoint(c, tnew, c->h_step[c->nsteps - 1], c->w))) return st;
      c->nsteps = 0, c->loaded = c->nck - 1;
      memcpy(c->z_end, c->w + c->nx, sizeof(double) * (size_t)c->nz);
    }
  }
  return SALTA_OK;
}

static int erk_adj_forward(void *self, double t0, const double *w0, double t1) {
  erk_adj *c = self;
  int st;
  salta__integrator_env env = {c->dae, NULL, &c->fo, SALTA_LS_NONE, &c->fstats, &c->track, 0};
  c->fo.tf = c->t_end = t1;
  c->nck = 0;
  if (!c->it.self && (st = salta__erk_create(&c->it, &env))) return st;
  if ((st = add_checkpoint(c, t0, 0, w0))) return st;
  return run_interval(c, 0, t1, 1);
}

/* The interval from checkpoint j run again, its steps kept. */
static int load_interval(erk_adj *c, int j) {
  return run_interval(c, j, j + 1 < c->nck ? c->ck_t[j + 1] : c->t_end, 0);
}

/* Whether t is outside the kept interval. */
static int outside_loaded(const erk_adj *c, double t) {
  return t < c->ck_t[c->loaded] || (c->loaded + 1 < c->nck && t > c->ck_t[c->loaded + 1]);
}

/* The interval that holds t. */
static int interval_of(const erk_adj *c, double t) {
  int j = c->nck - 1;
  while (j > 0 && t < c->ck_t[j]) --j;
  return j;
}

/* The forward state at t into c->w: x from its step's interpolant, z
** solved from g there, from the line between the step's ends. */
static int state_at(erk_adj *c, double t) {
  int k = c->cur, i, st;
  double th;
  const double *d, *za, *zb;
  if (outside_loaded(c, t)) {   /* a restart before the kept interval */
    if ((st = load_interval(c, interval_of(c, t)))) return st;
    k = 0;
  }
  while (k > 0 && t < c->t_step[k]) --k;
  while (k < c->nsteps - 1 && t > c->t_step[k] + c->h_step[k]) ++k;
  c->cur = k;
  th = (t - c->t_step[k]) / c->h_step[k];
  d = c->coef + (size_t)5 * c->nx * k;
  for (i = 0; i < c->nx; ++i) c->w[i] = salta__dopri_eval(d + 5 * i, th, 1 - th);
  if (c->nz == 0) return SALTA_OK;
  za = c->z_end + (size_t)c->nz * k, zb = za + c->nz;
  for (i = 0; i < c->nz; ++i) c->w[c->nx + i] = za[i] + th * (zb[i] - za[i]);
  if ((st = salta__dae_solve_z(c->dae, t, c->w, c->w + c->nx, NULL)))
    return salta__fail(c->dae->err, st, "model '%s': continuous adjoint: g = 0 could not be solved for the "
                       "algebraics on the re-run's path at t = %.17g", name_of(c), t);
  return SALTA_OK;
}

/* ---- the backward problem ------------------------------------------------------------- */

/* d Y / ds at s = -t: [F_x^T lam; F_p^T lam (the chosen rows)]. */
static int rhs(void *ctx, double s, const double *Y, double *Yp) {
  erk_adj *c = ctx;
  salta__dae *a = c->dae;
  const salta_model_def *d = a->d;
  double t = -s;
  int k, st;
  char cause[512];
  if ((st = state_at(c, t))) return st;
  memset(c->v, 0, sizeof(double) * (size_t)c->n);
  memset(c->gp, 0, sizeof(double) * (size_t)a->np);
  a->bad.sp = NULL;
  salta__dae_add_transpose(a, &d->f.d[SALTA_WRT_X], t, c->w, 1.0, Y, 0, c->v);
  salta__dae_add_transpose(a, &d->f.d[SALTA_WRT_Z], t, c->w, 1.0, Y, 0, c->v + c->nx);
  salta__dae_add_transpose(a, &d->f.d[SALTA_WRT_P], t, c->w, 1.0, Y, 0, c->gp);
  if ((st = salta__dae_fold_z(a, t, c->w, c->v, c->gp)))
    return salta__fail(a->err, st, "model '%s': continuous adjoint: g_z is singular at t = %.17g", name_of(c), t);
  memcpy(Yp, c->v, sizeof(double) * (size_t)c->nx);
  for (k = 0; k < c->nq; ++k) Yp[c->nx + k] = c->gp[c->op.qpar[k]];
  if (!salta__all_finite(Yp, (size_t)c->dp.m))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': continuous adjoint: its right-hand side is not finite at "
                       "t = %.17g%s%s", name_of(c), t, a->bad.sp ? ": " : "",
                       salta__dae_bad_text(a, cause, sizeof cause));
  return SALTA_OK;
}

static int erk_adj_restart(void *self, double t, const double *w, const double *lam_x) {
  erk_adj *c = self;
  int i;
  (void)w;   /* the re-run's states are at hand at every t */
  c->tb = t;
  if ((c->scale = salta__backward_scale(lam_x, c->nx)) < 0)
    return salta__fail(c->dae->err, SALTA_ESOLVER, "model '%s': continuous adjoint: the adjoint is not finite at "
                       "t = %.17g", name_of(c), t);
  if (!(c->scale > 0)) return SALTA_OK;
  memset(c->dp.Y, 0, sizeof(double) * (size_t)c->dp.m);
  for (i = 0; i < c->nx; ++i) c->dp.Y[i] = lam_x[i] / c->scale;
  salta__dopri_restart(&c->dp);   /* the next step tries the last accepted size */
  return rhs(c, -t, c->dp.Y, c->dp.K[0]);
}

/* One step of the backward problem towards t (in s: towards -t). A step
** cut short by a datum leaves the next the size it would have had, unless
** its own error asks for less. */
static int step_back(erk_adj *c, double t) {
  salta__dopri *dp = &c->dp;
  const double s = -c->tb, sf = -t;
  int st;
  if (!(dp->h > 0)) dp->h = salta__dopri_initial_step(dp, s, -c->t_step[0], 0, c->op.o->max_step);
  salta__dopri_resize(dp);
  for (;;) {
    double errn, h, want = dp->h;   /* before a datum cuts it (max_step applies to the next step again) */
    int to_end = salta__dopri_clip(dp, s, sf, c->op.o->max_step);
    if (to_end < 0)
      return salta__fail(c->dae->err, SALTA_ESOLVER, "model '%s': continuous adjoint: the backward problem's step "
                         "size fell to %g at t = %.17g", name_of(c), dp->h, c->tb);
    h = dp->h;
    errn = salta__dopri_attempt(dp, s, h, 0, &st);
    if (st) return st;
    if (!(errn <= 1.0)) {
      salta__dopri_reject(dp, errn);
      continue;
    }
    salta__dopri_accept(dp, s, h, errn);
    c->tb = to_end ? t : -(s + h);
    if (to_end && want > h) {
      dp->h = fmin(want, h * 0.9 * pow(fmax(errn, 1e-300), -0.2));
      salta__dopri_restart(dp);
    }
    return SALTA_OK;
  }
}

static int erk_adj_back(void *self, double t, double *lam_x, double *q) {
  erk_adj *c = self;
  long steps = 0;
  int i, st;
  if (!(c->scale > 0)) {
    memset(lam_x, 0, sizeof(double) * (size_t)c->nx);
    return SALTA_OK;
  }
  for (; !salta__backward_nothing_left(c->tb, t); ++steps) {
    if (salta_interrupted()) return salta__cadj_interrupted(c->dae->err, name_of(c), c->tb);
    if (c->op.o->max_steps > 0 && steps >= c->op.o->max_steps)
      return salta__fail(c->dae->err, SALTA_ESOLVER, "model '%s': continuous adjoint: %ld backward steps from "
                         "t = %.17g to %.17g (max_steps)", name_of(c), steps, c->tb, t);
    if (c->loaded > 0 && c->tb <= c->ck_t[c->loaded] &&
        ((st = load_interval(c, c->loaded - 1)) || (st = rhs(c, -c->tb, c->dp.Y, c->dp.K[0]))))
      return st;
    if ((st = step_back(c, c->loaded > 0 ? fmax(t, c->ck_t[c->loaded]) : t))) return st;
  }
  for (i = 0; i < c->nx; ++i) lam_x[i] = c->scale * c->dp.Y[i];
  for (i = 0; i < c->nq; ++i) q[i] += c->scale * c->dp.Y[c->nx + i], c->dp.Y[c->nx + i] = 0;
  return SALTA_OK;
}

/* ---- lifecycle ------------------------------------------------------------------------ */

#define OWN_ARRAYS 3
static size_t erk_adj_arrays(erk_adj *c, salta__array *list) {
  size_t k = salta__dopri_arrays(&c->dp, list);
  salta__array own[OWN_ARRAYS] = {SALTA__ARRAY(c->w, c->n), SALTA__ARRAY(c->v, c->n),
                                  SALTA__ARRAY(c->gp, c->dae->np)};
  memcpy(list + k, own, sizeof own);
  return k + OWN_ARRAYS;
}

static void erk_adj_free(void *self) {
  erk_adj *c = self;
  salta__array list[SALTA__DOPRI_ARRAYS + OWN_ARRAYS];
  if (!c) return;
  if (c->it.self) c->it.ops->free(c->it.self);
  salta__track_free(&c->track);
  salta__arrays_free(list, erk_adj_arrays(c, list));
  free(c->t_step), free(c->h_step), free(c->coef), free(c->z_end);
  free(c->ck_t), free(c->ck_h), free(c->ck_w);
  free(c);
}

static const salta__backward_ops erk_adj_ops = {erk_adj_forward, erk_adj_restart, erk_adj_back, erk_adj_free};

/* The error weights (backward.h): each block's tolerances, scaled so that
** the norm over all unknowns is the sum of the blocks' mean squares. */
static void weights(erk_adj *c, const salta__backward_opts *o) {
  double m = c->dp.m, sx = sqrt(m / c->nx), sq = c->nq > 0 ? sqrt(m / c->nq) : 1;
  int i;
  for (i = 0; i < c->dp.m; ++i) {
    int quad = i >= c->nx;
    c->dp.rtol[i] = (quad ? o->rtol_q : o->rtol_b) / (quad ? sq : sx);
    c->dp.atol[i] = (quad ? o->atol_q : o->atol_b) / (quad ? sq : sx);
  }
}

int salta__erk_adj_create(salta__backward *b, salta__dae *dae, const salta__backward_opts *opts) {
  erk_adj *c = calloc(1, sizeof *c);
  salta__array list[SALTA__DOPRI_ARRAYS + OWN_ARRAYS];
  b->ops = &erk_adj_ops, b->self = NULL;
  if (!c) return salta__fail(dae->err, SALTA_EMEM, "out of memory");
  c->dae = dae, c->op = *opts;
  c->nx = dae->nx, c->nz = dae->nz, c->n = dae->n, c->nq = opts->nq;
  c->fo = *opts->o;
  c->init_step = opts->o->init_step;
  c->fo.rtol *= SALTA__RERUN_TIGHTER, c->fo.atol *= SALTA__RERUN_TIGHTER;
  c->fo.atol_vec = NULL;
  c->dp.nb = c->dp.m = c->nx + c->nq, c->dp.nk = 0;
  c->dp.per_rtol = 1, c->dp.no_dense = 1;
  c->dp.rhs = rhs, c->dp.ctx = c;
  if (salta__arrays_alloc(list, erk_adj_arrays(c, list)) || salta__track_init(&c->track, dae)) {
    erk_adj_free(c);
    return salta__fail(dae->err, SALTA_EMEM, "out of memory");
  }
  weights(c, opts);
  b->self = c;
  return SALTA_OK;
}
