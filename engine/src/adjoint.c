/*
** adjoint.c -- the event-split discrete adjoint (DESIGN.md §2, route
** adjoint). The trajectory of a forward run is cut at its events into
** segments; each segment carries trapezoidal residuals on a mesh whose node
** times stretch with the event times,
**   R_i = [x_i+1 - x_i - h_i/2 (f_i + f_i+1); g(t_i+1, w_i+1)],
** and each event block the guard, the reset (every state: unnamed ones map
** to themselves) and the post-event algebraic equations. The discrete
** trajectory is re-solved so these hold to Newton tolerance ("consistent"),
** then one backward sweep solves for the multipliers: per step one
** transposed solve; per event the multiplier of the guard, unknown while
** its segment is swept (the adjoint there is affine in it), is fixed by the
** stationarity of the event time. The gradient of the discrete loss costs
** one sweep whatever the number of parameters.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "linsol.h"
#include "loss_impl.h"
#include "sim_impl.h"
#include "sparselu.h"

typedef struct seg {
  int node0, m;       /* first node index, number of steps */
  int event;          /* guard ending the segment, or -1 (the last) */
} seg;

typedef struct adj {
  salta_loss *l;
  const salta_model_def *d;
  const double *p, *x0;
  int nx, nz, n, np, nseg, nnodes;
  seg *segs;
  double *tau;        /* nseg + 1 boundaries: t0, event times, tf */
  double *sigma;      /* per node: its fraction of the segment */
  double *w;          /* per node: [x; z] */
  /* scratch */
  double *A, *B, *LU, *v1, *v2, *v3, *jv, *fa, *fb;
  double *gy, *wts, *ys, wsum;   /* per target: dL/dyhat, blend weights, segment values */
  int *ipiv;
  /* the forward march's factored step matrix, kept across Newton
  ** iterations and steps while it still makes Newton contract fast */
  double *Af, hf;
  int *ipf, af_valid;
  /* with KLU (salta__use_klu): the step matrix's values on its sparse
  ** pattern, factored by KLU for the forward march and for the sweep */
  int sparse;
  salta__pattern pat;
  double *Ax;
  salta__sparselu *luf, *lub;
  char *err;
} adj;

/* ---- small helpers -------------------------------------------------------- */

static double node_time(const adj *a, int s, int i) {
  const seg *g = &a->segs[s];
  double sg = a->sigma[g->node0 + i];
  return (1 - sg) * a->tau[s] + sg * a->tau[s + 1];
}

static double *node(const adj *a, int k) { return a->w + (size_t)k * a->n; }

/* out (rows x cols, column-major) += scale * the sparse kernel at (t, w). */
static void add_dense(const adj *a, const salta_sparse_def *sp, double t, const double *w,
                      double scale, double *out, int ld, int row0, int col0) {
  int k;
  if (sp->nnz == 0) return;
  sp->eval(t, w, w + a->nx, a->p, a->jv);
  for (k = 0; k < sp->nnz; ++k) out[(size_t)(col0 + sp->col[k]) * ld + row0 + sp->row[k]] += scale * a->jv[k];
}

/* y += scale * K^T v for a sparse kernel K (rows offset row0 in v). */
static void add_transpose(const adj *a, const salta_sparse_def *sp, double t, const double *w,
                          double scale, const double *v, int row0, double *y) {
  int k;
  if (sp->nnz == 0) return;
  sp->eval(t, w, w + a->nx, a->p, a->jv);
  for (k = 0; k < sp->nnz; ++k) y[sp->col[k]] += scale * a->jv[k] * v[row0 + sp->row[k]];
}

/* The step matrix dR/dw_next (into a->A) for step h ending at (t1, w1). */
static void step_matrix(adj *a, double t1, const double *w1, double h) {
  int n = a->n, i;
  memset(a->A, 0, sizeof(double) * (size_t)n * n);
  for (i = 0; i < a->nx; ++i) a->A[(size_t)i * n + i] = 1;
  add_dense(a, &a->d->f.d[SALTA_WRT_X], t1, w1, -h / 2, a->A, n, 0, 0);
  add_dense(a, &a->d->f.d[SALTA_WRT_Z], t1, w1, -h / 2, a->A, n, 0, a->nx);
  add_dense(a, &a->d->g.d[SALTA_WRT_X], t1, w1, 1, a->A, n, a->nx, 0);
  add_dense(a, &a->d->g.d[SALTA_WRT_Z], t1, w1, 1, a->A, n, a->nx, a->nx);
}

/* ---- the consistent discrete forward ---------------------------------------- */

/* The step matrix's values on the sparse pattern (into a->Ax). */
static void step_values(adj *a, double t1, const double *w1, double h) {
  static const int blk[4] = {SALTA_BLK_FX, SALTA_BLK_FZ, SALTA_BLK_GX, SALTA_BLK_GZ};
  const salta_sparse_def *sp[4];
  int b, k;
  sp[0] = &a->d->f.d[SALTA_WRT_X], sp[1] = &a->d->f.d[SALTA_WRT_Z];
  sp[2] = &a->d->g.d[SALTA_WRT_X], sp[3] = &a->d->g.d[SALTA_WRT_Z];
  memset(a->Ax, 0, sizeof(double) * (size_t)a->pat.nnz);
  for (k = 0; k < a->nx; ++k) a->Ax[a->pat.diag[k]] = 1;
  for (b = 0; b < 4; ++b) {
    double scale = b < 2 ? -h / 2 : 1;
    if (sp[b]->nnz == 0) continue;
    sp[b]->eval(t1, w1, w1 + a->nx, a->p, a->jv);
    for (k = 0; k < sp[b]->nnz; ++k) a->Ax[a->pat.map[blk[b]][k]] += scale * a->jv[k];
  }
}

/* Factors the step matrix for step h ending at (t1, w1) for the march. */
static int factor_forward(adj *a, double t1, const double *w1, double h) {
  if (a->sparse) {
    step_values(a, t1, w1, h);
    a->af_valid = salta__sparselu_factor(a->luf, a->Ax) == 0;
  } else {
    step_matrix(a, t1, w1, h);
    memcpy(a->Af, a->A, sizeof(double) * (size_t)a->n * a->n);
    a->af_valid = salta__lu_factor(a->n, a->Af, a->ipf) == 0;
  }
  a->hf = h;
  return a->af_valid ? 0 : -1;
}

