/*
** floor_cauer_model.h -- the Cauer ladder (models/cauer.lua) written by hand
** for the floor programs: its input file, its algebraic equations
** g = G z + c(t, x) (linear in z, G constant), flow and parameter
** derivatives. Included by one program each.
*/
#ifndef FLOOR_CAUER_MODEL_H
#define FLOOR_CAUER_MODEL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "floor_harness.h"

enum { NX = 5, NZ = 3, NP = 7 };
enum { L2I, L1I, C5V, C3V, C1V };            /* states */
enum { Z5, Z3, Z1 };                         /* algebraics: C5_v', C3_v', C1_v' */
enum { PC1, PC2, PC3, PC4, PC5, PL1, PL2 };  /* free parameters */

/* Input file: numbers separated by whitespace (NaN marks a missing datum):
**   V_offset V_height V_startTime R1 R2     fixed parameters
**   C1 C2 C3 C4 C5 L1 L2                    free parameters, in gradient order
**   L2_i L1_i C5_v C3_v C1_v                start state
**   t0 tf rtol atol
**   nt
**   nt rows: t  L2_i L1_i C5_v C3_v C1_v    target time and data
** (examples/bench/floor_input.lua writes it from salta.) */
typedef struct problem {
  double voff, vh, vt0, r1, r2;  /* fixed parameters */
  double p[NP];                  /* free parameters */
  double x0[NX];
  double t0, tf, rtol, atol;
  int nt, nres;                  /* targets; finite data entries */
  double *times, *data;          /* data: nt x NX, by time */
} problem;

static int read_problem(const char *path, problem *pb) {
  FILE *f = fopen(path, "r");
  double fixed[5], head[4];
  int st = -1;
  memset(pb, 0, sizeof *pb);
  if (!f) return -1;
  if (nums(f, fixed, 5) || nums(f, pb->p, NP) || nums(f, pb->x0, NX) || nums(f, head, 4)) goto done;
  pb->voff = fixed[0], pb->vh = fixed[1], pb->vt0 = fixed[2], pb->r1 = fixed[3], pb->r2 = fixed[4];
  pb->t0 = head[0], pb->tf = head[1], pb->rtol = head[2], pb->atol = head[3];
  st = read_targets(f, &pb->nt, NX, &pb->times, &pb->data, &pb->nres);
done:
  fclose(f);
  return st;
}

/* g_z = G (constant for given capacitances). */
static void cauer_gz(const double *p, double G[NZ][NZ]) {
  double g[NZ][NZ] = {{-(p[PC5] + p[PC4]), p[PC4], 0},
                      {0, p[PC2], -(p[PC1] + p[PC2])},
                      {-p[PC4], p[PC4] + p[PC3] + p[PC2], -p[PC2]}};
  memcpy(G, g, sizeof g);
}

/* Gi = G^-1 by the adjugate; -1 when G is singular. */
static int cauer_inverse(const double *p, double Gi[NZ][NZ]) {
  double G[NZ][NZ], det;
  int i, j;
  cauer_gz(p, G);
  for (i = 0; i < NZ; ++i)   /* adjugate: cofactor (j, i) */
    for (j = 0; j < NZ; ++j) {
      int r0 = (j + 1) % 3, r1 = (j + 2) % 3, c0 = (i + 1) % 3, c1 = (i + 2) % 3;
      Gi[i][j] = G[r0][c0] * G[r1][c1] - G[r0][c1] * G[r1][c0];
    }
  det = G[0][0] * Gi[0][0] + G[0][1] * Gi[1][0] + G[0][2] * Gi[2][0];
  if (!(fabs(det) > 0)) return -1;
  for (i = 0; i < NZ; ++i)
    for (j = 0; j < NZ; ++j) Gi[i][j] /= det;
  return 0;
}

/* c(t, x), the part of g that does not read z. */
static void cauer_c(const problem *pb, double t, const double *x, double *c) {
  double V = pb->voff + pb->vh * (1 + tanh(50 * (t - pb->vt0))) / 2;
  c[0] = x[L2I] - x[C5V] / pb->r2;
  c[1] = -x[L1I] + (V - x[C1V]) / pb->r1;
  c[2] = x[L2I] - x[L1I];
}

/* z = -G^-1 c(t, x). */
static void cauer_solve_z(const problem *pb, const double Gi[NZ][NZ], double t, const double *x, double *z) {
  double c[NZ];
  int i;
  cauer_c(pb, t, x, c);
  for (i = 0; i < NZ; ++i) z[i] = -(Gi[i][0] * c[0] + Gi[i][1] * c[1] + Gi[i][2] * c[2]);
}

static void cauer_flow(const double *p, const double *x, const double *z, double *xdot) {
  xdot[L2I] = (x[C3V] - x[C5V]) / p[PL2];
  xdot[L1I] = (x[C1V] - x[C3V]) / p[PL1];
  xdot[C5V] = z[Z5];
  xdot[C3V] = z[Z3];
  xdot[C1V] = z[Z1];
}

/* r += dg/dp_k at fixed z (g is bilinear in the capacitances and z). */
static void cauer_add_gp(int k, const double *z, double *r) {
  switch (k) {
    case PC1: r[1] -= z[Z1]; break;
    case PC2: r[1] += z[Z3] - z[Z1]; r[2] += z[Z3] - z[Z1]; break;
    case PC3: r[2] += z[Z3]; break;
    case PC4: r[0] += z[Z3] - z[Z5]; r[2] += z[Z3] - z[Z5]; break;
    case PC5: r[0] -= z[Z5]; break;
    default: break;   /* the inductances are not in g */
  }
}

#endif
