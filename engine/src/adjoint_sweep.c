/*
** adjoint_sweep.c -- the discrete loss and the backward sweep of the
** event-split discrete adjoint (see adjoint_impl.h). The residuals are
** equality constraints whose multipliers are solved backward: per step one
** transposed solve; per event group the multiplier mu of its guard, unknown
** while its segment is swept (the adjoint there is affine in it), is fixed
** by the stationarity of the event time.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adjoint_impl.h"
#include "linsol.h"

int salta__adj_solve_z(salta__adj *a, double t, double *w) {
  salta__zfail why;
  if (salta__dae_solve_z(a->dae, t, w, w + a->nx, &why) == 0) return SALTA_OK;
  return salta__fail(a->err, SALTA_EALGEBRAIC, "model '%s': adjoint: Newton on g failed at t = %.17g: "
                     "algebraic equation g[%d] keeps residual %g", a->d->name, t, why.eq + 1, why.residual);
}

static double dot(const double *u, const double *v, int n) {
  double r = 0;
  int i;
  for (i = 0; i < n; ++i) r += u[i] * v[i];
  return r;
}

/* The segment holding target time T in the forward run (right-continuous
** at events): a target the run read just before an event is read there
** even when the discrete event time falls a rounding error before it. */
static int segment_of(const salta__adj *a, double T) {
  int s = 0;
  while (s + 1 < a->nseg && a->tau_run[s + 1] <= T) ++s;
  return s;
}

/* dR_i/dtau for the segment's end (end = 1) or start (end = 0) into out. */
static void dR_dtau(salta__adj *a, int s, int i, int end, double *out) {
  const salta__adj_seg *g = &a->segs[s];
  int nx = a->nx, k;
  double si = a->sigma[g->node0 + i], sj = a->sigma[g->node0 + i + 1];
  double ti = salta__adj_time(a, s, i), tj = salta__adj_time(a, s, i + 1), h = tj - ti;
  double dti = end ? si : 1 - si, dtj = end ? sj : 1 - sj, dh = (sj - si) * (end ? 1 : -1);
  const double *wi = salta__adj_node(a, g->node0 + i), *wj = salta__adj_node(a, g->node0 + i + 1);
  memset(out, 0, sizeof(double) * (size_t)a->n);
  a->d->f.eval(ti, wi, wi + nx, a->p, a->fa);
  a->d->f.eval(tj, wj, wj + nx, a->p, a->fb);
  for (k = 0; k < nx; ++k) out[k] = -dh / 2 * (a->fa[k] + a->fb[k]);
  salta__dae_add_dense(a->dae, &a->d->f.d[SALTA_WRT_T], ti, wi, -h / 2 * dti, out, a->n, 0, 0);
  salta__dae_add_dense(a->dae, &a->d->f.d[SALTA_WRT_T], tj, wj, -h / 2 * dtj, out, a->n, 0, 0);
  salta__dae_add_dense(a->dae, &a->d->g.d[SALTA_WRT_T], tj, wj, dtj, out, a->n, nx, 0);
}

/* y += B_i^T lam: B_i = dR_i/dw_i = [[-I - h/2 f_x, -h/2 f_z]; [0, 0]]. */
static void add_BT(salta__adj *a, double t, const double *w, double h, const double *lam, double *y) {
  int k;
  for (k = 0; k < a->nx; ++k) y[k] -= lam[k];
  salta__dae_add_transpose(a->dae, &a->d->f.d[SALTA_WRT_X], t, w, -h / 2, lam, 0, y);
  salta__dae_add_transpose(a->dae, &a->d->f.d[SALTA_WRT_Z], t, w, -h / 2, lam, 0, y + a->nx);
}

