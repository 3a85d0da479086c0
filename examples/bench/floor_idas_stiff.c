/*
** floor_idas_stiff.c -- what a C programmer gets by calling SUNDIALS IDAS
** directly on the stiff relay (models/stiff_relay.lua): the least-squares
** loss of v and i and its gradient by IDAS's forward sensitivities
** (staggered, in the error test, atol / |p| for the sensitivities as
** salta's ida.c), the residual, its Jacobian and the sensitivity residuals
** written by hand, IDAS's own root finding for the relay's two events
** (v rises through v_hi: on := 0; v falls through v_lo: on := 1; the state
** is continuous, the filter's rate jumps, so only s_w jumps by the
** saltation term and s_i follows by consistency), and the targets read
** with IDAGetSens at IDASolve's output times. The floor of salta's default
** route on this model (auto: ERK detects the stiffness, BDF integrates).
**
** Input file: numbers separated by whitespace (NaN marks a missing datum):
**   Vs R C Rl v_lo v_hi        free parameters, in gradient order
**   tau_s                      fixed parameter
**   w v on                     start state (on: 1 or 0)
**   t0 tf rtol atol
**   nt
**   nt rows: t v i             target time and data
** (examples/bench/floor_input.lua writes it from salta.) Stats (steps,
** residuals, Jacobians, root function evaluations) go to stderr with
** FLOOR_STATS set.
**
**   gcc -std=c11 -O2 -D_POSIX_C_SOURCE=200809L floor_idas_stiff.c -lsundials_idas -lsundials_nvecserial \
**       -lsundials_sunmatrixdense -lsundials_sunlinsoldense -lm
**   ./a.out INPUT [REPEATS]
*/
#include "floor_harness.h"
#include "floor_idas.h"

enum { NX = 2, N = 3, NP = 6, NO = 2 };
enum { W, V, I };                                /* y: states w, v; algebraic i */
enum { PVS, PR, PC, PRL, PLO, PHI };             /* free parameters */

typedef struct problem {
  double p[NP], tau_s;
  double x0[NX], on0;
  double t0, tf, rtol, atol;
  int nt, nres;                  /* targets; finite data entries */
  double *times, *data;          /* data: nt x NO (v, i), by time */
} problem;

typedef struct ctx {
  const problem *pb;
  double on;                     /* the relay: 1 or 0 */
  floor_ida ida;
} ctx;

static int read_problem(const char *path, problem *pb) {
  FILE *f = fopen(path, "r");
  double head[4];
  int st = -1;
  memset(pb, 0, sizeof *pb);
  if (!f) return -1;
  if (nums(f, pb->p, NP) || num(f, &pb->tau_s) || nums(f, pb->x0, NX) || num(f, &pb->on0) || nums(f, head, 4))
    goto done;
  pb->t0 = head[0], pb->tf = head[1], pb->rtol = head[2], pb->atol = head[3];
  st = read_targets(f, &pb->nt, NO, &pb->times, &pb->data, &pb->nres);
done:
  fclose(f);
  return st;
}

/* The states' rates at (w, v, i). */
static void flow(const ctx *c, const double *y, double *xdot) {
  const double *p = c->pb->p;
  xdot[W] = (c->on * p[PVS] - y[W]) / c->pb->tau_s;
  xdot[V] = (y[I] - y[V] / p[PRL]) / p[PC];
}

static int residual(double t, N_Vector yy, N_Vector yyp, N_Vector rr, void *data) {
  const ctx *c = data;
  const double *y = N_VGetArrayPointer(yy), *yp = N_VGetArrayPointer(yyp), *p = c->pb->p;
  double *r = N_VGetArrayPointer(rr), f[NX];
  (void)t;
  flow(c, y, f);
  r[W] = yp[W] - f[W];
  r[V] = yp[V] - f[V];
  r[I] = p[PR] * y[I] - (y[W] - y[V]);
  return 0;
}

/* dF/dy + cj dF/dy': constant but for cj. */
static int jacobian(double t, double cj, N_Vector yy, N_Vector yyp, N_Vector rr, SUNMatrix J, void *data,
                    N_Vector t1, N_Vector t2, N_Vector t3) {
  const ctx *c = data;
  const double *p = c->pb->p;
  (void)t, (void)yy, (void)yyp, (void)rr, (void)t1, (void)t2, (void)t3;
  SUNMatZero(J);
  SM_ELEMENT_D(J, W, W) = cj + 1 / c->pb->tau_s;
  SM_ELEMENT_D(J, V, V) = cj + 1 / (p[PRL] * p[PC]);
  SM_ELEMENT_D(J, V, I) = -1 / p[PC];
  SM_ELEMENT_D(J, I, W) = -1, SM_ELEMENT_D(J, I, V) = 1, SM_ELEMENT_D(J, I, I) = p[PR];
  return 0;
}

/* F_p for direction k at y: the residual's explicit dependence on p_k. */
static void residual_p(const ctx *c, int k, const double *y, double *r) {
  const double *p = c->pb->p;
  r[W] = k == PVS ? -c->on / c->pb->tau_s : 0;
  r[V] = k == PC ? (y[I] - y[V] / p[PRL]) / (p[PC] * p[PC]) : k == PRL ? -y[V] / (p[PRL] * p[PRL] * p[PC]) : 0;
  r[I] = k == PR ? y[I] : 0;
}

