/*
** sens.c -- forward sensitivities: the IDAS sensitivity residual from the
** generated Jacobians, consistent initial sensitivities, and the jump
** (saltation) conditions at events:
**   tau_p = -(e_x s_x + e_z s_z + e_p) / (e_t + e_x x'- + e_z z'-)
**   s_x+  = r_x s_x + r_z s_z + r_p + (r_t + r_x x'- + r_z z'- - x'+) tau_p
**   s_z+  = -g_z^-1 (g_x s_x+ + g_p)
** Events of one instant are taken in declaration order, each on the state
** its predecessors left (exact when their resets act on different states).
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <nvector/nvector_serial.h>

#include "linsol.h"
#include "sim_impl.h"

/* Dense scratch for one run: offsets into s->sens_scratch. */
typedef struct scratch {
  double *jv;                       /* kernel values, max nnz */
  double *Fx, *Fz, *Fp, *Gx, *Gz, *Gp, *Gt, *Hx, *Hz, *Hp, *Ht;
  double *Rx, *Rz, *Rp, *Rt, *ex, *ez, *ep;
  double *fm, *fp, *zdm, *zdp, *xa, *xb, *v, *tau_p, *tau0, *S2, *LU, *tmp, *Zr;
  int *ipiv;
} scratch;

static scratch sc_of(salta_sim *s);

static size_t max_nnz(const salta_model_def *d) {
  const salta_function_def *fns[] = {&d->f, &d->g, &d->h, &d->e};
  size_t m = 1;
  int k, w, j;
  for (k = 0; k < 4; ++k)
    for (w = 0; w < 4; ++w) if ((size_t)fns[k]->d[w].nnz > m) m = (size_t)fns[k]->d[w].nnz;
  for (j = 0; j < d->ne; ++j)
    for (w = 0; w < 4; ++w) if ((size_t)d->r[j].d[w].nnz > m) m = (size_t)d->r[j].d[w].nnz;
  return m;
}

static size_t scratch_size(const salta_sim *s) {
  const salta_model_def *d = s->d;
  size_t nx = (size_t)d->nx, nz = (size_t)d->nz, np = (size_t)d->np, ny = (size_t)d->ny;
  size_t n = nx + nz, ns = (size_t)s->ns;
  return 4 * s->sens_maxnnz + nx * (nx + nz + np) + nz * (nx + nz + np + 1) + ny * (nx + nz + np + 1) +
         nx * (nx + nz + np + 1) + (nx + nz + np) + 4 * nx + 2 * nz + 3 * n + 2 * ns + n * ns +
         nz * nz + nz * ns + n + 16;
}

static scratch sc_of(salta_sim *s) {
  const salta_model_def *d = s->d;
  int nx = d->nx, nz = d->nz, np = d->np, ny = d->ny, n = nx + nz;
  scratch c;
  double *p = s->sens_scratch;
#define TAKE(ptr, count) (ptr = p, p += (count))
  TAKE(c.jv, 4 * s->sens_maxnnz);
  TAKE(c.Fx, nx * nx); TAKE(c.Fz, nx * nz); TAKE(c.Fp, nx * np);
  TAKE(c.Gx, nz * nx); TAKE(c.Gz, nz * nz); TAKE(c.Gp, nz * np); TAKE(c.Gt, nz);
  TAKE(c.Hx, ny * nx); TAKE(c.Hz, ny * nz); TAKE(c.Hp, ny * np); TAKE(c.Ht, ny);
  TAKE(c.Rx, nx * nx); TAKE(c.Rz, nx * nz); TAKE(c.Rp, nx * np); TAKE(c.Rt, nx);
  TAKE(c.ex, nx); TAKE(c.ez, nz); TAKE(c.ep, np);
  TAKE(c.fm, nx); TAKE(c.fp, nx); TAKE(c.v, nx); TAKE(c.zdm, nz); TAKE(c.zdp, nz);
  TAKE(c.xa, n); TAKE(c.xb, n); TAKE(c.tmp, n);
  TAKE(c.tau_p, s->ns); TAKE(c.tau0, s->ns); TAKE(c.S2, n * s->ns); TAKE(c.LU, nz * nz);
  TAKE(c.Zr, nz * s->ns);
#undef TAKE
  c.ipiv = s->ipiv;
  return c;
}

