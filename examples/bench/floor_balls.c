/*
** floor_balls.c -- the hand-written floor for salta's bouncing-balls
** benchmark (models/bouncing_balls.lua, bench.lua's grad_case): the
** least-squares loss over the ball positions and its gradient by g, e_g and
** e_b, in closed form. Between events every ball flies a parabola, so the
** state and its fixed-time sensitivities are polynomials in t; the event
** times are roots of quadratics (a wall: the height or the abscissa; a pair:
** gravity cancels in the relative motion, so |r_i - r_j|^2 - d_sq is
** quadratic too), and the sensitivities jump through each event as in
** salta's sens.c: tau_p = -(e_x s) / e', s+ = r_x s + r_p + (r_x x'- - x'+)
** tau_p on the reset rows, s+ = s + (x'- - x'+) tau_p on the others.
**
** Events as in the model: per ball floor, ceiling, left and right wall
** (restitution e_g: v -> -e_g v, position set on the wall), then the pairs
** i < j (both balls' velocities -> -e_b v); guards fire going down to zero.
** Ties fire the first in that order (salta would fire a group; none occur).
** Assumes g > 0 and balls starting inside the box, apart; salta refuses
** grazing events (tau_p undefined), which this program does not check for.
**
** Input file: numbers separated by whitespace (NaN marks a missing datum):
**   N                                   number of balls
**   d_sq y_max y_min x_max x_min        fixed parameters
**   g e_g e_b                           free parameters, in gradient order
**   x1 y1 vx1 vy1 ... xN yN vxN vyN     start state (the model's state order)
**   t0 tf
**   nt
**   nt rows: t  x1 y1 ... xN yN         target time and data
** (examples/bench/floor_input.lua writes it from salta.)
**
**   gcc -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L floor_balls.c -lm
**   ./a.out INPUT [REPEATS]
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floor_harness.h"

enum { NP = 3 };                           /* free parameters */
enum { PG, PEG, PEB };                     /* g, e_g, e_b */
enum { SX, SY, SVX, SVY };                 /* a ball's states */
enum { FLOOR, CEILING, LEFT, RIGHT };      /* its walls, in declaration order */

typedef struct problem {
  int n;                                   /* balls */
  double dsq, ymax, ymin, xmax, xmin;      /* fixed parameters */
  double p[NP];                            /* free parameters */
  double *x0;                              /* 4 n */
  double t0, tf;
  int nt, nres;                            /* targets; finite data entries */
  double *times, *data;                    /* data: nt x 2 n, by time */
} problem;

/* A ball's state at its anchor time t (its last event) and the fixed-time
** sensitivities s[state][param] there. */
typedef struct ball { double t, x, y, vx, vy, s[4][NP]; } ball;

typedef struct work {
  ball *b;
  double *wall_t;                          /* per ball: its next wall hit */
  int *wall_k;                             /* and which wall */
  double *pair_t;                          /* n x n, i < j: the pair's next collision */
} work;

typedef struct acc { double L, g[NP], scale; int k; } acc;

/* ---- flight ------------------------------------------------------------------- */

/* The ball at time t: free flight from its anchor; s' = f_x s + f_p. */
static void ball_at(const ball *a, double g, double t, ball *o) {
  double dt = t - a->t;
  int k;
  o->t = t;
  o->x = a->x + a->vx * dt;
  o->y = a->y + a->vy * dt - 0.5 * g * dt * dt;
  o->vx = a->vx;
  o->vy = a->vy - g * dt;
  for (k = 0; k < NP; ++k) {
    o->s[SX][k] = a->s[SX][k] + a->s[SVX][k] * dt;
    o->s[SY][k] = a->s[SY][k] + a->s[SVY][k] * dt - (k == PG ? 0.5 * dt * dt : 0);
    o->s[SVX][k] = a->s[SVX][k];
    o->s[SVY][k] = a->s[SVY][k] - (k == PG ? dt : 0);
  }
}

/* ---- event times ------------------------------------------------------------------ */