/* Solves A_i^T lam = -rhs for step i of segment s (lam overwrites rhs),
** and the same for rhs2 unless it is NULL, with one factorisation. */
static int solve_AT(salta__adj *a, int s, int i, double *rhs, double *rhs2) {
  const salta__adj_seg *g = &a->segs[s];
  double tj = salta__adj_time(a, s, i + 1), h = tj - salta__adj_time(a, s, i), *b[2];
  const double *wj = salta__adj_node(a, g->node0 + i + 1);
  int nb = rhs2 ? 2 : 1, q, k, bad;
  b[0] = rhs, b[1] = rhs2;
  if (a->sparse)
    bad = salta__dae_iter_sparse(a->dae, &a->pat, tj, wj, 1.0, h / 2, a->Ax) ||
          salta__sparselu_factor(a->lu_sweep, a->Ax, NULL);
  else
    bad = salta__dae_iter_dense(a->dae, tj, wj, 1.0, h / 2, a->A) || salta__lu_factor(a->n, a->A, a->piv, NULL);
  if (bad) {
    char cause[512];
    salta__dae_bad_text(a->dae, cause, sizeof cause);
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: singular or non-finite step matrix at t = %.17g%s%s",
                       a->d->name, tj, a->dae->saw_bad ? ": " : "", a->dae->saw_bad ? cause : "");
  }
  for (q = 0; q < nb; ++q) {
    if (a->sparse) salta__sparselu_solve(a->lu_sweep, b[q], 1);
    else salta__lu_solve(a->n, a->A, a->piv, b[q], 1, 1);
    for (k = 0; k < a->n; ++k) b[q][k] = -b[q][k];
  }
  return SALTA_OK;
}

/* g_z^-T v (nz, in place) at (t, w). */
static int gz_tsolve(salta__adj *a, double t, const double *w, double *v) {
  if (salta__dae_factor_gz(a->dae, t, w))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: g_z singular at t = %.17g", a->d->name, t);
  salta__dae_gz_solve(a->dae, v, 1, 1);
  return SALTA_OK;
}

/* K^T nu = -rhs for the consistency block K = [[I, 0]; [g_x, g_z]] at
** (t, w): nu_z = -g_z^-T rhs_z, nu_x = -rhs_x - g_x^T nu_z. */
static int solve_KT(salta__adj *a, double t, const double *w, const double *rhs, double *nu) {
  int k, st;
  memcpy(nu, rhs, sizeof(double) * (size_t)a->n);
  if (a->nz > 0 && (st = gz_tsolve(a, t, w, nu + a->nx))) return st;
  for (k = 0; k < a->n; ++k) nu[k] = -nu[k];
  salta__dae_add_transpose(a->dae, &a->d->g.d[SALTA_WRT_X], t, w, -1, nu, a->nx, nu);
  return SALTA_OK;
}

/* ---- the discrete loss ------------------------------------------------------------ */

/* The trapezoid's own interpolant of segment s at T clipped into the
** segment: x quadratic with x' = f at both nodes (exact for ballistic
** flight), z solved from g at that x (so that its error, and its
** derivative as the nodes move, stays of the trapezoid's order). Fills wh
** and, when ip is given, the interval's data. */
typedef struct interval { int i, clip; double Tc, ti, tj, h, sv, ca, cb; } interval;

static int interpolate(salta__adj *a, int s, double T, interval *ip, double *wh) {
  const salta_model_def *d = a->d;
  int nx = a->nx, n = a->n, kk, lo = 0, hi = a->segs[s].m, clip = 0;
  double Tc = T, ti, tj, h, sv, ca, cb, th;
  const double *w0, *w1;
  if (Tc < a->tau[s]) Tc = a->tau[s], clip = -1;
  if (Tc > a->tau[s + 1]) Tc = a->tau[s + 1], clip = 1;
  while (hi - lo > 1) {
    int mid = (lo + hi) / 2;
    if (salta__adj_time(a, s, mid) <= Tc) lo = mid; else hi = mid;
  }
  w0 = salta__adj_node(a, a->segs[s].node0 + lo);
  w1 = salta__adj_node(a, a->segs[s].node0 + lo + 1);
  ti = salta__adj_time(a, s, lo), tj = salta__adj_time(a, s, lo + 1), h = tj - ti, sv = Tc - ti;
  /* a segment of zero length (a cascade round, an event at tf) holds its node */
  ca = h > 0 ? sv - sv * sv / (2 * h) : 0, cb = h > 0 ? sv * sv / (2 * h) : 0, th = h > 0 ? sv / h : 0;
  d->f.eval(ti, w0, w0 + nx, a->p, a->fa);
  d->f.eval(tj, w1, w1 + nx, a->p, a->fb);
  for (kk = 0; kk < nx; ++kk) wh[kk] = w0[kk] + ca * a->fa[kk] + cb * a->fb[kk];
  for (kk = nx; kk < n; ++kk) wh[kk] = (1 - th) * w0[kk] + th * w1[kk];
  if (ip) ip->i = lo, ip->clip = clip, ip->Tc = Tc, ip->ti = ti, ip->tj = tj, ip->h = h, ip->sv = sv, ip->ca = ca,
          ip->cb = cb;
  return a->nz ? salta__adj_solve_z(a, Tc, wh) : SALTA_OK;
}