int salta__sens_alloc(salta_sim *s, int nt) {
  const salta_model_def *d = s->d;
  size_t n = (size_t)s->n, ns = (size_t)s->ns;
  s->sens_maxnnz = max_nnz(d);
  free(s->out_s);
  free(s->out_dy);
  s->out_s = malloc(sizeof(double) * ((size_t)nt + 1) * n * ns);
  s->out_dy = malloc(sizeof(double) * ((size_t)nt + 1) * ((size_t)d->ny + 1) * ns);
  s->sens_scratch = malloc(sizeof(double) * scratch_size(s));
  s->S = malloc(sizeof(double) * (2 * n * ns + 1));
  return (s->out_s && s->out_dy && s->sens_scratch && s->S) ? 0 : -1;
}

void salta__sens_free_run(salta_sim *s) {
  free(s->sens_scratch);
  free(s->S);
  s->sens_scratch = s->S = NULL;
}

/* r += scale * A s for a sparse kernel A with rows offset row0 and the
** vector s offset col0. */
static void spmv(const salta_sparse_def *sp, const double *vals, double scale, const double *s,
                 int col0, double *r, int row0) {
  int k;
  for (k = 0; k < sp->nnz; ++k) r[row0 + sp->row[k]] += scale * vals[k] * s[col0 + sp->col[k]];
}

/* r[row0 + i] += scale * A[i, j]: column j of a sparse parameter Jacobian
** (the F_p term of direction j). */
static void add_column(const salta_sparse_def *sp, const double *vals, int j, double scale,
                       double *r, int row0) {
  int i;
  for (i = 0; i < sp->nnz; ++i)
    if (sp->col[i] == j) r[row0 + sp->row[i]] += scale * vals[i];
}

/* Evaluates the first nb Jacobian kernels of d (x, z, p, t) at (t, w) into
** consecutive runs of p; vals[b] points at block b. Returns the end of p. */
static double *eval_blocks(salta_sim *s, const salta_sparse_def *d, int nb, double t,
                           const double *w, double *p, double **vals) {
  int b;
  for (b = 0; b < nb; ++b) {
    vals[b] = p;
    p += d[b].nnz;
    if (d[b].nnz) d[b].eval(t, w, w + s->nx, s->p, vals[b]);
  }
  return p;
}

/* r[row0..] += scale (F_x s_x + F_z s_z + F_p[:, j]): F's derivative along
** the sensitivity column col (x then z) of direction j (j < 0: no parameter). */
static void add_directional(salta_sim *s, const salta_sparse_def *d, double *const *vals,
                            const double *col, int j, double scale, double *r, int row0) {
  spmv(&d[SALTA_WRT_X], vals[SALTA_WRT_X], scale, col, 0, r, row0);
  spmv(&d[SALTA_WRT_Z], vals[SALTA_WRT_Z], scale, col, s->nx, r, row0);
  if (j >= 0) add_column(&d[SALTA_WRT_P], vals[SALTA_WRT_P], j, scale, r, row0);
}

/* ---- dense blocks --------------------------------------------------------- */

/* Scatters the kernel sp at (t, w) into the dense column-major rows x cols. */
static void dense(salta_sim *s, double *jv, const salta_sparse_def *sp, double t, const double *w,
                  double *out, int rows, int cols) {
  int k;
  memset(out, 0, sizeof(double) * (size_t)rows * cols);
  if (sp->nnz == 0) return;
  sp->eval(t, w, w + s->nx, s->p, jv);
  for (k = 0; k < sp->nnz; ++k) out[(size_t)sp->col[k] * rows + sp->row[k]] += jv[k];
}

/* y += A[:, cols] x for the dense column-major rows x cols matrix A. */
static void gemv(const double *A, int rows, int cols, const double *x, double *y) {
  int i, j;
  for (j = 0; j < cols; ++j) {
    double xj = x[j];
    if (xj == 0) continue;
    for (i = 0; i < rows; ++i) y[i] += A[(size_t)j * rows + i] * xj;
  }
}

