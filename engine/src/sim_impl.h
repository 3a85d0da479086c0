/*
** sim_impl.h -- the simulation object, shared by sim.c (integration and
** events) and sens.c (forward sensitivities and their jumps). Internal.
*/
#ifndef SALTA_SIM_IMPL_H
#define SALTA_SIM_IMPL_H

#include <stddef.h>

#include "errors.h"
#include "pattern.h"
#include "salta.h"
#include <sundials/sundials_nvector.h>

/* A growable array of doubles. */
typedef struct dbuf { double *v; size_t n, cap; } dbuf;

int salta__dbuf_push(dbuf *b, const double *v, size_t n);

typedef struct event_rec { double t; int event, group, group_size; } event_rec;

struct salta_sim {
  salta_model *model;
  const salta_model_def *d;
  int nx, nz, n;
  /* results */
  double *out_t, *out_w, *out_y;   /* nt outputs: w = [x; z] */
  int nt, nout;
  event_rec *ev;
  int nev, ev_cap;
  dbuf ev_w;                        /* per event: x-, z-, x+, z+ */
  dbuf steps;                       /* per step: t, x, z */
  salta_sim_stats stats;
  /* run state, valid during salta_sim_run */
  const double *p;
  double *work, *jvals, *gz, *guard, *guard0, *gprev, *stuck_t, *leave_t, *gsamples, *interp_w;
  double *leave_cache, leave_cache_t;   /* guards at a leave time, per step */
  double *brackets;                 /* crossing brackets of one step (4 ne) */
  int *ipiv, *armed, *roots, *fire, *stuck, *leaving;
  double nonfinite_t, nonfinite_v;
  int nonfinite_row;                /* -1 none; else residual row or nx+nz+guard */
  salta__pattern pat;               /* sparse iteration matrix (KLU) */
  int exact_z;                      /* outputs come with z and s_z solved (ERK) */
  int guard_bad;                    /* a guard was not finite (see nonfinite_*) */
  /* forward sensitivities (ns = 0: off); see sens.c */
  int ns;
  int *dirs;                        /* >= 0: parameter; -(i+1): initial state i */
  double *out_s;                    /* per output: n x ns, column per direction */
  double *out_dy;                   /* per output: ny x ns */
  dbuf ev_sens;                     /* per event: see SENS_* offsets in sens.c */
  double *sens_scratch, *S;
  size_t sens_maxnnz;               /* largest Jacobian of the model */
  char idas_msg[512];
  char err[SALTA_ERRMSG_SIZE];
};

/* An interpolant of the current step: w (n values) at time t. */
typedef struct salta__interp {
  void (*at)(void *ctx, double t, double *w);
  void *ctx;
} salta__interp;

/* sim.c, shared by the integrators */
/* The events firing first in (t_from, t_end] (count, s->fire, *tau); 0 for
** none; -1 when a guard is not finite (salta__guard_error says which). */
int salta__crossing(salta_sim *s, const salta__interp *ip, double t_start, double t_from,
                    double t_end, double *tau);
int salta__guard_error(salta_sim *s);
int salta__after_events(salta_sim *s, const salta_sim_options *o, double t, double *w, int nfire,
                        double *S, double *Sp);
int salta__rearm(salta_sim *s, double t);
void salta__store_output(salta_sim *s, double t, const double *w, const double *S);
int salta__store_step(salta_sim *s, double t, const double *w);

/* erk.c: the explicit Runge-Kutta integrator (Dormand-Prince 5(4)) */
int salta__integrate_erk(salta_sim *s, const salta_sim_options *o, const double *times, int nt);

/* Newton on g for z at (t, x); see sim.c. */
int salta__solve_z(salta_sim *s, double t, const double *x, double *z, int *worst, double *res);
/* Whether options o ask for KLU on a system of n unknowns (AUTO resolved). */
int salta__use_klu(const salta_sim_options *o, int n);

/* sens.c */
int salta__sens_alloc(salta_sim *s, int nt);
void salta__sens_free_run(salta_sim *s);
int salta__sens_residual(int ns, double t, N_Vector yy, N_Vector yp, N_Vector rr, N_Vector *yS,
                         N_Vector *ypS, N_Vector *rrS, void *ud, N_Vector t1, N_Vector t2, N_Vector t3);
/* Initial sensitivities at (t0, w): S (n x ns) and S' (n x ns). */
int salta__sens_initial(salta_sim *s, double t0, const double *w, double *S, double *Sp);
/* The jump of S (n x ns) through the events s->fire[0..nfire) at tau from
** the left state w; writes S+ and S+' (Sp), records the event data. */
int salta__sens_jump(salta_sim *s, double tau, const double *w, int nfire, double *S, double *Sp);
/* S's algebraic rows from its differential rows (IFT) at (t, w). */
int salta__sens_fill_z(salta_sim *s, double t, const double *w, double *S);
/* S' for x rows: f_x s_x + f_z s_z + f_p (n x ns; z rows 0). */
void salta__sens_prime(salta_sim *s, double t, const double *w, const double *S, double *Sp);
/* dy/dp at an output (w, S) into out_dy of output k. */
void salta__sens_output(salta_sim *s, int k, double t, const double *w, const double *S);

#endif