/* y += scale * a->gy^T K for an output Jacobian K (h_x, h_z, h_p or h_t). */
static void add_output_terms(salta__adj *a, int wrt, double t, const double *w, double scale, double *y) {
  salta__dae_add_transpose(a->dae, &a->d->h.d[wrt], t, w, scale, a->gy, 0, y);
}

/* Distributes wfac * dL/dyhat (a->gy) through the interpolant of segment s
** at T onto the nodes (c), the parameters and the segment's end times. */
static int source(salta__adj *a, int s, double T, double wfac, double *c, double *dLdtau, double *grad_p,
                  double *wh, double *rhs) {
  const salta_model_def *d = a->d;
  int nx = a->nx, n = a->n, nz = a->nz, kk, q, st;
  interval ip;
  if ((st = interpolate(a, s, T, &ip, wh))) return st;
  memset(rhs, 0, sizeof(double) * (size_t)n);
  add_output_terms(a, SALTA_WRT_X, ip.Tc, wh, wfac, rhs);
  add_output_terms(a, SALTA_WRT_Z, ip.Tc, wh, wfac, rhs + nx);
  add_output_terms(a, SALTA_WRT_P, ip.Tc, wh, wfac, grad_p);
  if (ip.clip) {   /* a clipped time moves with the end it is clipped to */
    double dLdT = 0;
    add_output_terms(a, SALTA_WRT_T, ip.Tc, wh, wfac, &dLdT);
    if (nz) {   /* z(T, x): its t-derivative through g_t */
      memcpy(a->dLdz, rhs + nx, sizeof(double) * (size_t)nz);
      if ((st = gz_tsolve(a, ip.Tc, wh, a->dLdz))) return st;
      memset(a->gt, 0, sizeof(double) * (size_t)nz);
      salta__dae_add_dense(a->dae, &d->g.d[SALTA_WRT_T], ip.Tc, wh, 1, a->gt, nz, 0, 0);
      for (q = 0; q < nz; ++q) dLdT -= a->dLdz[q] * a->gt[q];
    }
    dLdtau[ip.clip < 0 ? s : s + 1] += dLdT;
  }
  if (nz) {
    /* z = z(x): dL/dx += -g_x^T g_z^-T dL/dz, dL/dp += -g_p^T g_z^-T dL/dz */
    if ((st = gz_tsolve(a, ip.Tc, wh, rhs + nx))) return st;
    salta__dae_add_transpose(a->dae, &d->g.d[SALTA_WRT_X], ip.Tc, wh, -1, rhs, nx, rhs);
    salta__dae_add_transpose(a->dae, &d->g.d[SALTA_WRT_P], ip.Tc, wh, -1, rhs, nx, grad_p);
    for (q = nx; q < n; ++q) rhs[q] = 0;
  }
  {
    int n0 = a->segs[s].node0 + ip.i;
    double *c0 = c + (size_t)n0 * n, *c1 = c + (size_t)(n0 + 1) * n;
    const double *w0 = salta__adj_node(a, n0), *w1 = salta__adj_node(a, n0 + 1);
    double si = a->sigma[n0], sj = a->sigma[n0 + 1];
    /* the interpolant's f terms were evaluated by interpolate() */
    for (kk = 0; kk < nx; ++kk) c0[kk] += rhs[kk];
    salta__dae_add_transpose(a->dae, &d->f.d[SALTA_WRT_X], ip.ti, w0, ip.ca, rhs, 0, c0);
    salta__dae_add_transpose(a->dae, &d->f.d[SALTA_WRT_Z], ip.ti, w0, ip.ca, rhs, 0, c0 + nx);
    salta__dae_add_transpose(a->dae, &d->f.d[SALTA_WRT_X], ip.tj, w1, ip.cb, rhs, 0, c1);
    salta__dae_add_transpose(a->dae, &d->f.d[SALTA_WRT_Z], ip.tj, w1, ip.cb, rhs, 0, c1 + nx);
    salta__dae_add_transpose(a->dae, &d->f.d[SALTA_WRT_P], ip.ti, w0, ip.ca, rhs, 0, grad_p);
    salta__dae_add_transpose(a->dae, &d->f.d[SALTA_WRT_P], ip.tj, w1, ip.cb, rhs, 0, grad_p);
    /* the node times (and a clipped T) move with the segment's ends */
    for (kk = 0; kk < 2 && ip.h > 0; ++kk) {
      double dti = kk ? si : 1 - si, dtj = kk ? sj : 1 - sj, dT = (ip.clip < 0 && !kk) || (ip.clip > 0 && kk) ? 1 : 0;
      double ds = dT - dti, dh = dtj - dti, sv = ip.sv, h = ip.h, dLdt = 0;
      double dca = ds - sv * ds / h + sv * sv * dh / (2 * h * h), dcb = sv * ds / h - sv * sv * dh / (2 * h * h);
      for (q = 0; q < nx; ++q) dLdt += rhs[q] * (dca * a->fa[q] + dcb * a->fb[q]);
      memset(a->tterm, 0, sizeof(double) * (size_t)n);
      salta__dae_add_dense(a->dae, &d->f.d[SALTA_WRT_T], ip.ti, w0, ip.ca * dti, a->tterm, n, 0, 0);
      salta__dae_add_dense(a->dae, &d->f.d[SALTA_WRT_T], ip.tj, w1, ip.cb * dtj, a->tterm, n, 0, 0);
      for (q = 0; q < nx; ++q) dLdt += rhs[q] * a->tterm[q];
      dLdtau[s + kk] += dLdt;
    }
  }
  return SALTA_OK;
}