/* The parameter column of direction k, or -1. */
static int pcol(const salta_sim *s, int k) { return s->dirs[k] >= 0 ? s->dirs[k] : -1; }

/* g blocks at (t, w) and an LU of g_z in c->LU. */
static int g_blocks(salta_sim *s, scratch *c, double t, const double *w) {
  int nx = s->nx, nz = s->nz, np = s->d->np;
  if (nz == 0) return 0;
  dense(s, c->jv, &s->d->g.d[SALTA_WRT_X], t, w, c->Gx, nz, nx);
  dense(s, c->jv, &s->d->g.d[SALTA_WRT_Z], t, w, c->Gz, nz, nz);
  dense(s, c->jv, &s->d->g.d[SALTA_WRT_P], t, w, c->Gp, nz, np);
  dense(s, c->jv, &s->d->g.d[SALTA_WRT_T], t, w, c->Gt, nz, 1);
  memcpy(c->LU, c->Gz, sizeof(double) * (size_t)nz * nz);
  return salta__lu_factor(nz, c->LU, c->ipiv);
}

/* S's z rows from its x rows: s_z = -g_z^-1 (g_x s_x + g_p[:, dir]) (needs g_blocks). */
static void z_rows(salta_sim *s, scratch *c, double *S) {
  int k, i, n = s->n, nx = s->nx, nz = s->nz;
  double *rhs = c->Zr;   /* nz x ns, one solve for all directions */
  if (nz == 0) return;
  for (k = 0; k < s->ns; ++k) {
    double *col = S + (size_t)k * n, *r = rhs + (size_t)k * nz;
    memset(r, 0, sizeof(double) * nz);
    gemv(c->Gx, nz, nx, col, r);
    if (pcol(s, k) >= 0)
      for (i = 0; i < nz; ++i) r[i] += c->Gp[(size_t)pcol(s, k) * nz + i];
  }
  salta__lu_solve(nz, c->LU, c->ipiv, rhs, s->ns, 0);
  for (k = 0; k < s->ns; ++k)
    for (i = 0; i < nz; ++i) S[(size_t)k * n + nx + i] = -rhs[(size_t)k * nz + i];
}

/* z' = -g_z^-1 (g_x x' + g_t) (needs g_blocks). */
static void z_dot(salta_sim *s, scratch *c, const double *xdot, double *zdot) {
  int i, nz = s->nz;
  if (nz == 0) return;
  memcpy(zdot, c->Gt, sizeof(double) * nz);
  gemv(c->Gx, nz, s->nx, xdot, zdot);
  salta__lu_solve(nz, c->LU, c->ipiv, zdot, 1, 0);
  for (i = 0; i < nz; ++i) zdot[i] = -zdot[i];
}

/* S' x rows = f_x s_x + f_z s_z + f_p[:, dir]; z rows 0 (sparse products:
** the explicit integrator calls this at every stage). */
static void s_prime(salta_sim *s, scratch *c, double t, const double *w, const double *S, double *Sp) {
  const salta_sparse_def *f = s->d->f.d;
  int k, n = s->n;
  double *vals[3];
  eval_blocks(s, f, 3, t, w, c->jv, vals);   /* f_x, f_z, f_p */
  for (k = 0; k < s->ns; ++k) {
    double *out = Sp + (size_t)k * n;
    memset(out, 0, sizeof(double) * n);
    add_directional(s, f, vals, S + (size_t)k * n, pcol(s, k), 1.0, out, 0);
  }
}

/* ---- the sensitivity residual ------------------------------------------------- */

