/*
** floor_idas_cauer.c -- what a C programmer gets by calling SUNDIALS IDAS
** directly on the Cauer ladder (models/cauer.lua): the least-squares loss
** and its gradient by IDAS's forward sensitivities (staggered, in the error
** test, atol / |p| for the sensitivities as salta's ida.c), the residual,
** its Jacobian and the sensitivity residuals written by hand, IDAS's own
** root finding for the event (C3_v rises through 0.5: C3_v := 0, IDAReInit
** from the right limit with the saltation jump of the sensitivities), and
** the targets read with IDAGetSens at IDASolve's output times. The floor
** of salta's BDF route (method = "bdf").
**
** The input file: floor_cauer_model.h. Stats (steps, residuals, Jacobians,
** root function evaluations) go to stderr with FLOOR_STATS set.
**
**   gcc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L floor_idas_cauer.c -lsundials_idas -lsundials_nvecserial \
**       -lsundials_sunmatrixdense -lsundials_sunlinsoldense -lm
**   ./a.out INPUT [REPEATS]
*/
#include "floor_harness.h"
#include "floor_idas.h"
#include "floor_cauer_model.h"

enum { N = NX + NZ };

typedef struct ctx {
  const problem *pb;
  double G[NZ][NZ], Gi[NZ][NZ];
  floor_ida ida;
} ctx;

/* The states' flow from x and the algebraics z = x' of the capacitors. */
static int residual(double t, N_Vector yy, N_Vector yyp, N_Vector rr, void *data) {
  const ctx *c = data;
  const double *y = N_VGetArrayPointer(yy), *yp = N_VGetArrayPointer(yyp);
  double *r = N_VGetArrayPointer(rr), f[NX], cc[NZ];
  int i;
  cauer_flow(c->pb->p, y, y + NX, f);
  for (i = 0; i < NX; ++i) r[i] = yp[i] - f[i];
  cauer_c(c->pb, t, y, cc);
  for (i = 0; i < NZ; ++i) r[NX + i] = c->G[i][0] * y[NX] + c->G[i][1] * y[NX + 1] + c->G[i][2] * y[NX + 2] + cc[i];
  return 0;
}

/* dF/dy + cj dF/dy': constant but for cj. */
static int jacobian(double t, double cj, N_Vector yy, N_Vector yyp, N_Vector rr, SUNMatrix J, void *data,
                    N_Vector t1, N_Vector t2, N_Vector t3) {
  const ctx *c = data;
  const problem *pb = c->pb;
  int i, j;
  (void)t, (void)yy, (void)yyp, (void)rr, (void)t1, (void)t2, (void)t3;
  SUNMatZero(J);
  for (i = 0; i < NX; ++i) SM_ELEMENT_D(J, i, i) = cj;
  SM_ELEMENT_D(J, L2I, C3V) = -1 / pb->p[PL2], SM_ELEMENT_D(J, L2I, C5V) = 1 / pb->p[PL2];
  SM_ELEMENT_D(J, L1I, C1V) = -1 / pb->p[PL1], SM_ELEMENT_D(J, L1I, C3V) = 1 / pb->p[PL1];
  SM_ELEMENT_D(J, C5V, NX + Z5) = -1, SM_ELEMENT_D(J, C3V, NX + Z3) = -1, SM_ELEMENT_D(J, C1V, NX + Z1) = -1;
  SM_ELEMENT_D(J, NX + 0, L2I) = 1, SM_ELEMENT_D(J, NX + 0, C5V) = -1 / pb->r2;
  SM_ELEMENT_D(J, NX + 1, L1I) = -1, SM_ELEMENT_D(J, NX + 1, C1V) = -1 / pb->r1;
  SM_ELEMENT_D(J, NX + 2, L2I) = 1, SM_ELEMENT_D(J, NX + 2, L1I) = -1;
  for (i = 0; i < NZ; ++i)
    for (j = 0; j < NZ; ++j) SM_ELEMENT_D(J, NX + i, NX + j) = c->G[i][j];
  return 0;
}