/* The blended prediction at T (targets.h) of every output into dy, from
** each segment's outputs at T clipped into it (a->ys); a->bl holds the
** weights. */
static int blended(salta__adj *a, double T, double *dy, double *wh) {
  const salta_model_def *d = a->d;
  size_t stride = (size_t)d->ny + 1;
  int sg, j, st;
  salta__blend_at(&a->bl, a->tg->beta, T, a->tau);
  for (sg = 0; sg < a->nseg; ++sg) {
    if ((st = interpolate(a, sg, T, NULL, wh))) return st;
    d->h.eval(fmin(fmax(T, a->tau[sg]), a->tau[sg + 1]), wh, wh + a->nx, a->p, a->ys + (size_t)sg * stride);
  }
  for (j = 0; j < d->ny; ++j) dy[j] = salta__blend_value(&a->bl, a->ys + j, stride);
  return SALTA_OK;
}

/* The predictions of target k into dy (every output), and the segments
** they come from (*seg0 .. *seg1). */
static int predict(salta__adj *a, int k, double *dy, double *wh, int *seg0, int *seg1) {
  double T = a->tg->times[k];
  int st;
  if (a->tg->beta > 0) {
    *seg0 = 0, *seg1 = a->nseg - 1;
    return blended(a, T, dy, wh);
  }
  *seg0 = *seg1 = segment_of(a, T);
  if ((st = interpolate(a, *seg0, T, NULL, wh))) return st;
  a->d->h.eval(T, wh, wh + a->nx, a->p, dy);
  return SALTA_OK;
}

/* The event windows' events: every member of the group closing segment
** s, at the discrete time tau[s + 1] (bnd: that boundary). */
typedef struct adj_windows {
  salta__windows w;
  double *tau;
  int *ev, *bnd;
} adj_windows;