/* One trapezoidal step: w1 (in: guess, out: solution) from (t0, w0) to t1.
** Newton with the step matrix of an earlier iterate or step (modified
** Newton): refactored when h changes by more than 10 %, when an iteration
** contracts by less than 4, or when it produces a non-finite value; the
** solution is that of the residuals whatever the matrix. */
static int trapezoid(adj *a, double t0, const double *w0, double t1, double *w1) {
  int n = a->n, nx = a->nx, it, i, fresh = 0;
  double h = t1 - t0, dprev = HUGE_VAL;
  a->d->f.eval(t0, w0, w0 + nx, a->p, a->fa);
  if (a->af_valid && !(fabs(h - a->hf) <= 0.1 * fabs(h))) a->af_valid = 0;
  for (it = 0; it < 30; ++it) {
    double dmax = 0, wmax = 0;
    a->d->f.eval(t1, w1, w1 + nx, a->p, a->fb);
    for (i = 0; i < nx; ++i) a->v1[i] = w1[i] - w0[i] - h / 2 * (a->fa[i] + a->fb[i]);
    if (a->nz) a->d->g.eval(t1, w1, w1 + nx, a->p, a->v1 + nx);
    if (!a->af_valid) {
      if (factor_forward(a, t1, w1, h)) break;
      fresh = 1;
    }
    if (a->sparse) salta__sparselu_solve(a->luf, a->v1, 0);
    else salta__lu_solve(n, a->Af, a->ipf, a->v1, 1, 0);
    for (i = 0; i < n; ++i) {
      if (!(fabs(a->v1[i]) <= dmax)) dmax = fabs(a->v1[i]);   /* NaN propagates, unlike fmax */
      wmax = fmax(wmax, fabs(w1[i] - a->v1[i]));
    }
    if (!isfinite(dmax)) {
      if (fresh) break;
      a->af_valid = 0;   /* a stale matrix: retry this iterate with a fresh one */
      continue;
    }
    for (i = 0; i < n; ++i) w1[i] -= a->v1[i];
    if (dmax <= 1e-13 * (1 + wmax)) return SALTA_OK;
    if (dmax > 0.25 * dprev) a->af_valid = 0;
    dprev = dmax;
    fresh = 0;
  }
  a->af_valid = 0;
  return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: the trapezoidal step from t = %.17g to %.17g "
                     "did not converge", a->d->name, t0, t1);
}

/* Marches segment s from its first node with its current end time. */
static int march(adj *a, int s) {
  const seg *g = &a->segs[s];
  int i, st;
  /* a reset may change the regime (g_z's scale): a matrix from before it
  ** could shrink the first steps enough to pass the convergence test */
  a->af_valid = 0;
  for (i = 0; i < g->m; ++i) {
    double *w0 = node(a, g->node0 + i), *w1 = node(a, g->node0 + i + 1);
    memcpy(w1, w0, sizeof(double) * a->n);
    if ((st = trapezoid(a, node_time(a, s, i), w0, node_time(a, s, i + 1), w1))) return st;
  }
  return SALTA_OK;
}

/* The guard ending segment s at its last node. */
static double end_guard(adj *a, int s) {
  const seg *g = &a->segs[s];
  const double *wm = node(a, g->node0 + g->m);
  a->d->e.eval(a->tau[s + 1], wm, wm + a->nx, a->p, a->v3);
  return a->v3[g->event];
}

/* Newton on g for z at (t, x): w (in/out). */
static int solve_z(adj *a, double t, double *w) {
  int it, i, nz = a->nz;
  for (it = 0; it < 50 && nz > 0; ++it) {
    double dmax = 0, zmax = 0;
    a->d->g.eval(t, w, w + a->nx, a->p, a->v1);
    memset(a->A, 0, sizeof(double) * (size_t)nz * nz);
    add_dense(a, &a->d->g.d[SALTA_WRT_Z], t, w, 1, a->A, nz, 0, 0);
    if (salta__lu_factor(nz, a->A, a->ipiv) != 0) break;
    salta__lu_solve(nz, a->A, a->ipiv, a->v1, 1, 0);
    for (i = 0; i < nz; ++i) {
      w[a->nx + i] -= a->v1[i];
      if (!(fabs(a->v1[i]) <= dmax)) dmax = fabs(a->v1[i]);   /* NaN propagates */
      zmax = fmax(zmax, fabs(w[a->nx + i]));
    }
    if (!isfinite(dmax)) break;
    /* against the largest z, as the simulator's Newton on g (not z[0]) */
    if (dmax <= 1e-13 * (1 + zmax)) return SALTA_OK;
  }
  return nz == 0 ? SALTA_OK : salta__fail(a->err, SALTA_ESOLVER,
                                          "model '%s': adjoint: Newton on g failed at t = %.17g", a->d->name, t);
}

