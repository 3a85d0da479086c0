/*
** dae.h -- the DAE at a point (internal): Newton on g, kernel scatter, the
** iteration matrices, implicit derivatives through g, the guard rows and
** rates with the one grazing rule, and the composite reset of an event
** group with re-consistency. Every route (simulation, sensitivities,
** adjoint) does its local algebra here. Every call that can fail
** returns a status with a->err written (errors.h).
*/
#ifndef SALTA_DAE_H
#define SALTA_DAE_H

#include "algebraic.h"
#include "pattern.h"
#include "salta.h"

/* The first non-finite value a Jacobian kernel returned (for messages). */
typedef struct salta__dae_bad {
  const salta_sparse_def *sp;   /* NULL: none since the last clear */
  int entry;
  double t, v;
} salta__dae_bad;

typedef struct salta__dae {
  const salta_model_def *d;
  const double *p;          /* the parameters of the current run, with their derived
                               values (p_full, or borrowed when the model derives none) */
  double *p_full;           /* np + np_derived */
  size_t np_full;
  int nx, nz, n, np, ne;
  int maxnnz;               /* the largest Jacobian kernel of the model */
  double *jv;               /* one kernel's values (maxnnz) */
  salta__alg alg;           /* the solve of g = 0 and g_z's factorisation */
  int gz_fixed;             /* g_z depends on p alone: factored once per run */
  int gz_ready;             /* ... and that factorisation is in alg */
  double *reset_out;        /* one reset's x+ (nx) */
  double *z_polish;         /* Newton's iterate when an interpolated z is re-solved (nz) */
  int *writer;              /* per state: the group member that resets it, or -1 */
  int *guard_row_ptr[4];    /* guard rows of e_x, e_z, e_p, e_t: entries of row j */
  int *guard_row_ent[4];    /* are guard_row_ent[w][guard_row_ptr[w][j] ..] */
  salta__dae_bad bad;       /* the first non-finite Jacobian value since the last clear */
  int saw_bad;              /* a kernel returned a non-finite value since the matrix began */
  char *err;                /* the owner's message buffer (borrowed) */
} salta__dae;

/* Allocates the scratch for model d; err is where messages go. */
int salta__dae_init(salta__dae *a, const salta_model_def *d, char *err);
void salta__dae_free(salta__dae *a);
/* Points a at the kernels d, compiled from the source of a's (by another
** compiler): what a built from its def stays valid. */
void salta__dae_bind(salta__dae *a, const salta_model_def *d);
/* The parameters of a run (np values; borrowed until the next call when
** the model derives no values from them, else copied with those values
** into p_full; NULL after the run): forgets what was computed for the
** previous ones. a->p is what the kernels are given. */
void salta__dae_set_params(salta__dae *a, const double *p);

/* ---- Newton on g ------------------------------------------------------- */

/* Solves g(t, x, z) = 0 for z (in/out: from z, block by block, see
** algebraic.h): SALTA_OK, or SALTA_EALGEBRAIC with why filled (why may be
** NULL). Newton iterations are counted in a->alg.newton_iters. */
int salta__dae_solve_z(salta__dae *a, double t, const double *x, double *z, salta__zfail *why);

/* An interpolated w = [x; z] (an integrator's, whose z only approximates
** g's solution) with z re-solved from g by Newton from the interpolated
** value, which is kept if Newton fails (the caller's own solve or check
** then reports it). */
void salta__dae_polish_z(salta__dae *a, double t, double *w);

/* ---- kernels --------------------------------------------------------------- */

/* Evaluates the Jacobian kernel sp at (t, w) into vals (sp->nnz), noting
** the first non-finite value in a->bad. */
void salta__dae_eval_jac(salta__dae *a, const salta_sparse_def *sp, double t, const double *w, double *vals);
/* a->bad as text, e.g. "d f/d p entry ('x', 'k') is nan at t = 0", or "". */
const char *salta__dae_bad_text(const salta__dae *a, char *buf, size_t cap);

/* The DAE's residual F = [x' - f; g] at (t, w, w') into r (n): -1, the
** first row that is not finite, or -2 when a kernel failed. */
int salta__dae_residual(const salta__dae *a, double t, const double *w, const double *wp, double *r);
/* M (column-major, leading dimension ld) += scale K at (row0, col0), K the
** sparse kernel sp evaluated at (t, w = [x; z]). */
void salta__dae_add_dense(salta__dae *a, const salta_sparse_def *sp, double t, const double *w,
                          double scale, double *M, int ld, int row0, int col0);
/* y += scale K^T v[row0 ..]. */
void salta__dae_add_transpose(salta__dae *a, const salta_sparse_def *sp, double t, const double *w,
                              double scale, const double *v, int row0, double *y);