/* The ball's next wall hit (absolute time, HUGE_VAL for none) and *kind.
** Roots in the cancellation-free form; tau > 0 skips the wall it sits on. */
static double wall_time(const problem *pb, const ball *b, int *kind) {
  const double g = pb->p[PG];
  double best = HUGE_VAL, c, D, tau[4] = {HUGE_VAL, HUGE_VAL, HUGE_VAL, HUGE_VAL};
  int w;
  c = b->y - pb->ymin;   /* c + vy t - g t^2 / 2: always comes down */
  D = sqrt(b->vy * b->vy + 2 * g * c);
  tau[FLOOR] = b->vy >= 0 ? (b->vy + D) / g : 2 * c / (D - b->vy);
  c = pb->ymax - b->y;   /* c - vy t + g t^2 / 2: reaches 0 only rising */
  D = b->vy * b->vy - 2 * g * c;
  if (b->vy > 0 && D >= 0) tau[CEILING] = 2 * c / (b->vy + sqrt(D));
  if (b->vx < 0) tau[LEFT] = (b->x - pb->xmin) / -b->vx;
  if (b->vx > 0) tau[RIGHT] = (pb->xmax - b->x) / b->vx;
  *kind = -1;
  for (w = FLOOR; w <= RIGHT; ++w)
    if (tau[w] > 0 && tau[w] < best) best = tau[w], *kind = w;
  return b->t + best;
}

/* The pair's next collision after now: gravity cancels in the relative
** motion, so |d + v t|^2 - d_sq = A t^2 + B t + C; a hit needs C > 0 and
** B < 0 (apart and approaching) and a real root. */
static double pair_time(const problem *pb, const ball *a, const ball *b, double now) {
  const double g = pb->p[PG];
  double ta = now - a->t, tb = now - b->t, dx, dy, dvx, dvy, A, B, C, D;
  dx = (a->x + a->vx * ta) - (b->x + b->vx * tb);
  dy = (a->y + a->vy * ta - 0.5 * g * ta * ta) - (b->y + b->vy * tb - 0.5 * g * tb * tb);
  dvx = a->vx - b->vx;
  dvy = (a->vy - g * ta) - (b->vy - g * tb);
  A = dvx * dvx + dvy * dvy;
  B = 2 * (dx * dvx + dy * dvy);
  C = dx * dx + dy * dy - pb->dsq;
  if (!(C > 0 && B < 0)) return HUGE_VAL;
  D = B * B - 4 * A * C;
  return D >= 0 ? now + 2 * C / (sqrt(D) - B) : HUGE_VAL;
}

/* The next events of ball i (its walls, its pairs) after an event at now. */
static void reschedule(const problem *pb, work *w, int i, double now) {
  int m, n = pb->n;
  w->wall_t[i] = wall_time(pb, &w->b[i], &w->wall_k[i]);
  for (m = 0; m < n; ++m)
    if (m != i) {
      int lo = m < i ? m : i, hi = m < i ? i : m;
      w->pair_t[lo * n + hi] = pair_time(pb, &w->b[lo], &w->b[hi], now);
    }
}

/* ---- resets and sensitivity jumps ---------------------------------------------------- */

/* Wall `kind` at tau: position on the wall, v -> -e_g v. tau_p = -s_pos / v
** (the guard's row over its rate, either sign of wall); on the position
** row s+ = -v+ tau_p, on the velocity row s+ = -e_g s - [e_g] v + (-e_g a
** - a) tau_p, a the acceleration along the axis. */
static void bounce(const problem *pb, ball *b, int kind, double tau) {
  const double g = pb->p[PG], eg = pb->p[PEG];
  const int vertical = kind == FLOOR || kind == CEILING, P = vertical ? SY : SX, V = vertical ? SVY : SVX;
  const double wall[4] = {pb->ymin, pb->ymax, pb->xmin, pb->xmax}, acc = vertical ? -g : 0;
  ball a;
  double v, vp;
  int k;
  ball_at(b, g, tau, &a);
  v = vertical ? a.vy : a.vx;
  vp = -eg * v;
  for (k = 0; k < NP; ++k) {
    double tau_p = -a.s[P][k] / v;
    a.s[P][k] = (0 - vp) * tau_p;
    a.s[V][k] = -eg * a.s[V][k] + ((k == PEG ? -v : 0) + (-eg * acc - acc) * tau_p);
  }
  if (vertical) a.y = wall[kind], a.vy = vp;
  else a.x = wall[kind], a.vx = vp;
  *b = a;
}