int salta__sens_residual(int ns, double t, N_Vector yy, N_Vector yp, N_Vector rr, N_Vector *yS,
                         N_Vector *ypS, N_Vector *rrS, void *ud, N_Vector t1, N_Vector t2, N_Vector t3) {
  salta_sim *s = ud;
  const salta_model_def *d = s->d;
  const double *w = N_VGetArrayPointer(yy);
  double *fv[3], *gv[3];
  int k, i, nx = s->nx;
  (void)yp; (void)rr; (void)t1; (void)t2; (void)t3;
  /* the dense scratch is free between events */
  eval_blocks(s, d->g.d, 3, t, w, eval_blocks(s, d->f.d, 3, t, w, s->sens_scratch, fv), gv);
  for (k = 0; k < ns; ++k) {   /* rows: s_x' - df (x rows), dg (z rows) */
    const double *sk = N_VGetArrayPointer(yS[k]), *spk = N_VGetArrayPointer(ypS[k]);
    double *r = N_VGetArrayPointer(rrS[k]);
    int j = pcol(s, k);
    for (i = 0; i < nx; ++i) r[i] = spk[i];
    for (i = nx; i < s->n; ++i) r[i] = 0;
    add_directional(s, d->f.d, fv, sk, j, -1.0, r, 0);
    add_directional(s, d->g.d, gv, sk, j, 1.0, r, nx);
  }
  return 0;
}

int salta__sens_fill_z(salta_sim *s, double t, const double *w, double *S) {
  scratch c = sc_of(s);
  if (s->nz == 0) return 0;
  if (g_blocks(s, &c, t, w) != 0) return -1;
  z_rows(s, &c, S);
  return 0;
}

void salta__sens_prime(salta_sim *s, double t, const double *w, const double *S, double *Sp) {
  scratch c = sc_of(s);
  s_prime(s, &c, t, w, S, Sp);
}

/* ---- initial sensitivities --------------------------------------------------- */

int salta__sens_initial(salta_sim *s, double t0, const double *w, double *S, double *Sp) {
  scratch c = sc_of(s);
  int k, n = s->n;
  memset(S, 0, sizeof(double) * (size_t)n * s->ns);
  for (k = 0; k < s->ns; ++k)
    if (s->dirs[k] < 0) S[(size_t)k * n + (-s->dirs[k] - 1)] = 1.0;
  if (g_blocks(s, &c, t0, w) != 0)
    return salta__fail(s->err, SALTA_ESOLVER, "model '%s': g_z is singular at t = %g (initial sensitivities)",
                       s->d->name, t0);
  z_rows(s, &c, S);
  s_prime(s, &c, t0, w, S, Sp);
  return SALTA_OK;
}

/* ---- outputs ----------------------------------------------------------------- */

/* dy = h_x s_x + h_z s_z + h_p[:, dir] (+ (h_x x' + h_z z' + h_t) tau_p when
** tau_p != NULL), with the sparse h Jacobians (this runs at every output). */
static void output_sens(salta_sim *s, scratch *c, double t, const double *w, const double *S,
                        const double *xdot, const double *zdot, const double *tau_p, double *dy) {
  const salta_function_def *h = &s->d->h;
  int k, i, n = s->n, nx = s->nx, ny = s->d->ny;
  double *vals[4];
  eval_blocks(s, h->d, 4, t, w, c->jv, vals);   /* h_x, h_z, h_p, h_t */
  for (k = 0; k < s->ns; ++k) {
    double *out = dy + (size_t)k * ny;
    memset(out, 0, sizeof(double) * ny);
    add_directional(s, h->d, vals, S + (size_t)k * n, pcol(s, k), 1.0, out, 0);
    if (tau_p) {   /* along the event: the boundary moves with tau */
      for (i = 0; i < nx; ++i) c->tmp[i] = xdot[i] * tau_p[k];
      for (i = 0; i < s->nz; ++i) c->tmp[nx + i] = zdot[i] * tau_p[k];
      add_directional(s, h->d, vals, c->tmp, -1, 1.0, out, 0);
      for (i = 0; i < h->d[SALTA_WRT_T].nnz; ++i) out[h->d[SALTA_WRT_T].row[i]] += vals[3][i] * tau_p[k];
    }
  }
}