static int adj_windows_init(salta__adj *a, adj_windows *aw) {
  int s, q, n = 0;
  memset(aw, 0, sizeof *aw);
  for (s = 0; s + 1 < a->nseg; ++s) n += a->segs[s].count;
  aw->tau = malloc(sizeof(double) * ((size_t)n + 1));
  aw->ev = malloc(sizeof(int) * ((size_t)n + 1));
  aw->bnd = malloc(sizeof(int) * ((size_t)n + 1));
  if (!aw->tau || !aw->ev || !aw->bnd) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  for (n = 0, s = 0; s + 1 < a->nseg; ++s)
    for (q = 0; q < a->segs[s].count; ++q, ++n)
      aw->tau[n] = a->tau[s + 1], aw->ev[n] = a->events[a->segs[s].first + q], aw->bnd[n] = s + 1;
  return salta__windows_alloc(&aw->w, a->tg, n, aw->tau, aw->ev, a->err);
}

static void adj_windows_free(adj_windows *aw) {
  salta__windows_free(&aw->w);
  free(aw->tau); free(aw->ev); free(aw->bnd);
}

/* The discrete loss and its sources: dL/dw per node (c), dL/dtau per
** boundary, and the direct parameter terms. */
static int losses(salta__adj *a, adj_windows *aw, double *c, double *dLdtau, double *grad_p, double *dy, double *wh,
                  double *rhs, double *value) {
  const salta__targets *tg = a->tg;
  const salta_model_def *d = a->d;
  size_t stride = (size_t)d->ny + 1;
  double L = 0;
  int k, j, q, sg, st, seg0, seg1, m = 0;
  salta__resid res = {a->r, a->dr, a->dL, a->rs};
  for (k = 0; k < tg->nk; ++k) {   /* targets past a terminal event weigh nothing */
    if ((st = predict(a, k, dy, wh, &seg0, &seg1))) return st;
    for (j = 0; j < tg->nout; ++j) a->yk[j] = dy[tg->outputs[j]];
    if (aw) salta__windows_at(&aw->w, tg, k);
    L = salta__targets_residuals(tg, k, a->yk, aw ? aw->w.v : NULL, &res, L);
    for (j = 0; a->resid && j < tg->nout; ++j)
      if (!salta__targets_missing(tg, (size_t)k * tg->nout + j)) a->resid[m++] = a->r[j];
    for (j = 0; aw && j < tg->nout; ++j)   /* the windows move with the event times: dL/dv = 2 r s */
      for (q = 0; q < aw->w.nq; ++q)
        dLdtau[aw->bnd[aw->w.q0 + q]] += 2 * a->r[j] * a->rs[j] * aw->w.dv[(size_t)j * aw->w.n + q];
    memset(a->gy, 0, sizeof(double) * stride);
    for (j = 0; j < tg->nout; ++j) a->gy[tg->outputs[j]] += a->dL[j];
    if (tg->beta > 0)   /* the weights move with the segments' ends */
      for (j = 0; j < d->ny; ++j)
        if (a->gy[j] != 0) salta__blend_boundaries(&a->bl, a->ys + j, stride, dy[j], a->gy[j], dLdtau);
    for (sg = seg0; sg <= seg1; ++sg) {
      double wfac = tg->beta > 0 ? a->bl.w[sg] / a->bl.B : 1;
      if (wfac < 1e-300) continue;
      if ((st = source(a, sg, tg->times[k], wfac, c, dLdtau, grad_p, wh, rhs))) return st;
    }
  }
  for (; a->resid && k < tg->nt; ++k)
    for (j = 0; j < tg->nout; ++j)
      if (!salta__targets_missing(tg, (size_t)k * tg->nout + j)) a->resid[m++] = 0;
  for (k = 0; k < tg->ned; ++k) {   /* event times: the discrete time of the firing's block */
    int b = tg->ed[k].rec >= 0 ? a->rec_bound[tg->ed[k].rec] : a->end_bound;
    double dLdt, r = salta__targets_event_residual(tg, k, a->tau[b], &dLdt);
    if (a->resid && !isnan(tg->ed[k].time)) a->resid[m++] = r;
    L += r * r;
    dLdtau[b] += dLdt;
  }
  *value = L;
  return SALTA_OK;
}