/* One ball of a collision: v -> -e_b v; the positions keep their values,
** their sensitivities move by (v- - v+) tau_p. */
static void reverse(ball *a, double g, double eb, const double *tau_p) {
  double vx = a->vx, vy = a->vy;
  int k;
  a->vx = -eb * vx;
  a->vy = -eb * vy;
  for (k = 0; k < NP; ++k) {
    a->s[SX][k] += (vx - a->vx) * tau_p[k];
    a->s[SY][k] += (vy - a->vy) * tau_p[k];
    a->s[SVX][k] = -eb * a->s[SVX][k] + (k == PEB ? -vx : 0);
    a->s[SVY][k] = -eb * a->s[SVY][k] + ((k == PEB ? -vy : 0) + (eb * g + g) * tau_p[k]);
  }
}

/* Balls i and j touching at tau: tau_p from the guard's row, 2 d . (s_i - s_j),
** over its rate 2 d . (v_i - v_j). */
static void collide(const problem *pb, ball *bi, ball *bj, double tau) {
  const double g = pb->p[PG];
  double dx, dy, rate, tau_p[NP];
  ball a, b;
  int k;
  ball_at(bi, g, tau, &a);
  ball_at(bj, g, tau, &b);
  dx = a.x - b.x, dy = a.y - b.y;
  rate = 2 * dx * (a.vx - b.vx) + 2 * dy * (a.vy - b.vy);
  for (k = 0; k < NP; ++k)
    tau_p[k] = -(2 * dx * (a.s[SX][k] - b.s[SX][k]) + 2 * dy * (a.s[SY][k] - b.s[SY][k])) / rate;
  reverse(&a, g, pb->p[PEB], tau_p);
  reverse(&b, g, pb->p[PEB], tau_p);
  *bi = a, *bj = b;
}

/* ---- the loss -------------------------------------------------------------------------- */

/* The residuals of target a->k: positions and their sensitivities at t,
** in the outputs' order x1, y1, x2, ... (lsq.lua: the mean of the squared
** residuals over the finite data entries). */
static void output(const problem *pb, const ball *b, acc *a) {
  const double t = pb->times[a->k], g = pb->p[PG], *d = pb->data + (size_t)a->k * 2 * pb->n, sc = a->scale;
  double L = a->L, g0 = a->g[PG], g1 = a->g[PEG], g2 = a->g[PEB];   /* in registers, not through *a */
  int i, c;
  for (i = 0; i < pb->n; ++i) {
    const ball *o = &b[i];
    const double dt = t - o->t, h = 0.5 * dt * dt;
    const double pos[2] = {o->x + o->vx * dt, o->y + o->vy * dt - g * h};
    const double s[2][NP] = {   /* by g, e_g, e_b; only g enters the flight */
      {o->s[SX][0] + o->s[SVX][0] * dt, o->s[SX][1] + o->s[SVX][1] * dt, o->s[SX][2] + o->s[SVX][2] * dt},
      {o->s[SY][0] + o->s[SVY][0] * dt - h, o->s[SY][1] + o->s[SVY][1] * dt, o->s[SY][2] + o->s[SVY][2] * dt}};
    for (c = 0; c < 2; ++c) {
      double r;
      if (isnan(d[2 * i + c])) continue;
      r = (pos[c] - d[2 * i + c]) * sc;
      L += r * r;
      g0 += 2 * r * (sc * s[c][0]);
      g1 += 2 * r * (sc * s[c][1]);
      g2 += 2 * r * (sc * s[c][2]);
    }
  }
  a->L = L, a->g[PG] = g0, a->g[PEG] = g1, a->g[PEB] = g2;
  a->k++;
}

