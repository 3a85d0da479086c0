/*
** track.c -- the structural compiler's assumptions checked along a run:
** index reduction's pivots and the branches of the Newton blocks (see
** track.h).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "errors.h"
#include "tol.h"
#include "track.h"

/* The arrays of k (lengths from its sizes, for the allocation). */
#define TRACK_ARRAYS 11
static size_t track_arrays(salta__track *k, salta__array *list) {
  const salta__dae *a = k->dae;
  size_t n = a ? (size_t)a->n : 0, nx = a ? (size_t)a->nx : 0, nz = a ? (size_t)a->nz : 0;
  size_t np = a ? 2 * (size_t)a->d->npivots : 0;
  salta__array all[TRACK_ARRAYS] = {
    SALTA__ARRAY(k->w, n), SALTA__ARRAY(k->w_prev, n), SALTA__ARRAY(k->piv, np), SALTA__ARRAY(k->piv_new, np),
    SALTA__ARRAY(k->x, nx), SALTA__ARRAY(k->xt, nx), SALTA__ARRAY(k->xdot, nx), SALTA__ARRAY(k->zc, nz),
    SALTA__ARRAY(k->zp, nz), SALTA__ARRAY(k->z1, nz), SALTA__ARRAY(k->z2, nz)};
  memcpy(list, all, sizeof all);
  return TRACK_ARRAYS;
}

int salta__track_init(salta__track *k, salta__dae *a) {
  salta__array list[TRACK_ARRAYS];
  memset(k, 0, sizeof *k);
  k->dae = a;
  if (salta__arrays_alloc(list, track_arrays(k, list))) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  return SALTA_OK;
}

void salta__track_free(salta__track *k) {
  salta__array list[TRACK_ARRAYS];
  salta__arrays_free(list, track_arrays(k, list));
  memset(k, 0, sizeof *k);
}

/* ---- pivots ----------------------------------------------------------------- */

/* Pivot j against its constraint's gradient (0 when both vanish). */
static double ratio(const double *pv, int j) {
  double s = pv[2 * j + 1];
  return s > 0 ? fabs(pv[2 * j]) / s : fabs(pv[2 * j]) > 0 ? HUGE_VAL : 0;
}

/* The pivots at (t, x, z) into out (2 npivots); the weakest, or -1. */
static int pivots_at(const salta__track *k, double t, const double *x, const double *z, double *out) {
  const salta_model_def *d = k->dae->d;
  int j, worst = -1;
  if (d->npivots == 0) return -1;
  d->pivots(t, x, z, k->dae->p, out);
  for (j = 0; j < d->npivots; ++j)
    if (worst < 0 || ratio(out, j) < ratio(out, worst)) worst = j;
  return worst;
}

/* Dummy j's pivot pv[2j] has vanished at t, or (with t_before) changed
** sign since it was before there. cause: what else failed ("" if nothing). */
static int pivot_fail(const salta__track *k, int status, int j, double t, const double *pv, double t_before,
                      double before, const char *cause) {
  const salta_model_def *d = k->dae->d;
  const char *name = d->pivot_dummy[j];
  char how[320];
  if (isnan(t_before))
    snprintf(how, sizeof how, "at t = %.17g: its pivot, the derivative of its constraint by '%.60s', is %g there "
             "(%.3g of the constraint's gradient)", t, name, pv[2 * j], ratio(pv, j));
  else
    snprintf(how, sizeof how, "between t = %.17g and %.17g: its pivot, the derivative of its constraint by '%.60s', "
             "changed sign from %g to %g", t_before, t, name, before, pv[2 * j]);
  return salta__fail(k->dae->err, status,
                     "model '%s': index reduction's dummy derivative '%.60s' (of the constraint %.200s) fails %s%s: "
                     "the dummy was chosen once, where that derivative was largest at the start values, and where it "
                     "vanishes the constraint no longer determines '%.60s' (a pendulum passing the point where that "
                     "coordinate's partial is 0); start where it stays away from 0, or write the model in coordinates "
                     "that do not degenerate", d->name, name, d->pivot_eq[j], how, cause, name);
}

/* ---- branches ------------------------------------------------------------------ */