/* F_y s + F_y' s' + F_p for every parameter direction. */
static int sens_residual(int ns, double t, N_Vector yy, N_Vector yyp, N_Vector rr, N_Vector *yS, N_Vector *ypS,
                         N_Vector *rS, void *data, N_Vector t1, N_Vector t2, N_Vector t3) {
  const ctx *c = data;
  const problem *pb = c->pb;
  const double *y = N_VGetArrayPointer(yy);
  int k, i;
  (void)t, (void)yyp, (void)rr, (void)t1, (void)t2, (void)t3;
  for (k = 0; k < ns; ++k) {
    const double *s = N_VGetArrayPointer(yS[k]), *sp = N_VGetArrayPointer(ypS[k]);
    double *r = N_VGetArrayPointer(rS[k]), fs[NX], g[NZ];
    cauer_flow(pb->p, s, s + NX, fs);   /* f is linear in (x, z) at fixed p */
    for (i = 0; i < NX; ++i) r[i] = sp[i] - fs[i];
    if (k == PL2) r[L2I] += (y[C3V] - y[C5V]) / (pb->p[PL2] * pb->p[PL2]);
    if (k == PL1) r[L1I] += (y[C1V] - y[C3V]) / (pb->p[PL1] * pb->p[PL1]);
    g[0] = s[L2I] - s[C5V] / pb->r2;
    g[1] = -s[L1I] - s[C1V] / pb->r1;
    g[2] = s[L2I] - s[L1I];
    cauer_add_gp(k, y + NX, g);
    for (i = 0; i < NZ; ++i) r[NX + i] = c->G[i][0] * s[NX] + c->G[i][1] * s[NX + 1] + c->G[i][2] * s[NX + 2] + g[i];
  }
  return 0;
}

static int guard(double t, N_Vector yy, N_Vector yyp, double *gout, void *data) {
  ctx *c = data;
  (void)t, (void)yyp;
  c->ida.roots++;
  gout[0] = N_VGetArrayPointer(yy)[C3V] - 0.5;
  return 0;
}

/* y consistent from x (z solved) with y' and the sensitivities' z rows and
** derivatives at (t, y, S). */
static void consistent(ctx *c, double t) {
  const problem *pb = c->pb;
  double *y = N_VGetArrayPointer(c->ida.y), *yp = N_VGetArrayPointer(c->ida.yp);
  int k, i;
  cauer_solve_z(pb, c->Gi, t, y, y + NX);
  cauer_flow(pb->p, y, y + NX, yp);
  for (i = 0; i < NZ; ++i) yp[NX + i] = 0;   /* algebraic: IDAS does not read it */
  for (k = 0; k < NP; ++k) {
    double *s = N_VGetArrayPointer(c->ida.yS[k]), *sp = N_VGetArrayPointer(c->ida.ypS[k]), g[NZ];
    g[0] = s[L2I] - s[C5V] / pb->r2, g[1] = -s[L1I] - s[C1V] / pb->r1, g[2] = s[L2I] - s[L1I];
    cauer_add_gp(k, y + NX, g);
    for (i = 0; i < NZ; ++i) s[NX + i] = -(c->Gi[i][0] * g[0] + c->Gi[i][1] * g[1] + c->Gi[i][2] * g[2]);
    cauer_flow(pb->p, s, s + NX, sp);
    if (k == PL2) sp[L2I] -= (y[C3V] - y[C5V]) / (pb->p[PL2] * pb->p[PL2]);
    if (k == PL1) sp[L1I] -= (y[C1V] - y[C3V]) / (pb->p[PL1] * pb->p[PL1]);
    for (i = 0; i < NZ; ++i) sp[NX + i] = 0;
  }
}