static int discrete_loss(salta__adj *a, double *c, double *dLdtau, double *grad_p, double *dy, double *wh,
                         double *rhs, double *value) {
  adj_windows aw;
  int st, windowed = salta__targets_windowed(a->tg);
  memset(&aw, 0, sizeof aw);
  if (!windowed || (st = adj_windows_init(a, &aw)) == SALTA_OK)
    st = losses(a, windowed ? &aw : NULL, c, dLdtau, grad_p, dy, wh, rhs, value);
  adj_windows_free(&aw);
  return st;
}

/* ---- the sweep ---------------------------------------------------------------------- */

typedef struct sweep_buf {
  double *c, *dLdtau, *lam, *lamb, *nu, *rhs, *rhsb, *dy, *wh;
} sweep_buf;

/* The terminal right-hand sides at the last node of segment s, which ends
** in an event group: -R_w^T nu (the composite reset) and the guard's row
** e_w for the part times mu; returns e_t. */
static double event_terminal(salta__adj *a, int s, sweep_buf *b) {
  const salta__adj_seg *g = &a->segs[s];
  const int *members = a->events + g->first;
  double tb = a->tau[s + 1];
  const double *wm = salta__adj_node(a, g->node0 + g->m);
  salta__dae_reset_tmul(a->dae, members, g->count, SALTA_WRT_X, tb, wm, -1, b->nu, b->rhs);
  salta__dae_reset_tmul(a->dae, members, g->count, SALTA_WRT_Z, tb, wm, -1, b->nu, b->rhs + a->nx);
  if (g->cascade) return 0;   /* no guard equation: its time is the previous group's */
  return salta__dae_guard_row(a->dae, members[0], tb, wm, NULL, b->rhsb, a->ep);
}

/* The event time's stationarity fixes mu (the guard's multiplier) of the
** group ending segment s: the adjoint of its steps is lam + mu lamb. Adds
** the event block's parameter terms. The guard's rate along the flow must
** pass the grazing rule. A round of event iteration has no guard
** equation: its time is the segment's start, so the stationarity's terms
** pass to that time (*carry). */
static int event_time(salta__adj *a, int s, double et, double start_term, sweep_buf *b, double *grad_p,
                      double *carry) {
  const salta__adj_seg *g = &a->segs[s];
  const salta_model_def *d = a->d;
  const int *members = a->events + g->first;
  double tb = a->tau[s + 1], tconst = b->dLdtau[s + 1] + start_term, tcoef = et, mu, rt = 0;
  const double *wm = salta__adj_node(a, g->node0 + g->m), *wp = salta__adj_node(a, a->segs[s + 1].node0);
  int i, k, n = a->n, M = g->m;
  for (i = 0; i < M; ++i) {
    dR_dtau(a, s, i, 1, a->dR);
    tconst += dot(b->lam + (size_t)(g->node0 + i) * n, a->dR, n);
    tcoef += dot(b->lamb + (size_t)(g->node0 + i) * n, a->dR, n);
  }
  /* - nu_x . r_t + nu_z . g_t(tau, w+) */
  salta__dae_reset_tmul(a->dae, members, g->count, SALTA_WRT_T, tb, wm, -1, b->nu, &rt);
  memset(a->tterm, 0, sizeof(double) * (size_t)n);
  salta__dae_add_dense(a->dae, &d->g.d[SALTA_WRT_T], tb, wp, 1, a->tterm, n, a->nx, 0);
  tconst += rt + dot(b->nu, a->tterm, n);
  *carry = 0;
  if (g->cascade) {
    *carry = tconst;
    salta__dae_reset_tmul(a->dae, members, g->count, SALTA_WRT_P, tb, wm, -1, b->nu, grad_p);
    salta__dae_add_transpose(a->dae, &d->g.d[SALTA_WRT_P], tb, wp, 1, b->nu, a->nx, grad_p);
    return SALTA_OK;
  }
  if (salta__dae_flow(a->dae, tb, wm, a->flow, a->flow + a->nx))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: g_z singular at t = %.17g", d->name, tb);
  salta__dae_guard_rates(a->dae, tb, wm, a->flow, a->flow + a->nx, NULL, 0, a->rate, a->rscale, NULL);
  if (salta__dae_grazing(a->rate[members[0]], a->rscale[members[0]]))
    return salta__fail(a->err, SALTA_ENODIFF, "model '%s': adjoint: grazing event '%s' at t = %.17g: the guard's "
                       "rate along the trajectory is %g", d->name, d->e_names[members[0]], tb, a->rate[members[0]]);
  if (!(fabs(tcoef) > 0) || !isfinite(tcoef))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: the discrete equations do not determine the "
                       "time of event '%s' at t = %.17g", d->name, d->e_names[members[0]], tb);
  mu = -tconst / tcoef;
  for (i = 0; i < M; ++i)
    for (k = 0; k < n; ++k) b->lam[(size_t)(g->node0 + i) * n + k] += mu * b->lamb[(size_t)(g->node0 + i) * n + k];
  for (k = 0; k < n; ++k) b->rhs[k] += mu * b->rhsb[k];
  /* mu e_p - nu_x^T r_p + nu_z^T g_p(tau, w+) */
  for (k = 0; k < a->np; ++k) grad_p[k] += mu * a->ep[k];
  salta__dae_reset_tmul(a->dae, members, g->count, SALTA_WRT_P, tb, wm, -1, b->nu, grad_p);
  salta__dae_add_transpose(a->dae, &d->g.d[SALTA_WRT_P], tb, wp, 1, b->nu, a->nx, grad_p);
  return SALTA_OK;
}