/* Block b's unknowns with their values in z: "'a' = 1, 'b' = 2" (z NULL:
** "'a', 'b'"). */
static void block_text(const salta__track *k, int b, const double *z, char *buf, size_t cap) {
  const salta__alg *s = &k->dae->alg;
  size_t len = 0;
  int q;
  buf[0] = '\0';
  for (q = s->block_ptr[b]; q < s->block_ptr[b + 1] && len + 1 < cap; ++q) {
    int i = s->block_var[q], m = q - s->block_ptr[b], w;
    w = m == 4 ? snprintf(buf + len, cap - len, ", ...")
        : z ? snprintf(buf + len, cap - len, "%s'%.60s' = %.9g", m ? ", " : "", k->dae->d->z_names[i], z[i])
            : snprintf(buf + len, cap - len, "%s'%.60s'", m ? ", " : "", k->dae->d->z_names[i]);
    if (w < 0 || m == 4) break;
    len += (size_t)w;
  }
}

/* The block holding algebraic i (0 without structure; -1: assigned). */
static int block_of(const salta__track *k, int i) {
  const salta_model_def *d = k->dae->d;
  return d->z_block ? d->z_block[i] : 0;
}

/* Solves g at (t, x) from z (in/out) with every block's Newton
** contracting from its first step: the solution continues z's branch (see
** algebraic.h). */
static int certified(salta__track *k, double t, const double *x, double *z, salta__zfail *why) {
  salta__alg *s = &k->dae->alg;
  int st;
  s->certify = 1;
  st = salta__alg_solve(s, t, x, z, k->dae->p, why);
  s->certify = 0;
  return st;
}

/* Follows the solution z0 at (t0, x0) along the straight path to (t1, x1)
** by certified solves from a secant prediction, the sub-step doubling
** after a success and quartered after a failure: 0 with the continued
** solution in z; -1 where the branch ends, with *t_end, k->x and z the
** point reached and why the failure just beyond it. */
static int continuation(salta__track *k, double t0, const double *x0, const double *z0, double t1, const double *x1,
                        double *z, double *t_end, salta__zfail *why) {
  int nx = k->dae->nx, nz = k->dae->nz, n, i;
  double s = 0, s_prev = -1, ds = 1;
  memcpy(k->zc, z0, sizeof(double) * (size_t)nz);
  for (n = 0; n < SALTA_TRACK_MAX_SUB; ++n) {
    double s1 = fmin(1.0, s + ds), lead = s_prev >= 0 ? (s1 - s) / (s - s_prev) : 0;
    for (i = 0; i < nx; ++i) k->x[i] = x0[i] + s1 * (x1[i] - x0[i]);
    for (i = 0; i < nz; ++i) z[i] = s_prev >= 0 ? k->zc[i] + lead * (k->zc[i] - k->zp[i]) : k->zc[i];
    if (certified(k, t0 + s1 * (t1 - t0), k->x, z, why) == 0) {
      memcpy(k->zp, k->zc, sizeof(double) * (size_t)nz);
      memcpy(k->zc, z, sizeof(double) * (size_t)nz);
      s_prev = s, s = s1;
      if (s >= 1) return 0;
      ds *= 2;
    } else if ((ds *= 0.25) < SALTA_TRACK_MIN_DS) {
      break;
    }
  }
  for (i = 0; i < nx; ++i) k->x[i] = x0[i] + s * (x1[i] - x0[i]);
  memcpy(z, k->zc, sizeof(double) * (size_t)nz);
  *t_end = t0 + s * (t1 - t0);
  return -1;
}