/* Solves segment s and, unless it is the last, its end time (secant on the
** guard from the forward run's event time) and the event block after it. */
static int solve_segment(adj *a, int s) {
  seg *g = &a->segs[s];
  double t0, t1, G0, G1;
  int it, st;
  if (g->event < 0) return march(a, s);
  t0 = a->tau[s + 1];
  if ((st = march(a, s))) return st;
  G0 = end_guard(a, s);
  t1 = t0 + 1e-7 * fmax(1.0, fabs(t0));
  for (it = 0; it < 40; ++it) {
    double t2;
    a->tau[s + 1] = t1;
    if ((st = march(a, s))) return st;
    G1 = end_guard(a, s);
    if (G1 == 0 || G1 == G0) break;
    t2 = t1 - G1 * (t1 - t0) / (G1 - G0);
    t0 = t1, G0 = G1, t1 = t2;
    if (fabs(t1 - t0) <= 1e-15 * fmax(1.0, fabs(t1))) {
      a->tau[s + 1] = t1;
      if ((st = march(a, s))) return st;
      break;
    }
  }
  if (it == 40)
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: the discrete time of event '%s' near "
                       "t = %.17g did not converge", a->d->name, a->d->e_names[g->event], t1);
  if (!(a->tau[s + 1] > a->tau[s]) || !(a->tau[s + 1] < a->tau[a->nseg]))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: the discrete event time of '%s' left its "
                       "segment (%.17g)", a->d->name, a->d->e_names[g->event], a->tau[s + 1]);
  {
    /* the event block: x+ = r(tau, w-), then z+ from g */
    const double *wm = node(a, g->node0 + g->m);
    double *wp = node(a, a->segs[s + 1].node0);
    if (a->d->r[g->event].eval(a->tau[s + 1], wm, wm + a->nx, a->p, wp))
      return salta__fail(a->err, SALTA_EKERNEL, "model '%s': adjoint: the reset of '%s' failed",
                         a->d->name, a->d->e_names[g->event]);
    memcpy(wp + a->nx, wm + a->nx, sizeof(double) * a->nz);
    return solve_z(a, a->tau[s + 1], wp);
  }
}

/* ---- setup from a forward run --------------------------------------------------- */

static int build(adj *a, salta_sim *sim, int mesh_k, const salta_sim_options *o) {
  int nev = salta_sim_nevents(sim), s, k, i, nsteps = salta_sim_nsteps(sim), total = 0;
  a->nseg = nev + 1;
  a->segs = calloc((size_t)a->nseg, sizeof(seg));
  a->tau = malloc(sizeof(double) * (size_t)(a->nseg + 1));
  if (!a->segs || !a->tau) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  a->tau[0] = o->t0;
  a->tau[a->nseg] = o->tf;
  for (k = 0; k < nev; ++k) {
    salta_event_record r;
    salta_sim_event(sim, k, &r);
    if (r.group_size > 1)
      return salta__fail(a->err, SALTA_EINPUT, "model '%s': adjoint: %d events at once at t = %.17g "
                         "(simultaneous events are not supported by the adjoint route; use sens)",
                         a->d->name, r.group_size, r.t);
    a->tau[k + 1] = r.t;
    a->segs[k].event = r.event;
  }
  a->segs[nev].event = -1;
  /* the mesh: K uniform steps per segment, or the integrator's steps */
  for (s = 0; s < a->nseg; ++s) {
    int m = mesh_k;
    if (mesh_k <= 0) {
      m = 0;
      for (i = 0; i < nsteps; ++i) {
        double t;
        salta_sim_step(sim, i, &t, NULL, NULL);
        if (t > a->tau[s] && t < a->tau[s + 1]) ++m;
      }
      ++m;
    }
    a->segs[s].node0 = total;
    a->segs[s].m = m;
    total += m + 1;
  }
  a->nnodes = total;
  a->sigma = malloc(sizeof(double) * (size_t)total);
  a->w = malloc(sizeof(double) * (size_t)total * a->n);
  if (!a->sigma || !a->w) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  for (s = 0; s < a->nseg; ++s) {
    seg *g = &a->segs[s];
    double span = a->tau[s + 1] - a->tau[s];
    a->sigma[g->node0] = 0;
    a->sigma[g->node0 + g->m] = 1;
    if (mesh_k > 0) {
      for (i = 1; i < g->m; ++i) a->sigma[g->node0 + i] = (double)i / g->m;
    } else {
      int j = 1;
      for (i = 0; i < nsteps; ++i) {
        double t;
        salta_sim_step(sim, i, &t, NULL, NULL);
        if (t > a->tau[s] && t < a->tau[s + 1]) a->sigma[g->node0 + j++] = (t - a->tau[s]) / span;
      }
    }
  }
  return SALTA_OK;
}

/* ---- the discrete loss ------------------------------------------------------------ */

/* The segment and step holding target time T (right-continuous at events). */
static int segment_of(const adj *a, double T) {
  int s = 0;
  while (s + 1 < a->nseg && a->tau[s + 1] <= T) ++s;
  return s;
}

/* ---- the sweep ---------------------------------------------------------------------- */

/* dR_i/dtau for the segment's end (end = 1) or start (end = 0) into out. */
static void dR_dtau(adj *a, int s, int i, int end, double *out) {
  const seg *g = &a->segs[s];
  int nx = a->nx, k;
  double si = a->sigma[g->node0 + i], sj = a->sigma[g->node0 + i + 1];
  double ti = node_time(a, s, i), tj = node_time(a, s, i + 1), h = tj - ti;
  double dti = end ? si : 1 - si, dtj = end ? sj : 1 - sj, dh = (sj - si) * (end ? 1 : -1);
  const double *wi = node(a, g->node0 + i), *wj = node(a, g->node0 + i + 1);
  memset(out, 0, sizeof(double) * a->n);
  a->d->f.eval(ti, wi, wi + nx, a->p, a->fa);
  a->d->f.eval(tj, wj, wj + nx, a->p, a->fb);
  for (k = 0; k < nx; ++k) out[k] = -dh / 2 * (a->fa[k] + a->fb[k]);
  add_dense(a, &a->d->f.d[SALTA_WRT_T], ti, wi, -h / 2 * dti, out, a->n, 0, 0);
  add_dense(a, &a->d->f.d[SALTA_WRT_T], tj, wj, -h / 2 * dtj, out, a->n, 0, 0);
  add_dense(a, &a->d->g.d[SALTA_WRT_T], tj, wj, dtj, out, a->n, nx, 0);
}

static double dot(const double *u, const double *v, int n) {
  double r = 0;
  int i;
  for (i = 0; i < n; ++i) r += u[i] * v[i];
  return r;
}

/* y += B_i^T lam: B_i = dR_i/dw_i = [[-I - h/2 f_x, -h/2 f_z]; [0, 0]]. */
static void add_BT(adj *a, double t, const double *w, double h, const double *lam, double *y) {
  int k;
  for (k = 0; k < a->nx; ++k) y[k] -= lam[k];
  add_transpose(a, &a->d->f.d[SALTA_WRT_X], t, w, -h / 2, lam, 0, y);
  add_transpose(a, &a->d->f.d[SALTA_WRT_Z], t, w, -h / 2, lam, 0, y + a->nx);
}