/* The event at tau (y, yS its left limit): C3_v := 0, the jump of the
** sensitivities (tau_p = -s_C3 / C3_v'-; s+ = s- + (x'- - x'+) tau_p, and
** -C3_v'+ tau_p on the reset row), then the right limit made consistent. */
static int fire(ctx *c, double tau) {
  const problem *pb = c->pb;
  double *y = N_VGetArrayPointer(c->ida.y), xm[NX], xp[NX], zp[NZ], rate;
  int k, i;
  cauer_flow(pb->p, y, y + NX, xm);
  rate = xm[C3V];
  if (!(rate > 0)) return -1;
  y[C3V] = 0;
  cauer_solve_z(pb, c->Gi, tau, y, zp);
  cauer_flow(pb->p, y, zp, xp);
  for (k = 0; k < NP; ++k) {
    double *s = N_VGetArrayPointer(c->ida.yS[k]), tau_p = -s[C3V] / rate;
    for (i = 0; i < NX; ++i) s[i] = i == C3V ? -xp[C3V] * tau_p : s[i] + (xm[i] - xp[i]) * tau_p;
  }
  consistent(c, tau);
  return floor_ida_restart(&c->ida, tau);
}

static const int DIRECTIONS[1] = {1};
static const floor_model MODEL = {N, NX, NP, 1, DIRECTIONS, residual, jacobian, sens_residual, guard};

static int create(ctx *c, const problem *pb) {
  memset(c, 0, sizeof *c);
  c->pb = pb;
  cauer_gz(pb->p, c->G);
  if (cauer_inverse(pb->p, c->Gi)) return -1;
  return floor_ida_new(&c->ida, &MODEL, pb->p, pb->t0, pb->tf, pb->rtol, pb->atol, c);
}

/* Adds target k's residuals (x and S at it) to the loss and gradient. */
static void output(const problem *pb, int k, const double *y, N_Vector *S, double scale, double *loss, double *grad) {
  const double *d = pb->data + (size_t)k * NX;
  int j, q;
  for (j = 0; j < NX; ++j) {
    double r = isnan(d[j]) ? 0 : (y[j] - d[j]) * scale;
    *loss += r * r;
    for (q = 0; q < NP; ++q) grad[q] += 2 * r * scale * N_VGetArrayPointer(S[q])[j];
  }
}

/* One loss and gradient: the start, then IDASolve to each target, firing
** the event where IDAS finds its root. */
static int evaluate(ctx *c, double *loss, double *grad) {
  const problem *pb = c->pb;
  double t = pb->t0, scale = 1.0 / sqrt((double)pb->nres), *y = N_VGetArrayPointer(c->ida.y);
  int k = 0, q;
  *loss = 0;
  memset(grad, 0, sizeof(double) * NP);
  memcpy(y, pb->x0, sizeof(double) * NX);
  for (q = 0; q < NP; ++q) N_VConst(0.0, c->ida.yS[q]);
  consistent(c, t);
  if (floor_ida_restart(&c->ida, t)) return -1;
  while (k < pb->nt && pb->times[k] <= pb->t0) output(pb, k++, y, c->ida.yS, scale, loss, grad);
  while (k < pb->nt) {
    int rc = IDASolve(c->ida.mem, pb->times[k], &t, c->ida.y, c->ida.yp, IDA_NORMAL);
    if (rc < 0 || IDAGetSens(c->ida.mem, &t, c->ida.yS) < 0) return -1;
    if (rc == IDA_ROOT_RETURN) {
      if (fire(c, t)) return -1;
      while (k < pb->nt && pb->times[k] <= t) output(pb, k++, y, c->ida.yS, scale, loss, grad);
      continue;
    }
    output(pb, k++, y, c->ida.yS, scale, loss, grad);
  }
  floor_ida_count(&c->ida);
  return 0;
}

static int run_eval(void *data, double *loss, double *grad) { return evaluate(data, loss, grad); }

int main(int argc, char **argv) {
  problem pb;
  ctx c;
  int reps = floor_reps(argc, argv, 50), st;
  if (reps < 0) return 2;
  if (read_problem(argv[1], &pb)) {
    fprintf(stderr, "%s: cannot read the input file %s\n", argv[0], argv[1]);
    return 1;
  }
  if (create(&c, &pb)) {
    fprintf(stderr, "%s: cannot set up IDAS\n", argv[0]);
    floor_ida_free(&c.ida);
    return 1;
  }
  st = floor_time(argv[0], run_eval, &c, NP, reps);
  if (!st && getenv("FLOOR_STATS")) floor_ida_report(&c.ida, reps + 1);
  floor_ida_free(&c.ida);
  free(pb.times);
  free(pb.data);
  return st;
}