/* The branch ends at (t, x, z), reached on the way from t_from, why
** failing just beyond: a vanishing pivot there is the cause; else the
** block's fold or singular Jacobian. */
static int branch_end(salta__track *k, int status, double t_from, double t, const double *x, const double *z,
                      const salta__zfail *why, const char *cause) {
  const salta_model_def *d = k->dae->d;
  char blk[320], at[96];
  int j = pivots_at(k, t, x, z, k->piv_new);
  if (j >= 0 && ratio(k->piv_new, j) < SALTA_PIVOT_BLAME)
    return pivot_fail(k, status == SALTA__EBRANCH ? SALTA__EPIVOT : status, j, t, k->piv_new, NAN, 0, cause);
  if (status == SALTA_ESOLVER) status = SALTA_EALGEBRAIC;   /* the algebraic equations' own failure */
  if (why->block < 0)
    return salta__fail(k->dae->err, status,
                       "model '%s': Newton on g failed at t = %.17g: algebraic equation g[%d] keeps residual %g%s",
                       d->name, t, why->eq + 1, why->residual, cause);
  block_text(k, why->block, z, blk, sizeof blk);
  snprintf(at, sizeof at, t == t_from ? "at t = %.17g" : "near t = %.17g (on the way from t = %.17g)", t, t_from);
  if (why->kind == SALTA__ZFAIL_SINGULAR)
    return salta__fail(k->dae->err, status,
                       "model '%s': the Jacobian of the algebraic block solving %s is singular %s: a fold (a turning "
                       "point) or a singular point of the algebraic equations, where the branch the run followed "
                       "ends%s", d->name, blk, at, cause);
  return salta__fail(k->dae->err, status,
                     "model '%s': the algebraic equations reach a fold (a turning point) %s: the block solving %s has "
                     "no solution beyond it that continues the branch the run followed (Newton would jump to another "
                     "root, or find none), so the model has no solution there on this branch: check the equations, "
                     "the parameters and the range the states reach%s", d->name, at, blk, cause);
}

/* The first block whose unknowns in za and zb differ beyond tol (loose:
** the run's tolerances; else relative, both solved to round-off), or -1. */
static int differs(const salta__track *k, const double *za, const double *zb, int loose) {
  const salta_model_def *d = k->dae->d;
  const salta_sim_options *o = k->o;
  int i;
  for (i = 0; i < d->nz; ++i) {
    double atol = o->atol_vec ? o->atol_vec[d->nx + i] : o->atol, big = fmax(fabs(za[i]), fabs(zb[i]));
    double tol = loose ? SALTA_BRANCH_LOOSE * (o->rtol * big + atol) : SALTA_BRANCH_TIGHT * big + atol;
    if (block_of(k, i) >= 0 && !(fabs(za[i] - zb[i]) <= tol)) return block_of(k, i);
  }
  return -1;
}

/* The integrator's algebraics z at (t, x) are another root than the
** branch's, zb. */
static int left_branch(const salta__track *k, int b, double t, const double *z, const double *zb) {
  char names[320], got[320], want[320];
  block_text(k, b, NULL, names, sizeof names);
  block_text(k, b, z, got, sizeof got);
  block_text(k, b, zb, want, sizeof want);
  return salta__fail(k->dae->err, SALTA_ESOLVER,
                     "model '%s': the algebraic block solving %s left its branch between t = %.17g and %.17g: the "
                     "integrator's solution has %s, but the branch the run followed continues to %s (a jump to "
                     "another root of the algebraic equations; a smaller max_step or rtol keeps it on the branch)",
                     k->dae->d->name, names, k->t, t, got, want);
}

/* w's algebraics are the continuation of the last point's to (t, x);
** the continued ones into z2. */
static int same_branch(salta__track *k, double t, const double *w) {
  const salta__dae *a = k->dae;
  salta__zfail why;
  double t_end;
  int b;
  if (continuation(k, k->t, k->w, k->w + a->nx, t, w, k->z2, &t_end, &why))
    return branch_end(k, SALTA_ESOLVER, k->t, t_end, k->x, k->z2, &why, "");
  if ((b = differs(k, w + a->nx, k->z2, 1)) < 0) return SALTA_OK;
  /* beyond the tolerance: w's own root, solved to round-off, decides */
  memcpy(k->z1, w + a->nx, sizeof(double) * (size_t)a->nz);
  if (certified(k, t, w, k->z1, &why) == 0 && (b = differs(k, k->z1, k->z2, 0)) < 0) return SALTA_OK;
  return left_branch(k, b, t, w + a->nx, k->z2);
}

/* ---- the interface ------------------------------------------------------------- */