/* Solves A_i^T lam = -rhs for step i of segment s (lam overwrites rhs),
** and the same for rhs2 unless it is NULL, with one factorisation (dense,
** or KLU when the loss asks for the sparse linear solver). */
static int solve_AT(adj *a, int s, int i, double *rhs, double *rhs2) {
  const seg *g = &a->segs[s];
  int k;
  double tj = node_time(a, s, i + 1), h = tj - node_time(a, s, i), *b[2];
  int nb = rhs2 ? 2 : 1, q;
  b[0] = rhs, b[1] = rhs2;
  if (a->sparse) {
    step_values(a, tj, node(a, g->node0 + i + 1), h);
    if (salta__sparselu_factor(a->lub, a->Ax) != 0)
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: singular step matrix at t = %.17g",
                         a->d->name, tj);
  } else {
    step_matrix(a, tj, node(a, g->node0 + i + 1), h);
    if (salta__lu_factor(a->n, a->A, a->ipiv) != 0)
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: singular step matrix at t = %.17g",
                         a->d->name, tj);
  }
  for (q = 0; q < nb; ++q) {
    if (a->sparse) salta__sparselu_solve(a->lub, b[q], 1);
    else salta__lu_solve(a->n, a->A, a->ipiv, b[q], 1, 1);
    for (k = 0; k < a->n; ++k) b[q][k] = -b[q][k];
  }
  return SALTA_OK;
}

/* K^T nu = -rhs for the consistency block K = [[I, 0]; [g_x, g_z]] at
** (t, w): nu_z = -g_z^-T rhs_z, nu_x = -rhs_x - g_x^T nu_z. */
static int solve_KT(adj *a, double t, const double *w, const double *rhs, double *nu) {
  int nx = a->nx, nz = a->nz, k;
  memcpy(nu, rhs, sizeof(double) * a->n);
  if (nz > 0) {
    memset(a->LU, 0, sizeof(double) * (size_t)nz * nz);
    add_dense(a, &a->d->g.d[SALTA_WRT_Z], t, w, 1, a->LU, nz, 0, 0);
    if (salta__lu_factor(nz, a->LU, a->ipiv) != 0)
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: g_z singular at t = %.17g", a->d->name, t);
    salta__lu_solve(nz, a->LU, a->ipiv, nu + nx, 1, 1);
  }
  for (k = 0; k < a->n; ++k) nu[k] = -nu[k];
  /* nu_x = -rhs_x - g_x^T nu_z */
  add_transpose(a, &a->d->g.d[SALTA_WRT_X], t, w, -1, nu, nx, nu);
  return SALTA_OK;
}

/* grad += scale * v^T K_p for a sparse parameter Jacobian K_p. */
static void add_param(adj *a, const salta_sparse_def *sp, double t, const double *w, double scale,
                      const double *v, int row0, double *grad) {
  add_transpose(a, sp, t, w, scale, v, row0, grad);
}

/* The trapezoid's own interpolant of segment s at T clipped into the
** segment: x quadratic with x' = f at both nodes (exact for ballistic
** flight), z solved from g at that x (so that its error, and its
** derivative as the nodes move, stays of the trapezoid's order). Fills wh
** and, when ip is given, the interval data. */
typedef struct ipt { int i; double Tc, ti, tj, hh, sv, ca, cb; int clip; } ipt;

static int interpolate(adj *a, int s, double T, ipt *ip, double *wh) {
  const salta_model_def *d = a->d;
  int nx = a->nx, n = a->n, kk, lo = 0, hi = a->segs[s].m, clip = 0;
  double Tc = T, ti, tj, hh, sv, ca, cb, th;
  const double *w0, *w1;
  if (Tc < a->tau[s]) Tc = a->tau[s], clip = -1;
  if (Tc > a->tau[s + 1]) Tc = a->tau[s + 1], clip = 1;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (node_time(a, s, mid) <= Tc) lo = mid; else hi = mid;
  }
  w0 = node(a, a->segs[s].node0 + lo);
  w1 = node(a, a->segs[s].node0 + lo + 1);
  ti = node_time(a, s, lo), tj = node_time(a, s, lo + 1), hh = tj - ti, sv = Tc - ti;
  ca = sv - sv * sv / (2 * hh), cb = sv * sv / (2 * hh), th = sv / hh;
  d->f.eval(ti, w0, w0 + nx, a->p, a->fa);
  d->f.eval(tj, w1, w1 + nx, a->p, a->fb);
  for (kk = 0; kk < nx; ++kk) wh[kk] = w0[kk] + ca * a->fa[kk] + cb * a->fb[kk];
  for (kk = nx; kk < n; ++kk) wh[kk] = (1 - th) * w0[kk] + th * w1[kk];
  if (ip) ip->i = lo, ip->Tc = Tc, ip->ti = ti, ip->tj = tj, ip->hh = hh, ip->sv = sv, ip->ca = ca,
          ip->cb = cb, ip->clip = clip;
  return a->nz ? solve_z(a, Tc, wh) : SALTA_OK;
}

