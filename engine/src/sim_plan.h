/*
** sim_plan.h -- what a simulation offers a loss beyond the public API
** (internal): a planned run, which computes at the target times only the
** outputs the loss compares (those that are states straight from the
** integrator's interpolant), and the checks of options.
*/
#ifndef SALTA_SIM_PLAN_H
#define SALTA_SIM_PLAN_H

#include <stddef.h>

#include "salta.h"

/* What a planned run computes beyond the events and the state: at the
** target times, the outputs y[0 .. ny) (y NULL: every output, as
** salta_sim_run); with event_outputs, the sensitivity records of the
** events (salta_event_sens). With stop_counts (ne), the run ends at the
** first event group at or after stop_after by which every event j has
** fired stop_counts[j] times (a loss of event times has seen what it
** compares: a model heading for a Zeno point after them is not run into
** it); d t_end / dp is then that group's last record's tau_p. */
typedef struct salta__out_plan {
  const int *y;
  int ny;
  int event_outputs;
  const int *stop_counts;
  double stop_after;
  int grad_only;   /* the derivatives are read only through salta__sim_planned_grad:
                      an ERK run keeps them per step, not per target */
} salta__out_plan;

/* The kernels s runs (d, the model's at some time): set by salta_sim_run
** before each run, by a loss before each of its evaluations. */
void salta__sim_bind(salta_sim *s, const salta_model_def *d);
/* salta_sim_run on the kernels s is bound to. */
int salta__sim_run(salta_sim *s, const salta_sim_options *o, const double *p, const double *x0,
                   const double *times, int nt);
/* salta__sim_run computing what plan asks for. The run's events, steps and
** stats read as after salta_sim_run; its outputs only through
** salta__sim_planned_out: salta_sim_nout is 0 until the next full run. */
int salta__sim_run_planned(salta_sim *s, const salta_sim_options *o, const double *p, const double *x0,
                           const double *times, int nt, const salta__out_plan *plan);
/* The target times the last planned run reached. */
int salta__sim_planned_count(const salta_sim *s);
/* A planned run's outputs at target k: y (plan->ny, in plan order) and, with
** sensitivities and dy not NULL, *dy (plan->ny x ns, row-major). *y is
** borrowed until the next run, *dy until the next call. */
void salta__sim_planned_out(const salta_sim *s, int k, const double **y, const double **dy);
/* grad (ns) = the sum over the first nk targets of a planned run with
** sensitivities of coef (nk x plan->ny) times the outputs' derivatives, a
** term with coef 0 and data (nk x plan->ny) NaN left out: SALTA_OK or
** SALTA_EMEM. */
int salta__sim_planned_grad(const salta_sim *s, const double *coef, const double *data, int nk, double *grad);
/* d tau / dp (ns) of event record k of the last run with sensitivities
** (planned or not), or NULL: borrowed until the next run. */
const double *salta__sim_event_tau_p(const salta_sim *s, int k);

/* The event record whose time is the last run's end, so that d t_end / dp
** is its tau_p: the terminal event's last record, or the last record when
** the plan's stop rule ended the run; -1 when the run reached tf. */
int salta__sim_end_record(const salta_sim *s);

/* The consistent state [x; z] the last run started from (n; borrowed
** until the next run). */
const double *salta__sim_start_state(const salta_sim *s);
/* The first non-finite Jacobian value the last run met, as text ("" for
** none): the likely cause of a non-finite derivative. */
const char *salta__sim_bad_text(const salta_sim *s, char *buf, size_t cap);
/* Options that make no sense for model d: SALTA_EINPUT with a message in
** err (SALTA_ERRMSG_SIZE bytes) naming the option and the value. */
int salta__sim_check_options(const salta_sim_options *o, const salta_model_def *d, char *err);

#endif