/* Steps M-1 .. 0 of segment s: A_i^T lam_i = -(rhs at node i+1), and the
** same for the mu part when the segment ends in an event. */
static int sweep_steps(salta__adj *a, int s, int affine, sweep_buf *b) {
  const salta__adj_seg *g = &a->segs[s];
  int i, st, n = a->n;
  for (i = g->m - 1; i >= 0; --i) {
    double *la = b->lam + (size_t)(g->node0 + i) * n, *lb = b->lamb + (size_t)(g->node0 + i) * n;
    if (salta_interrupted())
      return salta__fail(a->err, SALTA_EINTR, "model '%s': adjoint: interrupted at t = %.17g", a->d->name,
                         salta__adj_time(a, s, i));
    double ti = salta__adj_time(a, s, i), h = salta__adj_time(a, s, i + 1) - ti;
    const double *wi = salta__adj_node(a, g->node0 + i);
    memcpy(la, b->rhs, sizeof(double) * (size_t)n);
    if (affine) memcpy(lb, b->rhsb, sizeof(double) * (size_t)n);
    if ((st = solve_AT(a, s, i, la, affine ? lb : NULL))) return st;
    /* the right-hand side at node i: c_i + B_i^T lam_i (node 0: kept for nu) */
    memcpy(b->rhs, b->c + (size_t)(g->node0 + i) * n, sizeof(double) * (size_t)n);
    add_BT(a, ti, wi, h, la, b->rhs);
    if (affine) {
      memset(b->rhsb, 0, sizeof(double) * (size_t)n);
      add_BT(a, ti, wi, h, lb, b->rhsb);
    }
  }
  return SALTA_OK;
}

/* The steps' parameter terms lam_i^T dR_i/dp of segment s. */
static void step_params(salta__adj *a, int s, const sweep_buf *b, double *grad_p) {
  const salta__adj_seg *g = &a->segs[s];
  const salta_model_def *d = a->d;
  int i, n = a->n;
  for (i = 0; i < g->m; ++i) {
    const double *la = b->lam + (size_t)(g->node0 + i) * n;
    double ti = salta__adj_time(a, s, i), tj = salta__adj_time(a, s, i + 1), h = tj - ti;
    salta__dae_add_transpose(a->dae, &d->f.d[SALTA_WRT_P], ti, salta__adj_node(a, g->node0 + i), -h / 2, la, 0, grad_p);
    salta__dae_add_transpose(a->dae, &d->f.d[SALTA_WRT_P], tj, salta__adj_node(a, g->node0 + i + 1), -h / 2, la, 0, grad_p);
    salta__dae_add_transpose(a->dae, &d->g.d[SALTA_WRT_P], tj, salta__adj_node(a, g->node0 + i + 1), 1, la, a->nx, grad_p);
  }
}