/* The algebraic rows of the interpolated S are only as accurate as the
** corrector's convergence test (IDAS leaves algebraic components out of the
** error test): take them from the error-controlled x rows by the implicit
** function theorem instead. */
void salta__sens_output(salta_sim *s, int k, double t, const double *w, const double *S) {
  scratch c = sc_of(s);
  size_t n = (size_t)s->n, ns = (size_t)s->ns;
  double *Sk = s->out_s + (size_t)k * n * ns;
  memcpy(Sk, S, sizeof(double) * n * ns);
  if (s->nz > 0 && !s->exact_z && g_blocks(s, &c, t, w) == 0) z_rows(s, &c, Sk);
  output_sens(s, &c, t, w, Sk, NULL, NULL, NULL, s->out_dy + (size_t)k * s->d->ny * ns);
}

/* ---- the jump ----------------------------------------------------------------- */

/* Row j of the guard Jacobians into c->ex, ez, ep; returns e_t. */
static double guard_row(salta_sim *s, scratch *c, int j, double t, const double *w) {
  const salta_function_def *e = &s->d->e;
  double *dst[3] = {c->ex, c->ez, c->ep}, et = 0;
  int lens[3] = {s->nx, s->nz, s->d->np}, b, k;
  for (b = 0; b < 3; ++b) {
    memset(dst[b], 0, sizeof(double) * lens[b]);
    if (e->d[b].nnz == 0) continue;
    e->d[b].eval(t, w, w + s->nx, s->p, c->jv);
    for (k = 0; k < e->d[b].nnz; ++k) if (e->d[b].row[k] == j) dst[b][e->d[b].col[k]] = c->jv[k];
  }
  if (e->d[SALTA_WRT_T].nnz) {
    e->d[SALTA_WRT_T].eval(t, w, w + s->nx, s->p, c->jv);
    for (k = 0; k < e->d[SALTA_WRT_T].nnz; ++k) if (e->d[SALTA_WRT_T].row[k] == j) et = c->jv[k];
  }
  return et;
}

static double dot(const double *a, const double *b, int n) {
  double r = 0;
  int i;
  for (i = 0; i < n; ++i) r += a[i] * b[i];
  return r;
}