/* Distributes wfac * dL/dyhat (a->gy) through the interpolant of segment s
** at T onto the nodes (c), the parameters and the segment's end times. */
static int source(adj *a, int s, double T, double wfac, double *c, double *dLdtau, double *grad_p,
                  double *wh, double *rhs) {
  const salta_model_def *d = a->d;
  int nx = a->nx, n = a->n, nz = a->nz, kk, q;
  ipt ip;
  int st;
  if ((st = interpolate(a, s, T, &ip, wh))) return st;
  memset(rhs, 0, sizeof(double) * (size_t)n);
  {
    const salta_sparse_def *hx = &d->h.d[SALTA_WRT_X], *hz = &d->h.d[SALTA_WRT_Z], *hp = &d->h.d[SALTA_WRT_P];
    if (hx->nnz) { hx->eval(ip.Tc, wh, wh + nx, a->p, a->jv); for (q = 0; q < hx->nnz; ++q) rhs[hx->col[q]] += wfac * a->gy[hx->row[q]] * a->jv[q]; }
    if (hz->nnz) { hz->eval(ip.Tc, wh, wh + nx, a->p, a->jv); for (q = 0; q < hz->nnz; ++q) rhs[nx + hz->col[q]] += wfac * a->gy[hz->row[q]] * a->jv[q]; }
    if (hp->nnz) { hp->eval(ip.Tc, wh, wh + nx, a->p, a->jv); for (q = 0; q < hp->nnz; ++q) grad_p[hp->col[q]] += wfac * a->gy[hp->row[q]] * a->jv[q]; }
  }
  if (ip.clip) {   /* a clipped time moves with the end it is clipped to */
    double dLdT = 0;
    const salta_sparse_def *ht = &d->h.d[SALTA_WRT_T];
    if (ht->nnz) { ht->eval(ip.Tc, wh, wh + nx, a->p, a->jv); for (q = 0; q < ht->nnz; ++q) dLdT += wfac * a->gy[ht->row[q]] * a->jv[q]; }
    if (nz) {   /* z(T, x): its t-derivative through g_t */
      memcpy(a->v2, rhs + nx, sizeof(double) * (size_t)nz);
      memset(a->LU, 0, sizeof(double) * (size_t)nz * nz);
      add_dense(a, &d->g.d[SALTA_WRT_Z], ip.Tc, wh, 1, a->LU, nz, 0, 0);
      if (salta__lu_factor(nz, a->LU, a->ipiv) != 0)
        return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: g_z singular at t = %.17g", d->name, ip.Tc);
      salta__lu_solve(nz, a->LU, a->ipiv, a->v2, 1, 1);
      memset(a->v3, 0, sizeof(double) * (size_t)nz);
      add_dense(a, &d->g.d[SALTA_WRT_T], ip.Tc, wh, 1, a->v3, nz, 0, 0);
      for (q = 0; q < nz; ++q) dLdT -= a->v2[q] * a->v3[q];
    }
    dLdtau[ip.clip < 0 ? s : s + 1] += dLdT;
  }
  if (nz) {
    /* z = z(x): dL/dx += -g_x^T g_z^-T dL/dz, dL/dp += -g_p^T g_z^-T dL/dz */
    memset(a->LU, 0, sizeof(double) * (size_t)nz * nz);
    add_dense(a, &d->g.d[SALTA_WRT_Z], ip.Tc, wh, 1, a->LU, nz, 0, 0);
    if (salta__lu_factor(nz, a->LU, a->ipiv) != 0)
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: g_z singular at t = %.17g", d->name, ip.Tc);
    salta__lu_solve(nz, a->LU, a->ipiv, rhs + nx, 1, 1);
    add_transpose(a, &d->g.d[SALTA_WRT_X], ip.Tc, wh, -1, rhs, nx, rhs);
    add_param(a, &d->g.d[SALTA_WRT_P], ip.Tc, wh, -1, rhs, nx, grad_p);
    for (q = nx; q < n; ++q) rhs[q] = 0;
  }
  {
    int n0 = a->segs[s].node0 + ip.i;
    double *c0 = c + (size_t)n0 * n, *c1 = c + (size_t)(n0 + 1) * n;
    const double *w0 = node(a, n0), *w1 = node(a, n0 + 1);
    double si = a->sigma[n0], sj = a->sigma[n0 + 1];
    /* the interpolant's f terms were evaluated by interpolate() */
    for (kk = 0; kk < nx; ++kk) c0[kk] += rhs[kk];
    add_transpose(a, &d->f.d[SALTA_WRT_X], ip.ti, w0, ip.ca, rhs, 0, c0);
    add_transpose(a, &d->f.d[SALTA_WRT_Z], ip.ti, w0, ip.ca, rhs, 0, c0 + nx);
    add_transpose(a, &d->f.d[SALTA_WRT_X], ip.tj, w1, ip.cb, rhs, 0, c1);
    add_transpose(a, &d->f.d[SALTA_WRT_Z], ip.tj, w1, ip.cb, rhs, 0, c1 + nx);
    add_param(a, &d->f.d[SALTA_WRT_P], ip.ti, w0, ip.ca, rhs, 0, grad_p);
    add_param(a, &d->f.d[SALTA_WRT_P], ip.tj, w1, ip.cb, rhs, 0, grad_p);
    /* the node times (and a clipped T) move with the segment's ends */
    for (kk = 0; kk < 2; ++kk) {
      double dti = kk ? si : 1 - si, dtj = kk ? sj : 1 - sj, dT = (ip.clip < 0 && !kk) || (ip.clip > 0 && kk) ? 1 : 0;
      double ds = dT - dti, dh = dtj - dti, sv = ip.sv, hh = ip.hh, dLdt = 0;
      double dca = ds - sv * ds / hh + sv * sv * dh / (2 * hh * hh), dcb = sv * ds / hh - sv * sv * dh / (2 * hh * hh);
      for (q = 0; q < nx; ++q) dLdt += rhs[q] * (dca * a->fa[q] + dcb * a->fb[q]);
      memset(a->v2, 0, sizeof(double) * (size_t)n);
      add_dense(a, &d->f.d[SALTA_WRT_T], ip.ti, w0, ip.ca * dti, a->v2, n, 0, 0);
      add_dense(a, &d->f.d[SALTA_WRT_T], ip.tj, w1, ip.cb * dtj, a->v2, n, 0, 0);
      for (q = 0; q < nx; ++q) dLdt += rhs[q] * a->v2[q];
      dLdtau[s + kk] += dLdt;
    }
  }
  return SALTA_OK;
}

typedef struct sweep_out { double value; double *grad_p, *grad_x0; } sweep_out;