/* The iteration matrix [alpha I - beta f_x, -beta f_z; g_x, g_z] at (t, w):
** IDAS's (alpha = c_j, beta = 1) and the trapezoid's (alpha = 1, beta = h/2),
** dense (n x n) or as values on the pattern pat. SALTA_OK, or
** SALTA_ESOLVER when a kernel returned a non-finite value (noted in
** a->bad): Newton with such a matrix could take a zero step for
** convergence. */
int salta__dae_iter_dense(salta__dae *a, double t, const double *w, double alpha, double beta, double *J);
int salta__dae_iter_sparse(salta__dae *a, const salta__pattern *pat, double t, const double *w,
                           double alpha, double beta, double *vals);

/* ---- implicit derivatives through g ------------------------------------------ */

/* Factors g_z at (t, w) for the solves below: SALTA_OK, or SALTA_ESOLVER
** when it is singular or not finite. */
int salta__dae_factor_gz(salta__dae *a, double t, const double *w);
/* b := g_z^-1 b (trans: g_z^-T b), nrhs columns of nz. */
void salta__dae_gz_solve(const salta__dae *a, double *b, int nrhs, int trans);
/* b := g_z^-1 b, by its inverse where one is formed (salta__alg_gz_apply). */
void salta__dae_gz_apply(const salta__dae *a, double *b, int nrhs);
/* The flow at (t, w): x' = f and z' = -g_z^-1 (g_x x' + g_t); leaves g_z
** factored at w. SALTA_OK, or SALTA_ESOLVER when g_z is singular. */
int salta__dae_flow(salta__dae *a, double t, const double *w, double *xdot, double *zdot);
/* The transpose of z's dependence on x and p through g = 0 at (t, w), for
** an adjoint v = [v_x; v_z] (n): v_x -= g_x^T nu and grad_p (np, unless
** NULL) -= g_p^T nu with nu = g_z^-T v_z; then v_z = 0. SALTA_OK, or
** SALTA_ESOLVER when g_z is singular. */
int salta__dae_fold_z(salta__dae *a, double t, const double *w, double *v, double *grad_p);

/* ---- guards ------------------------------------------------------------------ */

/* Row j of the guard Jacobians at (t, w): ew = [e_x, e_z] (n), ep (np, or
** NULL); returns e_t. With jac, the values of e_x, e_z and e_t there are
** jac[SALTA_WRT_X], jac[SALTA_WRT_Z], jac[SALTA_WRT_T] (from
** salta__dae_guard_rates at the same point): only e_p is evaluated. */
double salta__dae_guard_row(salta__dae *a, int j, double t, const double *w, double *const *jac, double *ew,
                            double *ep);
/* The rates of the guards rows[0 .. nrows) (rows NULL: every guard) along
** the flow (xdot, zdot) at (t, w), e_t + e_x x' + e_z z', and the size of
** their terms |e_t| + |e_x||x'| + |e_z||z'|, into rate[j] and scale[j].
** With jac, the values of e_x, e_z and e_t are left in jac[SALTA_WRT_X],
** jac[SALTA_WRT_Z] and jac[SALTA_WRT_T] (each of its kernel's nnz). */
void salta__dae_guard_rates(salta__dae *a, double t, const double *w, const double *xdot,
                            const double *zdot, const int *rows, int nrows, double *rate, double *scale,
                            double *const *jac);
/* The one grazing rule: the rate is lost in its terms (or not finite). */
int salta__dae_grazing(double rate, double scale);

/* ---- event groups ---------------------------------------------------------------- */

/* The group of events ev[0..n) firing together at t: fills a->writer (the
** member resetting each state, or -1). Two members resetting one state is
** an error naming both. */
int salta__dae_group(salta__dae *a, const int *ev, int n, double t);
/* The group's composite reset: every member reads
** the left limit wm; states no member names keep their value; z+ solves g
** by Newton from z-. Writes wp = [x+; z+]. */
int salta__dae_reset(salta__dae *a, const int *ev, int n, double t, const double *wm, double *wp);
/* The group as salta__dae_group, and whether it is coupled: a member's
** reset or guard reads a state another member's reset sets (then firing
** the members in sequence, in any order, differs from firing them
** together). */
int salta__dae_group_coupled(salta__dae *a, const int *ev, int n, double t, int *coupled);
/* y += scale R^T v, R the composite reset's Jacobian by wrt (SALTA_WRT_X,
** Z, P or T) at (t, wm): a member's rows where it resets, the identity (by
** x) or zero elsewhere. y has as many entries as wrt has columns (one for
** t). */
void salta__dae_reset_tmul(salta__dae *a, const int *ev, int n, int wrt, double t, const double *wm,
                           double scale, const double *v, double *y);

#endif