/* One event j at tau: S (left, at c->xa) -> c->S2 (right, at c->xb). */
static int jump_one(salta_sim *s, scratch *c, int j, double tau, double *S) {
  const salta_model_def *d = s->d;
  const salta_function_def *r = &d->r[j];
  int nx = s->nx, nz = s->nz, np = d->np, n = s->n, k, i, worst;
  double et, edot, scale, res;
  d->f.eval(tau, c->xa, c->xa + nx, s->p, c->fm);
  if (g_blocks(s, c, tau, c->xa) != 0)
    return salta__fail(s->err, SALTA_ESOLVER, "model '%s': g_z is singular at event '%s', t = %.17g",
                       d->name, d->e_names[j], tau);
  z_dot(s, c, c->fm, c->zdm);
  et = guard_row(s, c, j, tau, c->xa);
  edot = et + dot(c->ex, c->fm, nx) + dot(c->ez, c->zdm, nz);
  scale = fabs(et) + sqrt(dot(c->ex, c->ex, nx) * dot(c->fm, c->fm, nx)) +
          sqrt(dot(c->ez, c->ez, nz) * dot(c->zdm, c->zdm, nz));
  /* grazing: the rate is lost to cancellation or tangency; below 1e-6 of its
  ** terms, tau_p amplifies the integration error a millionfold */
  if (!(fabs(edot) > 1e-6 * scale) || !isfinite(edot))
    return salta__fail(s->err, SALTA_ESOLVER,
                       "model '%s': grazing event '%s' at t = %.17g: the guard's rate along the trajectory is %g, "
                       "so the event time and the gradient are undefined", d->name, d->e_names[j], tau, edot);
  for (k = 0; k < s->ns; ++k) {
    const double *col = S + (size_t)k * n;
    double de = dot(c->ex, col, nx) + dot(c->ez, col + nx, nz) + (pcol(s, k) >= 0 ? c->ep[pcol(s, k)] : 0);
    c->tau_p[k] = -de / edot;
  }
  /* the state after this event's reset, algebraics re-solved */
  if (r->eval(tau, c->xa, c->xa + nx, s->p, c->xb))
    return salta__fail(s->err, SALTA_EKERNEL, "model '%s': the implicit reset of event '%s' did not converge at t = %.17g",
                       d->name, d->e_names[j], tau);
  memcpy(c->xb + nx, c->xa + nx, sizeof(double) * nz);
  if (nz && salta__solve_z(s, tau, c->xb, c->xb + nx, &worst, &res) != 0)
    return salta__fail(s->err, SALTA_ESOLVER, "model '%s': Newton failed after the reset of event '%s' at t = %.17g",
                       d->name, d->e_names[j], tau);
  d->f.eval(tau, c->xb, c->xb + nx, s->p, c->fp);
  dense(s, c->jv, &r->d[SALTA_WRT_X], tau, c->xa, c->Rx, nx, nx);
  dense(s, c->jv, &r->d[SALTA_WRT_Z], tau, c->xa, c->Rz, nx, nz);
  dense(s, c->jv, &r->d[SALTA_WRT_P], tau, c->xa, c->Rp, nx, np);
  dense(s, c->jv, &r->d[SALTA_WRT_T], tau, c->xa, c->Rt, nx, 1);
  /* v = r_t + r_x x'- + r_z z'- - x'+ */
  memcpy(c->v, c->Rt, sizeof(double) * nx);
  gemv(c->Rx, nx, nx, c->fm, c->v);
  gemv(c->Rz, nx, nz, c->zdm, c->v);
  for (i = 0; i < nx; ++i) c->v[i] -= c->fp[i];
  for (k = 0; k < s->ns; ++k) {
    const double *col = S + (size_t)k * n;
    double *out = c->S2 + (size_t)k * n;
    memset(out, 0, sizeof(double) * nx);
    gemv(c->Rx, nx, nx, col, out);
    gemv(c->Rz, nx, nz, col + nx, out);
    for (i = 0; i < nx; ++i)
      out[i] += (pcol(s, k) >= 0 ? c->Rp[(size_t)pcol(s, k) * nx + i] : 0) + c->v[i] * c->tau_p[k];
  }
  if (g_blocks(s, c, tau, c->xb) != 0)
    return salta__fail(s->err, SALTA_ESOLVER, "model '%s': g_z is singular after event '%s', t = %.17g",
                       d->name, d->e_names[j], tau);
  z_rows(s, c, c->S2);
  memcpy(S, c->S2, sizeof(double) * (size_t)n * s->ns);
  return SALTA_OK;
}

/* Layout of one event's sensitivity record in s->ev_sens. */
static size_t record_size(const salta_sim *s) {
  size_t n = (size_t)s->n, ns = (size_t)s->ns, ny = (size_t)s->d->ny;
  return ns + 2 * n * ns + 2 * (ny + ny * ns);
}

