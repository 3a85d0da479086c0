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
#include "salta.h"
#include "sens.h"
#include "track.h"

/* The results of the last run, readable until the next. */
typedef struct salta__results {
  int nout, cap, cap_ns;        /* outputs stored; room for, with cap_ns directions */
  double *t, *w, *y;            /* per output: t, [x; z] (n), y (ny) */
  double *S, *dy;               /* per output with sensitivities: n x ns, ny x ns */
  double *py, *pdy;             /* per output of a planned run: the planned outputs
                                   (nplan), their derivatives (nplan x ns, row-major) */
  int pn, pcap;                 /* planned outputs; doubles py and pdy have room for */
  salta__dbuf step_t, step_w;   /* per recorded step: t, [x; z] */
  /* per event with sensitivities (see salta_event_sens) */
  salta__dbuf tau_p, S_minus, S_plus, y_minus, dy_minus, y_plus, dy_plus;
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
  double *z_polish;             /* Newton's iterate when an interpolated z is re-solved (nz) */
  salta__jump jump;             /* an event group's sensitivity data */
  /* a planned run (plan_y NULL: not one) */
  const int *plan_y;            /* the planned outputs (nplan) */
  int *plan_x;                  /* when every one is a state, which (owned): they come
                                   from the interpolant alone */
  int nplan;
} salta__run;
/* What a run computes beyond the events and the state: at the target
** times, the outputs y[0 .. ny) (y NULL: all); with event_outputs, the
** sensitivity records of the events (salta_event_sens). */
typedef struct salta__out_plan {
  const int *y;
  int ny;
  int event_outputs;
} salta__out_plan;

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

/* salta_sim_run computing what plan asks for, into the planned results
** (the outputs and states salta_sim_out gives are then undefined). */
int salta__sim_run_planned(salta_sim *s, const salta_sim_options *o, const double *p, const double *x0,
                           const double *times, int nt, const salta__out_plan *plan);
/* A planned run's outputs at target k: y (plan->ny, in plan order) and, with
** sensitivities, dy (plan->ny x ns, row-major). Borrowed until the next run. */
void salta__sim_planned_out(const salta_sim *s, int k, const double **y, const double **dy);
/* Options that make no sense for model d: SALTA_EINPUT with a message in
** err (SALTA_ERRMSG_SIZE bytes) naming the option and the value. */
int salta__sim_check_options(const salta_sim_options *o, const salta_model_def *d, char *err);

#endif