static int sweep_with(salta__adj *a, sweep_buf *b, double *value, double *grad_p, double *grad_x0, int want_grad) {
  int n = a->n, nx = a->nx, s, i, k, st;
  double start_term = 0;   /* the later segment's share of its start time's stationarity */
  memset(grad_p, 0, sizeof(double) * (size_t)a->np);
  memset(grad_x0, 0, sizeof(double) * (size_t)nx);
  if ((st = discrete_loss(a, b->c, b->dLdtau, grad_p, b->dy, b->wh, b->rhs, value)) || !want_grad) return st;
  if (a->ends_at_event) {   /* the end is the last group's time: its terms are that time's */
    b->dLdtau[a->nseg - 1] += b->dLdtau[a->nseg];
    b->dLdtau[a->nseg] = 0;
  }
  for (s = a->nseg - 1; s >= 0; --s) {
    const salta__adj_seg *g = &a->segs[s];
    int event = g->count > 0, affine = event && !g->cascade;
    double et = 0, carry = 0;
    memcpy(b->rhs, b->c + (size_t)(g->node0 + g->m) * n, sizeof(double) * (size_t)n);
    memset(b->rhsb, 0, sizeof(double) * (size_t)n);
    if (event) et = event_terminal(a, s, b);
    if ((st = sweep_steps(a, s, affine, b))) return st;
    if (event && (st = event_time(a, s, et, start_term, b, grad_p, &carry))) return st;
    step_params(a, s, b, grad_p);
    start_term = carry;
    /* the last segment of a run that ends at an event has no length: its
    ** ends move together, and its steps' terms by them cancel */
    if (s > 0 && !(a->ends_at_event && s == a->nseg - 1))
      for (i = 0; i < g->m; ++i) {
        dR_dtau(a, s, i, 0, a->dR);
        start_term += dot(b->lam + (size_t)(g->node0 + i) * n, a->dR, n);
      }
    /* the consistency block at the segment's first node: K^T nu = -rhs */
    {
      const double *w0 = salta__adj_node(a, g->node0);
      if ((st = solve_KT(a, a->tau[s], w0, b->rhs, b->nu))) return st;
      if (s == 0) {
        for (k = 0; k < nx; ++k) grad_x0[k] = -b->nu[k];   /* x(t0) = x0 */
        salta__dae_add_transpose(a->dae, &a->d->g.d[SALTA_WRT_P], a->tau[0], w0, 1, b->nu, nx, grad_p);
      }
    }
  }
  return SALTA_OK;
}

int salta__adj_sweep(salta__adj *a, double *value, double *grad_p, double *grad_x0, int want_grad) {
  size_t n = (size_t)a->n, nodes = (size_t)a->nnodes;
  sweep_buf b;
  int st;
  b.c = calloc(nodes * n, sizeof(double));             /* dL/dw per node */
  b.dLdtau = calloc((size_t)a->nseg + 1, sizeof(double));
  b.lam = malloc(sizeof(double) * nodes * n);          /* per step: the part without mu */
  b.lamb = malloc(sizeof(double) * nodes * n);         /* and the part times mu */
  b.nu = malloc(sizeof(double) * n);
  b.rhs = malloc(sizeof(double) * n);
  b.rhsb = malloc(sizeof(double) * n);
  b.dy = malloc(sizeof(double) * ((size_t)a->d->ny + 1));
  b.wh = malloc(sizeof(double) * n);
  if (!b.c || !b.dLdtau || !b.lam || !b.lamb || !b.nu || !b.rhs || !b.rhsb || !b.dy || !b.wh)
    st = salta__fail(a->err, SALTA_EMEM, "out of memory");
  else
    st = sweep_with(a, &b, value, grad_p, grad_x0, want_grad);
  free(b.c); free(b.dLdtau); free(b.lam); free(b.lamb); free(b.nu); free(b.rhs); free(b.rhsb); free(b.dy);
  free(b.wh);
  return st;
}