/* The earliest scheduled event: its time, and the pair (i, j) or the ball
** i with j = -1; ties go to the first declared. */
static double next_event(const problem *pb, const work *w, int *ei, int *ej) {
  double te = HUGE_VAL;
  int i, j, n = pb->n;
  *ei = 0, *ej = -1;
  for (i = 0; i < n; ++i)
    if (w->wall_t[i] < te) te = w->wall_t[i], *ei = i, *ej = -1;
  for (i = 0; i < n; ++i)
    for (j = i + 1; j < n; ++j)
      if (w->pair_t[i * n + j] < te) te = w->pair_t[i * n + j], *ei = i, *ej = j;
  return te;
}

static void evaluate(const problem *pb, work *w, double *loss, double *grad) {
  acc a = {0, {0}, 1.0 / sqrt((double)pb->nres), 0};
  int i, j = -1, n = pb->n;
  memset(w->b, 0, sizeof(ball) * (size_t)n);   /* s(t0) = 0: the directions are parameters */
  for (i = 0; i < n; ++i) {
    ball *b = &w->b[i];
    b->t = pb->t0;
    b->x = pb->x0[4 * i], b->y = pb->x0[4 * i + 1], b->vx = pb->x0[4 * i + 2], b->vy = pb->x0[4 * i + 3];
  }
  for (i = 0; i < n; ++i) reschedule(pb, w, i, pb->t0);
  for (;;) {
    double te = next_event(pb, w, &i, &j);
    if (!(te <= pb->tf)) te = HUGE_VAL;
    while (a.k < pb->nt && pb->times[a.k] < te) output(pb, w->b, &a);   /* right limits at te */
    if (te == HUGE_VAL) break;
    if (j < 0) {
      bounce(pb, &w->b[i], w->wall_k[i], te);
    } else {
      collide(pb, &w->b[i], &w->b[j], te);
      reschedule(pb, w, j, te);
    }
    reschedule(pb, w, i, te);
  }
  *loss = a.L;
  memcpy(grad, a.g, sizeof a.g);
}

/* ---- input and timing (floor_harness.h) ------------------------------------------------------------------ */

static int read_problem(const char *path, problem *pb) {
  FILE *f = fopen(path, "r");
  double n, fixed[5], head[2];
  int st = -1, ny;
  memset(pb, 0, sizeof *pb);
  if (!f) return -1;
  if (num(f, &n) || !(n >= 1 && n < 1e4) || nums(f, fixed, 5) || nums(f, pb->p, NP)) goto done;
  pb->n = (int)n, ny = 2 * pb->n;
  pb->dsq = fixed[0], pb->ymax = fixed[1], pb->ymin = fixed[2], pb->xmax = fixed[3], pb->xmin = fixed[4];
  if (!(pb->x0 = malloc(sizeof(double) * 4 * (size_t)pb->n)) || nums(f, pb->x0, 4 * pb->n) || nums(f, head, 2) ||
      read_targets(f, &pb->nt, ny, &pb->times, &pb->data, &pb->nres))
    goto done;
  pb->t0 = head[0], pb->tf = head[1];
  st = pb->p[PG] > 0 ? 0 : -1;
done:
  fclose(f);
  return st;
}

typedef struct run { const problem *pb; work *w; } run;

static int run_eval(void *ctx, double *loss, double *grad) {
  const run *r = ctx;
  evaluate(r->pb, r->w, loss, grad);
  return 0;
}

int main(int argc, char **argv) {
  problem pb;
  work w;
  run r = {&pb, &w};
  int reps = floor_reps(argc, argv, 200), st;
  if (reps < 0) return 2;
  if (read_problem(argv[1], &pb)) {
    fprintf(stderr, "%s: cannot read the input file %s\n", argv[0], argv[1]);
    return 1;
  }
  w.b = malloc(sizeof(ball) * (size_t)pb.n);
  w.wall_t = malloc(sizeof(double) * (size_t)pb.n);
  w.wall_k = malloc(sizeof(int) * (size_t)pb.n);
  w.pair_t = malloc(sizeof(double) * (size_t)pb.n * pb.n);
  st = !w.b || !w.wall_t || !w.wall_k || !w.pair_t ? 1 : floor_time(argv[0], run_eval, &r, NP, reps);
  free(w.b); free(w.wall_t); free(w.wall_k); free(w.pair_t);
  free(pb.x0); free(pb.times); free(pb.data);
  return st;
}