static int sweep(adj *a, sweep_out *out) {
  salta_loss *l = a->l;
  const salta_model_def *d = a->d;
  int n = a->n, nx = a->nx, s, i, k, j, st = SALTA_OK;
  double *c = calloc((size_t)a->nnodes * n, sizeof(double));     /* dL/dw per node */
  double *dLdtau = calloc((size_t)a->nseg + 1, sizeof(double));
  double *lam = malloc(sizeof(double) * (size_t)a->nnodes * n);  /* per step, affine part a */
  double *lamb = malloc(sizeof(double) * (size_t)a->nnodes * n); /* part b (times mu) */
  double *nu = malloc(sizeof(double) * (size_t)n), *rhs = malloc(sizeof(double) * (size_t)n);
  double *rhsb = malloc(sizeof(double) * (size_t)n), *dy = malloc(sizeof(double) * (size_t)(d->ny + 1));
  double *wh = malloc(sizeof(double) * (size_t)n), scale = 1.0 / sqrt((double)l->nres), L = 0;
  double start_term = 0;   /* sum over the later segment's steps of lam . dR/dtau_start */
  if (!c || !dLdtau || !lam || !lamb || !nu || !rhs || !rhsb || !dy || !wh) {
    st = salta__fail(a->err, SALTA_EMEM, "out of memory");
    goto done;
  }
  memset(out->grad_p, 0, sizeof(double) * (size_t)a->np);
  memset(out->grad_x0, 0, sizeof(double) * (size_t)nx);
  /* the loss and its sources dL/dw at the nodes and dL/dtau */
  for (k = 0; k < l->nt; ++k) {
    double T = l->times[k];
    int seg0 = 0, seg1 = a->nseg - 1, sg;
    if (l->beta > 0) {
      /* blended: every segment's value at T clipped into it, weighted */
      double B = 1e-30;
      for (sg = 0; sg < a->nseg; ++sg) {
        double sa = 1 / (1 + exp(-l->beta * (T - a->tau[sg]))), sb = 1 / (1 + exp(-l->beta * (a->tau[sg + 1] - T)));
        a->wts[sg] = sa * sb;
        B += a->wts[sg];
        if ((st = interpolate(a, sg, T, NULL, wh))) goto done;
        d->h.eval(fmin(fmax(T, a->tau[sg]), a->tau[sg + 1]), wh, wh + nx, a->p, a->ys + (size_t)sg * (d->ny + 1));
      }
      for (j = 0; j < d->ny; ++j) {
        double acc = 0;
        for (sg = 0; sg < a->nseg; ++sg) acc += a->wts[sg] * a->ys[(size_t)sg * (d->ny + 1) + j];
        dy[j] = acc / B;
      }
      a->wsum = B;
    } else {
      seg0 = seg1 = segment_of(a, T);
      if ((st = interpolate(a, seg0, T, NULL, wh))) goto done;
      d->h.eval(T, wh, wh + nx, a->p, dy);
    }
    /* dL/dyhat per output */
    memset(a->gy, 0, sizeof(double) * (size_t)(d->ny + 1));
    for (j = 0; j < l->nout; ++j) {
      double datum = l->data[(size_t)k * l->nout + j], r;
      int yi = l->outputs[j];
      if (isnan(datum)) continue;
      r = l->weights[j] * (dy[yi] - datum) * scale;
      L += r * r;
      a->gy[yi] += 2 * r * l->weights[j] * scale;
    }
    for (sg = seg0; sg <= seg1; ++sg) {
      double wfac = 1;
      if (l->beta > 0) {
        /* the weights move with the segment's ends */
        double sa = 1 / (1 + exp(-l->beta * (T - a->tau[sg]))), sb = 1 / (1 + exp(-l->beta * (a->tau[sg + 1] - T)));
        double dLdw = 0;
        for (j = 0; j < d->ny; ++j) dLdw += a->gy[j] * (a->ys[(size_t)sg * (d->ny + 1) + j] - dy[j]) / a->wsum;
        dLdtau[sg] += dLdw * (-l->beta * sa * (1 - sa) * sb);
        dLdtau[sg + 1] += dLdw * (l->beta * sb * (1 - sb) * sa);
        wfac = a->wts[sg] / a->wsum;
        if (wfac < 1e-300) continue;
      }
      if ((st = source(a, sg, T, wfac, c, dLdtau, out->grad_p, wh, rhs))) goto done;
    }
  }
  out->value = L;

  /* backward over the segments */
  for (s = a->nseg - 1; s >= 0; --s) {
    const seg *g = &a->segs[s];
    int M = g->m, affine = g->event >= 0;
    double tb = a->tau[s + 1];
    const double *wm = node(a, g->node0 + M);
    double *eg = a->v3;   /* the guard's row: e_w (n), e_t */
    double et = 0, mu = 0;
    /* terminal right-hand side at the last node */
    memcpy(rhs, c + (size_t)(g->node0 + M) * n, sizeof(double) * (size_t)n);
    memset(rhsb, 0, sizeof(double) * (size_t)n);
    if (affine) {
      /* - R_w^T nu_x (the reset), nu from the next segment's first node */
      add_transpose(a, &d->r[g->event].d[SALTA_WRT_X], tb, wm, -1, nu, 0, rhs);
      add_transpose(a, &d->r[g->event].d[SALTA_WRT_Z], tb, wm, -1, nu, 0, rhs + nx);
      /* mu e_w: the guard's row j */
      memset(eg, 0, sizeof(double) * (size_t)n);
      {
        const salta_sparse_def *ex = &d->e.d[SALTA_WRT_X], *ez = &d->e.d[SALTA_WRT_Z], *ett = &d->e.d[SALTA_WRT_T];
        int q;
        if (ex->nnz) { ex->eval(tb, wm, wm + nx, a->p, a->jv); for (q = 0; q < ex->nnz; ++q) if (ex->row[q] == g->event) eg[ex->col[q]] = a->jv[q]; }
        if (ez->nnz) { ez->eval(tb, wm, wm + nx, a->p, a->jv); for (q = 0; q < ez->nnz; ++q) if (ez->row[q] == g->event) eg[nx + ez->col[q]] = a->jv[q]; }
        if (ett->nnz) { ett->eval(tb, wm, wm + nx, a->p, a->jv); for (q = 0; q < ett->nnz; ++q) if (ett->row[q] == g->event) et = a->jv[q]; }
      }
      memcpy(rhsb, eg, sizeof(double) * (size_t)n);
    }
    /* steps M-1 .. 0: A_i^T lam_i = -(rhs at node i+1) */
    for (i = M - 1; i >= 0; --i) {
      double *la = lam + (size_t)(g->node0 + i) * n, *lb = lamb + (size_t)(g->node0 + i) * n;
      double ti = node_time(a, s, i), h = node_time(a, s, i + 1) - ti;
      const double *wi = node(a, g->node0 + i);
      memcpy(la, rhs, sizeof(double) * (size_t)n);
      if (affine) memcpy(lb, rhsb, sizeof(double) * (size_t)n);
      if ((st = solve_AT(a, s, i, la, affine ? lb : NULL))) goto done;
      /* the right-hand side at node i: c_i + B_i^T lam_i (node 0: kept for nu) */
      memcpy(rhs, c + (size_t)(g->node0 + i) * n, sizeof(double) * (size_t)n);
      add_BT(a, ti, wi, h, la, rhs);
      if (affine) {
        memset(rhsb, 0, sizeof(double) * (size_t)n);
        add_BT(a, ti, wi, h, lb, rhsb);
      }
    }
    if (affine) {
      /* the event time's stationarity fixes mu */
      double tconst = dLdtau[s + 1] + start_term, tcoef = et;
      const double *wp = node(a, a->segs[s + 1].node0);
      for (i = 0; i < M; ++i) {
        dR_dtau(a, s, i, 1, a->v2);
        tconst += dot(lam + (size_t)(g->node0 + i) * n, a->v2, n);
        tcoef += dot(lamb + (size_t)(g->node0 + i) * n, a->v2, n);
      }
      /* - nu_x . r_t + nu_z . g_t(tau, w+) */
      memset(a->v2, 0, sizeof(double) * (size_t)n);
      add_dense(a, &d->r[g->event].d[SALTA_WRT_T], tb, wm, -1, a->v2, n, 0, 0);
      add_dense(a, &d->g.d[SALTA_WRT_T], tb, wp, 1, a->v2, n, nx, 0);
      tconst += dot(nu, a->v2, n);
      if (!(fabs(tcoef) > 0) || !isfinite(tcoef))
        { st = salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: grazing event '%s' at t = %.17g",
                           d->name, d->e_names[g->event], tb); goto done; }
      mu = -tconst / tcoef;
      for (i = 0; i < M; ++i)
        for (k = 0; k < n; ++k) lam[(size_t)(g->node0 + i) * n + k] += mu * lamb[(size_t)(g->node0 + i) * n + k];
      for (k = 0; k < n; ++k) rhs[k] += mu * rhsb[k];
      /* the event block's parameter terms: mu e_p - nu_x^T r_p + nu_z^T g_p(tau, w+) */
      {
        const salta_sparse_def *ep = &d->e.d[SALTA_WRT_P];
        int q;
        if (ep->nnz) { ep->eval(tb, wm, wm + nx, a->p, a->jv); for (q = 0; q < ep->nnz; ++q) if (ep->row[q] == g->event) out->grad_p[ep->col[q]] += mu * a->jv[q]; }
      }
      add_param(a, &d->r[g->event].d[SALTA_WRT_P], tb, wm, -1, nu, 0, out->grad_p);
      add_param(a, &d->g.d[SALTA_WRT_P], tb, wp, 1, nu, nx, out->grad_p);
    }
    /* the steps' parameter terms: lam_i^T dR_i/dp */
    for (i = 0; i < M; ++i) {
      const double *la = lam + (size_t)(g->node0 + i) * n;
      double ti = node_time(a, s, i), tj = node_time(a, s, i + 1), h = tj - ti;
      add_param(a, &d->f.d[SALTA_WRT_P], ti, node(a, g->node0 + i), -h / 2, la, 0, out->grad_p);
      add_param(a, &d->f.d[SALTA_WRT_P], tj, node(a, g->node0 + i + 1), -h / 2, la, 0, out->grad_p);
      add_param(a, &d->g.d[SALTA_WRT_P], tj, node(a, g->node0 + i + 1), 1, la, nx, out->grad_p);
    }
    /* this segment's share of its start time's stationarity */
    start_term = 0;
    if (s > 0)
      for (i = 0; i < M; ++i) {
        dR_dtau(a, s, i, 0, a->v2);
        start_term += dot(lam + (size_t)(g->node0 + i) * n, a->v2, n);
      }
    /* the consistency block at the segment's first node: K^T nu = -rhs */
    {
      const double *w0 = node(a, g->node0);
      if ((st = solve_KT(a, a->tau[s], w0, rhs, nu))) goto done;
      if (s == 0) {
        for (k = 0; k < nx; ++k) out->grad_x0[k] = -nu[k];   /* x(t0) = x0 */
        add_param(a, &d->g.d[SALTA_WRT_P], a->tau[0], w0, 1, nu, nx, out->grad_p);
      }
    }
  }