/* F_y s + F_y' s' + F_p for every parameter direction. */
static int sens_residual(int ns, double t, N_Vector yy, N_Vector yyp, N_Vector rr, N_Vector *yS, N_Vector *ypS,
                         N_Vector *rS, void *data, N_Vector t1, N_Vector t2, N_Vector t3) {
  const ctx *c = data;
  const double *y = N_VGetArrayPointer(yy), *p = c->pb->p;
  int k;
  (void)t, (void)yyp, (void)rr, (void)t1, (void)t2, (void)t3;
  for (k = 0; k < ns; ++k) {
    const double *s = N_VGetArrayPointer(yS[k]), *sp = N_VGetArrayPointer(ypS[k]);
    double *r = N_VGetArrayPointer(rS[k]);
    residual_p(c, k, y, r);
    r[W] += sp[W] + s[W] / c->pb->tau_s;
    r[V] += sp[V] - (s[I] - s[V] / p[PRL]) / p[PC];
    r[I] += p[PR] * s[I] - (s[W] - s[V]);
  }
  return 0;
}

static int guard(double t, N_Vector yy, N_Vector yyp, double *gout, void *data) {
  ctx *c = data;
  const double v = N_VGetArrayPointer(yy)[V];
  (void)t, (void)yyp;
  c->ida.roots++;
  gout[0] = v - c->pb->p[PHI];
  gout[1] = v - c->pb->p[PLO];
  return 0;
}

/* y consistent from x (i solved) with y' and the sensitivities' i rows and
** derivatives. */
static void consistent(ctx *c) {
  double *y = N_VGetArrayPointer(c->ida.y), *yp = N_VGetArrayPointer(c->ida.yp), f[NX];
  const double *p = c->pb->p;
  int k;
  y[I] = (y[W] - y[V]) / p[PR];
  flow(c, y, f);
  yp[W] = f[W], yp[V] = f[V], yp[I] = 0;   /* algebraic: IDAS does not read it */
  for (k = 0; k < NP; ++k) {
    double *s = N_VGetArrayPointer(c->ida.yS[k]), *sp = N_VGetArrayPointer(c->ida.ypS[k]), fp[N];
    residual_p(c, k, y, fp);
    s[I] = (s[W] - s[V] - fp[I]) / p[PR];
    sp[W] = -s[W] / c->pb->tau_s - fp[W];
    sp[V] = (s[I] - s[V] / p[PRL]) / p[PC] - fp[V];
    sp[I] = 0;
  }
}

/* The relay's switch at tau (y, yS its left limit): on flips; tau_p =
** -(s_v - [k = threshold]) / v'; s_w += (w'- - w'+) tau_p (v' is
** continuous), then the right limit made consistent. */
static int fire(ctx *c, double tau, int which) {
  double *y = N_VGetArrayPointer(c->ida.y), fm[NX], fp[NX];
  int k, thr = which == 0 ? PHI : PLO;
  flow(c, y, fm);
  if (!(which == 0 ? fm[V] > 0 : fm[V] < 0)) return -1;
  c->on = which == 0 ? 0 : 1;
  flow(c, y, fp);
  for (k = 0; k < NP; ++k) {
    double *s = N_VGetArrayPointer(c->ida.yS[k]), tau_p = -(s[V] - (k == thr)) / fm[V];
    s[W] += (fm[W] - fp[W]) * tau_p;
  }
  consistent(c);
  return floor_ida_restart(&c->ida, tau);
}

static const int DIRECTIONS[2] = {1, -1};
static const floor_model MODEL = {N, NX, NP, 2, DIRECTIONS, residual, jacobian, sens_residual, guard};

static int create(ctx *c, const problem *pb) {
  memset(c, 0, sizeof *c);
  c->pb = pb;
  return floor_ida_new(&c->ida, &MODEL, pb->p, pb->t0, pb->tf, pb->rtol, pb->atol, c);
}

/* Adds target k's residuals (v and i, and S at them) to the loss and gradient. */
static void output(const problem *pb, int k, const double *y, N_Vector *S, double scale, double *loss, double *grad) {
  const double *d = pb->data + (size_t)k * NO;
  const int col[NO] = {V, I};
  int j, q;
  for (j = 0; j < NO; ++j) {
    double r = isnan(d[j]) ? 0 : (y[col[j]] - d[j]) * scale;
    *loss += r * r;
    for (q = 0; q < NP; ++q) grad[q] += 2 * r * scale * N_VGetArrayPointer(S[q])[col[j]];
  }
}

/* One loss and gradient: the start, then IDASolve to each target, firing
** the relay where IDAS finds a root. */
static int evaluate(ctx *c, double *loss, double *grad) {
  const problem *pb = c->pb;
  double t = pb->t0, scale = 1.0 / sqrt((double)pb->nres), *y = N_VGetArrayPointer(c->ida.y);
  int k = 0, q;
  *loss = 0;
  memset(grad, 0, sizeof(double) * NP);
  memcpy(y, pb->x0, sizeof(double) * NX);
  c->on = pb->on0;
  for (q = 0; q < NP; ++q) N_VConst(0.0, c->ida.yS[q]);
  consistent(c);
  if (floor_ida_restart(&c->ida, t)) return -1;
  while (k < pb->nt && pb->times[k] <= pb->t0) output(pb, k++, y, c->ida.yS, scale, loss, grad);
  while (k < pb->nt) {
    int rc = IDASolve(c->ida.mem, pb->times[k], &t, c->ida.y, c->ida.yp, IDA_NORMAL), found[2];
    if (rc < 0 || IDAGetSens(c->ida.mem, &t, c->ida.yS) < 0) return -1;
    if (rc == IDA_ROOT_RETURN) {
      if (IDAGetRootInfo(c->ida.mem, found) || (found[0] != 0) == (found[1] != 0) || fire(c, t, found[0] ? 0 : 1))
        return -1;
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
