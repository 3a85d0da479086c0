/*
** sim_impl.h -- the simulation object (internal): the model's local algebra
** and events, the last run's results, and the run's working state.
*/
#ifndef SALTA_SIM_IMPL_H
#define SALTA_SIM_IMPL_H

#include "dae.h"
#include "dbuf.h"
#include "errors.h"
#include "events.h"
#include "integrator.h"
#include "salta.h"
#include "jump.h"
#include "sim_plan.h"
#include "track.h"

/* The results of the last run, readable until the next. */
typedef struct salta__results {
  int nout, cap, cap_ns;        /* outputs stored; room for, with cap_ns directions */
  double *t, *w, *y;            /* per output: t, [x; z] (n), y (ny) */
  double *w_start;              /* the consistent start state (n) */
  double *S, *dy;               /* per output with sensitivities: n x ns, ny x ns */
  double *py, *pdy;             /* per output of a planned run: the planned outputs
                                   (nplan), their derivatives (nplan x ns, row-major) */
  int pn, pcap;                 /* planned outputs; doubles py and pdy have room for */
  /* a planned run in step form (salta__out_plan's grad_only, on an integrator
  ** with sens_coef): each output inside a step has its step's record and its
  ** fraction th of the step, and no row in pdy; each record, from prec[r],
  ** the planned outputs' derivatives' interpolant (nplan x ns x 5) */
  int pform;
  int *pstep;                   /* per output: its record, or -1: its row is in pdy */
  double *pth, *prow;           /* per output: its th; one output's derivatives, made */
  size_t *prec;                 /* nrec + 1 offsets into pcoef */
  int nrec, picap;              /* records; outputs pstep, pth and prec have room for */
  double rec_t, rec_h;          /* the last record's step: [rec_t, rec_t + rec_h] */
  salta__dbuf pcoef;
  int planned;                  /* the last run was planned: t, w, y, S and dy are not all written */
  salta__dbuf step_t, step_w;   /* per recorded step: t, [x; z] */
  /* per event with sensitivities (see salta_event_sens) */
  salta__dbuf tau_p, S_minus, S_plus, y_minus, dy_minus, y_plus, dy_plus;
  salta__dbuf t_end_p;          /* with sensitivities, after a run that succeeded: d t_end / dp (ns) */
} salta__results;

/* The state of a run, between the segment loop's steps. */
typedef struct salta__run {
  const salta_sim_options *o;
  double t;                     /* where the integration is */
  double *x0;                   /* the start state (nx) */
  int start_follows_p;          /* it is the model's start function at p */
  double *w;                    /* its state there (n) */
  double *w_minus, *w_plus;     /* the limits at an event (n each) */
  double *S, *S_step;           /* n x ns: S at t; S at a point inside a step */
  double *tau_p0;               /* ns: d tau / dp of an instant's located group (event iteration keeps it) */
  double *w_step;               /* a point inside a step (n) */
  salta__jump jump;             /* an event group's sensitivity data */
  /* a planned run (plan_y NULL: not one) */
  const int *plan_y;            /* the planned outputs (nplan) */
  const int *stop_counts;       /* the plan's stop rule (salta__out_plan), or NULL */
  double stop_after;
  int *fired;                   /* with stop_counts: firings per event so far (ne, owned) */
  int stopped;                  /* the stop rule ended the run */
  int *plan_x;                  /* when every one is a state, which (owned): they come
                                   from the interpolant alone */
  int nplan;
  int grad_only;                /* the plan's grad_only */
} salta__run;

struct salta_sim {
  salta_model *model;
  const salta_model_def *d;
  int nx, nz, n;
  salta__dae dae;
  salta__events events;
  salta__track track;           /* the structural compiler's checks along a run */
  int ns;
  int *dirs;                    /* the sensitivity directions (owned copy) */
  salta__sens sens;             /* during a run with ns > 0 */
  salta__results res;
  salta__run run;
  salta_method auto_method;     /* what SALTA_METHOD_AUTO runs: ERK until a run finds the model stiff */
  salta_sim_stats stats;
  char err[SALTA_ERRMSG_SIZE];
};

/* sim_plan.c: a planned run's results (SALTA_EMEM, or SALTA_EINPUT for an
** output the model does not have), their form once the integrator is
** made, its outputs at target k from the full ones, its outputs at t
** inside a step of it when they are states (first: the step's first), and
** whether it may stop after the groups at tau (1: it stopped). */
int salta__plan_start(salta_sim *s, const salta__out_plan *plan, int nt);
void salta__plan_form(salta_sim *s, const salta__integrator *it);
void salta__plan_record(salta_sim *s, int k);
int salta__plan_store(salta_sim *s, const salta__integrator *it, double t, int first);
int salta__plan_stop_reached(salta_sim *s, double tau, int first);

#endif
