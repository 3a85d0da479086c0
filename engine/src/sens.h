/*
** sens.h -- forward sensitivity algebra (internal): S = d[x; z]/dp for ns
** directions (n x ns, a column per direction), the sensitivity residual and
** derivative, outputs, and z's rows from the implicit function theorem.
** The jump through an event group is jump.h's; this object is its
** scratch, in either direction.
*/
#ifndef SALTA_SENS_H
#define SALTA_SENS_H

#include "dae.h"

/* A sensitivity direction (salta_sim_set_sens): dir >= 0 is parameter
** dir, dir = -(i + 1) the initial value of state i. Its place in a vector
** of the parameters followed by the initial states, [p; x0]: */
static inline int salta__dir_slot(int np, int dir) { return dir >= 0 ? dir : np - dir - 1; }
/* "parameter 'k'" or "the start value of 'x'", into buf; returns buf. */
const char *salta__dir_text(const salta_model_def *d, int dir, char *buf, size_t cap);

typedef struct salta__sens {
  salta__dae *dae;          /* borrowed */
  int ns;
  const int *dirs;          /* borrowed (salta__dir_slot) */
  double *jac[2][4];        /* the Jacobian blocks (x, z, p, t) of up to two functions */
  double *zrhs;             /* nz x ns: the implicit function theorem's right-hand sides */
  int *fp_at, *gp_at;       /* ns: where direction k's column starts in f_p's and g_p's entries */
  double *flow_p, *zdot_p;  /* the flow [x'; z'] at an event's right limit; zdot_p its z rows */
  double *ew, *ep;          /* one guard's row */
  double *jump_v;           /* nx: r_t + r_x x'- + r_z z'- of a member's rows */
  double *rp_col;           /* nx: a member's r_p column of one direction */
  double *S_minus;          /* n x ns: S at the left limit, during a jump */
  double *moved;            /* n: a column moved along the flow, for outputs at an event */
  /* a group a direction splits: members composed in sequence */
  double *seq_pt;           /* the states between members and their flows (jump.c) */
  size_t seq_cap;           /* doubles seq_pt has room for */
  double *seq_S;            /* n x ns: the composition in the other order */
  double *seq_tau;          /* ne x ns: its members' tau_p */
  double *seq_rows;         /* nx: a member's reset rows of one column */
  int *seq_events;          /* ne: the members fired so far, in order */
  /* the transposed jump */
  double *adj_out;          /* n: the adjoint of S- as it is summed */
  double *adj_tb;           /* ne: the members' tau_p's adjoints */
} salta__sens;

/* An event group's left limit as the events module saw it: the state, the
** flow there, every guard's rate along it with the size of its terms, and
** the guard Jacobians' values there (see salta__dae_guard_rates). */
typedef struct salta__left_limit {
  const double *w, *xdot, *zdot, *rate, *rscale;
  double *const *ejac;
} salta__left_limit;
/* The boundary an event group leaves in the outputs: y and its derivative
** along the moving event time (dy/dp + dy/dt tau_p of the first member) on
** each side (only when outputs is set), and every member's tau_p (members
** x ns). */
typedef struct salta__jump {
  double *tau_p, *y_minus, *dy_minus, *y_plus, *dy_plus;
  int outputs;
} salta__jump;

int salta__sens_init(salta__sens *sn, salta__dae *dae, const int *dirs, int ns);
void salta__sens_free(salta__sens *sn);

/* S at the start (t0, w): unit columns for initial-state directions, the
** start function's d x0 / dp on parameter directions when the start
** follows p, z rows from the implicit function theorem. */
int salta__sens_initial(salta__sens *sn, double t0, const double *w, int start_follows_p, double *S);
/* S's z rows from its x rows at (t, w), by g_z's factorisation (starts,
** restarts, jumps): SALTA_OK, or SALTA_ESOLVER when g_z is singular. */
int salta__sens_fill_z(salta__sens *sn, double t, const double *w, double *S);
/* Sp's x rows = f_x s_x + f_z s_z + f_p at an explicit stage (nx rows;
** column k's at Sx + k ldx and Sp + k ldp): by the reduced right-hand
** side's kernels where the model has them, else with s_z solved into Sz
** (column k's at Sz + k ldz) by g_z's inverse where one is formed
** (salta__dae_gz_apply): the product that runs at every stage. SALTA_OK,
** or SALTA_ESOLVER when g_z is singular. */
int salta__sens_stage_prime(salta__sens *sn, double t, const double *w, const double *Sx, int ldx, double *Sz,
                            int ldz, double *Sp, int ldp);
/* Sp's x rows = f_x s_x + f_z s_z + f_p; z rows 0. */
void salta__sens_prime(salta__sens *sn, double t, const double *w, const double *S, double *Sp);
/* The DAE's sensitivity residuals R[k] = [s_x' - (f_x s_x + f_z s_z + f_p);
** g_x s_x + g_z s_z + g_p] for every direction k (n each). */
void salta__sens_residual(salta__sens *sn, double t, const double *w, double *const *S,
                          double *const *Sp, double *const *R);
/* dy = h_x s_x + h_z s_z + h_p (ny x ns). */
void salta__sens_output(salta__sens *sn, double t, const double *w, const double *S, double *dy);
/* The same plus (h_x x' + h_z z' + h_t) tau_p along a moving event time,
** the flow (xdot, zdot) and tau_p (ns) given. */
void salta__sens_output_along(salta__sens *sn, double t, const double *w, const double *S, const double *xdot,
                              const double *zdot, const double *tau_p, double *dy);
/* S's first `rows` rows of every column (ld apart) finite at t, or an
** error naming the direction, the variable, the time and the first
** non-finite Jacobian kernel value seen (the likely cause; with w, the
** point where S was computed, f's and g's kernels are evaluated there,
** since their directional kernels record no value). */
int salta__sens_check(salta__sens *sn, const double *S, int rows, int ld, double t, const double *w);
#endif