int salta__track_restart(salta__track *k, const salta_sim_options *o, double t, const double *w) {
  const salta__dae *a = k->dae;
  int j;
  k->o = o, k->t = t, k->on = 1, k->has_prev = 0;
  memcpy(k->w, w, sizeof(double) * (size_t)a->n);
  j = pivots_at(k, t, w, w + a->nx, k->piv);
  if (j >= 0 && ratio(k->piv, j) < SALTA_PIVOT_TOL) return pivot_fail(k, SALTA_ESOLVER, j, t, k->piv, NAN, 0, "");
  return SALTA_OK;
}

int salta__track_accept(salta__track *k, double t, const double *w, int blocks) {
  const salta__dae *a = k->dae;
  int j, st, np = a->d->npivots;
  if (!k->on) return salta__track_restart(k, k->o, t, w);
  if (np > 0) {
    pivots_at(k, t, w, w + a->nx, k->piv_new);
    for (j = 0; j < np; ++j) {
      if (k->piv[2 * j] * k->piv_new[2 * j] < 0)
        return pivot_fail(k, SALTA_ESOLVER, j, t, k->piv_new, k->t, k->piv[2 * j], "");
      if (ratio(k->piv_new, j) < SALTA_PIVOT_TOL) return pivot_fail(k, SALTA_ESOLVER, j, t, k->piv_new, NAN, 0, "");
    }
    memcpy(k->piv, k->piv_new, sizeof(double) * 2 * (size_t)np);
  }
  memcpy(k->w_prev, k->w, sizeof(double) * (size_t)a->n);
  k->t_prev = k->t, k->has_prev = 1;
  if (blocks && a->alg.nblocks > 0) {
    if ((st = same_branch(k, t, w))) return st;
    memcpy(k->w + a->nx, k->z2, sizeof(double) * (size_t)a->nz);   /* the reference stays on the branch */
  } else {
    memcpy(k->w + a->nx, w + a->nx, sizeof(double) * (size_t)a->nz);
  }
  memcpy(k->w, w, sizeof(double) * (size_t)a->nx);
  k->t = t;
  return SALTA_OK;
}

int salta__track_solve(salta__track *k, double t, const double *x, double *z) {
  int inside = k->has_prev && t < k->t;
  const double *w = inside ? k->w_prev : k->w;
  double t_end, t0 = inside ? k->t_prev : k->t;
  salta__zfail why;
  if (certified(k, t, x, z, &why) == 0) return SALTA_OK;
  if (k->dae->alg.nblocks == 0 || !k->on) return branch_end(k, SALTA__EBRANCH, t, t, x, z, &why, "");
  if (continuation(k, t0, w, w + k->dae->nx, t, x, z, &t_end, &why) == 0) return SALTA_OK;
  return branch_end(k, SALTA__EBRANCH, t0, t_end, k->x, z, &why, "");
}

/* Probes of the explanation: steps h, 4h, ... up to 4^(PROBES - 1) h. */
#define PROBES 6

int salta__track_explain(salta__track *k, double h, const char *cause) {
  const salta__dae *a = k->dae;
  const double *w = k->w;
  salta__zfail why;
  double t_end;
  int i, p, j;
  if (!k->on || (a->alg.nblocks == 0 && a->d->npivots == 0) || !(h > 0)) return SALTA_OK;
  a->d->f.eval(k->t, w, w + a->nx, a->p, k->xdot);
  if (!salta__all_finite(k->xdot, (size_t)a->nx)) return SALTA_OK;
  for (p = 0; p < PROBES; ++p, h *= 4) {
    for (i = 0; i < a->nx; ++i) k->xt[i] = w[i] + h * k->xdot[i];
    if (continuation(k, k->t, w, w + a->nx, k->t + h, k->xt, k->z2, &t_end, &why))
      return branch_end(k, SALTA_ESOLVER, k->t, t_end, k->x, k->z2, &why, cause);
  }
  j = pivots_at(k, k->t, w, w + a->nx, k->piv_new);
  if (j >= 0 && ratio(k->piv_new, j) < SALTA_PIVOT_BLAME)
    return pivot_fail(k, SALTA_ESOLVER, j, k->t, k->piv_new, NAN, 0, cause);
  return SALTA_OK;
}