done:
  free(c); free(dLdtau); free(lam); free(lamb); free(nu); free(rhs); free(rhsb); free(dy); free(wh);
  return st;
}

/* forward = "ida" (the seed paper's approach): the nodes are the
** integrator's solution at the node times, taken as they are (the discrete
** residuals then hold only to the integration tolerance); a segment's last
** node is the event's left limit. */
static int ida_nodes(adj *a, salta_sim *sim, const salta_sim_options *o) {
  double *t = malloc(sizeof(double) * (size_t)a->nnodes);
  salta_sim_options oo = *o;
  int s, i, k = 0, st;
  if (!t) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  for (s = 0; s < a->nseg; ++s)
    for (i = 0; i <= a->segs[s].m; ++i) t[k++] = node_time(a, s, i);
  oo.record_steps = 0;
  st = salta_sim_run(sim, &oo, a->p, a->x0, t, a->nnodes);
  free(t);
  if (st) return salta__fail(a->err, st, "%s", salta_sim_errmsg(sim));
  if (salta_sim_nevents(sim) != a->nseg - 1)
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: the event sequence changed between runs",
                       a->d->name);
  for (k = 0; k < a->nnodes; ++k) {
    const double *x, *z;
    salta_sim_out(sim, k, NULL, &x, &z, NULL);
    memcpy(node(a, k), x, sizeof(double) * (size_t)a->nx);
    if (a->nz) memcpy(node(a, k) + a->nx, z, sizeof(double) * (size_t)a->nz);
  }
  for (s = 0; s + 1 < a->nseg; ++s) {   /* left limits at the events */
    salta_event_record r;
    double *wm = node(a, a->segs[s].node0 + a->segs[s].m);
    salta_sim_event(sim, s, &r);
    memcpy(wm, r.x_minus, sizeof(double) * (size_t)a->nx);
    if (a->nz) memcpy(wm + a->nx, r.z_minus, sizeof(double) * (size_t)a->nz);
  }
  return SALTA_OK;
}