int salta__sens_jump(salta_sim *s, double tau, const double *w, int nfire, double *S, double *Sp) {
  scratch c = sc_of(s);
  const salta_model_def *d = s->d;
  size_t n = (size_t)s->n, ns = (size_t)s->ns, ny = (size_t)d->ny, rs = record_size(s);
  const double *wplus;
  double *rec;
  int e, st, first = s->nev - nfire;
  /* the records, filled in place: tau_p | S- | S+ | y- | dy- | y+ | dy+ */
  for (e = 0; e < nfire; ++e) {
    double zero = 0;
    size_t q;
    for (q = 0; q < rs; ++q)
      if (salta__dbuf_push(&s->ev_sens, &zero, 1)) return salta__fail(s->err, SALTA_EMEM, "out of memory");
  }
  rec = s->ev_sens.v + (size_t)first * rs;
  memcpy(rec + ns, S, sizeof(double) * n * ns);
  memcpy(c.xa, w, sizeof(double) * n);
  for (e = 0; e < nfire; ++e) {
    if ((st = jump_one(s, &c, s->fire[e], tau, S))) return st;
    memcpy(rec + (size_t)e * rs, c.tau_p, sizeof(double) * ns);
    if (e == 0) {
      /* the boundary's left side, moving with the first event's time */
      double *ym = rec + ns + 2 * n * ns;
      memcpy(c.tau0, c.tau_p, sizeof(double) * ns);
      d->h.eval(tau, w, w + s->nx, s->p, ym);
      output_sens(s, &c, tau, w, rec + ns, c.fm, c.zdm, c.tau0, ym + ny);
    }
    memcpy(c.xa, c.xb, sizeof(double) * n);
  }
  /* the right side, at the merged post-event state the integration uses */
  wplus = s->ev_w.v + ((size_t)(s->nev - 1) * 2 + 1) * n;
  {
    double *yp_ = rec + ns + 2 * n * ns + ny + ny * ns;
    d->f.eval(tau, wplus, wplus + s->nx, s->p, c.fp);
    if (g_blocks(s, &c, tau, wplus) != 0)
      return salta__fail(s->err, SALTA_ESOLVER, "model '%s': g_z is singular after the events at t = %.17g",
                         d->name, tau);
    z_dot(s, &c, c.fp, c.zdp);
    d->h.eval(tau, wplus, wplus + s->nx, s->p, yp_);
    output_sens(s, &c, tau, wplus, S, c.fp, c.zdp, c.tau0, yp_ + ny);
  }
  memcpy(rec + ns + n * ns, S, sizeof(double) * n * ns);
  for (e = 1; e < nfire; ++e)   /* every record of the group carries the boundary */
    memcpy(rec + (size_t)e * rs + ns, rec + ns, sizeof(double) * (rs - ns));
  s_prime(s, &c, tau, wplus, S, Sp);
  return SALTA_OK;
}

/* ---- queries -------------------------------------------------------------------- */

int salta_sim_set_sens(salta_sim *s, const int *dirs, int ns) {
  int k;
  if (!s || ns < 0 || (ns > 0 && !dirs)) return SALTA_EINPUT;
  for (k = 0; k < ns; ++k)
    if (dirs[k] >= s->d->np || dirs[k] < -s->nx)
      return salta__fail(s->err, SALTA_EINPUT, "model '%s': sensitivity direction %d is neither a parameter nor a state",
                         s->d->name, dirs[k]);
  free(s->dirs);
  s->dirs = NULL;
  s->ns = 0;
  /* the stored results were computed with the old directions */
  s->nout = s->nev = 0;
  s->ev_w.n = s->steps.n = s->ev_sens.n = 0;
  if (ns == 0) return SALTA_OK;
  s->dirs = malloc(sizeof(int) * (size_t)ns);
  if (!s->dirs) return salta__fail(s->err, SALTA_EMEM, "out of memory");
  memcpy(s->dirs, dirs, sizeof(int) * (size_t)ns);
  s->ns = ns;
  return SALTA_OK;
}

int salta_sim_nsens(const salta_sim *s) { return s ? s->ns : 0; }

int salta_sim_out_sens(const salta_sim *s, int k, const double **S, const double **dy) {
  if (!s || s->ns == 0 || k < 0 || k >= s->nout) return SALTA_EINPUT;
  if (S) *S = s->out_s + (size_t)k * s->n * s->ns;
  if (dy) *dy = s->out_dy + (size_t)k * s->d->ny * s->ns;
  return SALTA_OK;
}

int salta_sim_event_sens(const salta_sim *s, int k, salta_event_sens *rec) {
  size_t n, ns, ny;
  const double *r;
  if (!s || !rec || s->ns == 0 || k < 0 || k >= s->nev ||
      (size_t)(k + 1) * record_size(s) > s->ev_sens.n)
    return SALTA_EINPUT;
  n = (size_t)s->n; ns = (size_t)s->ns; ny = (size_t)s->d->ny;
  r = s->ev_sens.v + (size_t)k * record_size(s);
  rec->tau_p = r;
  rec->s_minus = r + ns;
  rec->s_plus = r + ns + n * ns;
  rec->y_minus = r + ns + 2 * n * ns;
  rec->dy_minus = rec->y_minus + ny;
  rec->y_plus = rec->dy_minus + ny * ns;
  rec->dy_plus = rec->y_plus + ny;
  return SALTA_OK;
}