/* ---- the entry point ----------------------------------------------------------------- */

int salta_loss_eval_adjoint(salta_loss *l, const double *p, const double *x0, int mesh_k,
                            int consistent, double *value, double *grad) {
  adj a;
  salta_sim_options o;
  sweep_out so = {0, NULL, NULL};
  size_t n, scratch;
  int st, s, k;
  double *gp = NULL;
  if (!l || !p) return SALTA_EINPUT;
  memset(&a, 0, sizeof a);
  a.l = l;
  a.d = l->d;
  a.p = p;
  a.x0 = x0;
  a.nx = l->d->nx;
  a.nz = l->d->nz;
  a.n = a.nx + a.nz;
  a.np = l->d->np;
  a.err = l->err;
  n = (size_t)a.n;
  /* the forward run gives the event sequence (and, for mesh = steps, the steps) */
  o = l->opts;
  o.record_steps = mesh_k <= 0;
  /* a mesh of the integrator's steps: steps of a second-order method, so
  ** that the trapezoid on them is as accurate as the tolerance asks */
  if (mesh_k <= 0 && o.method == SALTA_METHOD_BDF) o.max_order = 2;
  l->last = l->vsim;
  if ((st = salta_sim_run(l->vsim, &o, p, x0, l->times, l->nt)))
    return salta__fail(l->err, st, "%s", salta_sim_errmsg(l->vsim));
  {
    size_t maxnnz = 1;
    const salta_function_def *fns[] = {&a.d->f, &a.d->g, &a.d->h, &a.d->e};
    int w, q;
    for (q = 0; q < 4; ++q) for (w = 0; w < 4; ++w) if ((size_t)fns[q]->d[w].nnz > maxnnz) maxnnz = (size_t)fns[q]->d[w].nnz;
    for (q = 0; q < a.d->ne; ++q) for (w = 0; w < 4; ++w) if ((size_t)a.d->r[q].d[w].nnz > maxnnz) maxnnz = (size_t)a.d->r[q].d[w].nnz;
    scratch = 4 * n * n + 5 * n + (size_t)a.d->ne + maxnnz + 8;
  }
  a.A = malloc(sizeof(double) * scratch);
  a.ipiv = malloc(sizeof(int) * (2 * n + 2));
  gp = malloc(sizeof(double) * (size_t)(a.np + a.nx + 1));
  if (!a.A || !a.ipiv || !gp) { st = salta__fail(l->err, SALTA_EMEM, "out of memory"); goto done; }
  a.B = a.A + n * n;
  a.LU = a.B + n * n;
  a.Af = a.LU + n * n;
  a.ipf = a.ipiv + n + 1;
  a.v1 = a.Af + n * n;
  a.v2 = a.v1 + n;
  a.fa = a.v2 + n;
  a.fb = a.fa + n;
  a.v3 = a.fb + n;             /* ne guards, or an n-vector */
  a.jv = a.v3 + (n > (size_t)a.d->ne ? n : (size_t)a.d->ne) + 1;
  if (salta__use_klu(&o, a.n)) {
    a.sparse = 1;
    if (salta__pattern_build(&a.pat, a.d) || !(a.Ax = malloc(sizeof(double) * (size_t)(a.pat.nnz + 1))) ||
        !(a.luf = salta__sparselu_new(&a.pat)) || !(a.lub = salta__sparselu_new(&a.pat))) {
      st = salta__fail(l->err, SALTA_EMEM, "out of memory (the adjoint's sparse step matrix)");
      goto done;
    }
  }
  if ((st = build(&a, l->vsim, mesh_k, &o))) goto done;
  a.gy = malloc(sizeof(double) * (size_t)(a.d->ny + 1));
  a.wts = malloc(sizeof(double) * (size_t)(a.nseg + 1));
  a.ys = malloc(sizeof(double) * (size_t)(a.nseg + 1) * (a.d->ny + 1));
  if (!a.gy || !a.wts || !a.ys) { st = salta__fail(l->err, SALTA_EMEM, "out of memory"); goto done; }
  if (consistent) {
    /* the consistent discrete trajectory */
    double *w0 = node(&a, 0);
    memcpy(w0, x0 ? x0 : a.d->x_start, sizeof(double) * (size_t)a.nx);
    if (a.nz) memcpy(w0 + a.nx, a.d->z_start, sizeof(double) * (size_t)a.nz);
    if ((st = solve_z(&a, a.tau[0], w0))) goto done;
    for (s = 0; s < a.nseg; ++s)
      if ((st = solve_segment(&a, s))) goto done;
  } else if ((st = ida_nodes(&a, l->vsim, &o))) {
    goto done;
  }
  so.grad_p = gp;
  so.grad_x0 = gp + a.np;
  if ((st = sweep(&a, &so))) goto done;
  if (value) *value = so.value;
  if (grad)
    for (k = 0; k < l->ns; ++k) grad[k] = l->dirs[k] >= 0 ? so.grad_p[l->dirs[k]] : so.grad_x0[-l->dirs[k] - 1];
done:
  free(a.A); free(a.ipiv); free(gp); free(a.segs); free(a.tau); free(a.sigma); free(a.w);
  free(a.gy); free(a.wts); free(a.ys);
  salta__sparselu_free(a.luf); salta__sparselu_free(a.lub); free(a.Ax);
  if (a.sparse) salta__pattern_free(&a.pat);
  return st;
}
