/*
** sim_plan.c -- a planned run's outputs (see sim_plan.h): at the target
** times only the outputs a loss compares, those that are states straight
** from the integrator's interpolant; and where it may stop (a loss that
** has seen its targets and every firing its event data ask for).
*/
#include <stdlib.h>
#include <string.h>

#include "integrator.h"
#include "sim_impl.h"

/* A plan's results, and its states when every planned output is one. */
int salta__plan_start(salta_sim *s, const int *plan_y, int nplan, int nt) {
  salta__results *r = &s->res;
  const int *y_state = s->d->y_state;
  size_t cap = (size_t)nt + 1, ns = (size_t)s->ns, need = cap * (size_t)nplan * (ns + 1) + 1;
  int q;
  if (!plan_y) return SALTA_OK;
  for (q = 0; q < nplan; ++q)
    if (plan_y[q] < 0 || plan_y[q] >= s->d->ny) return SALTA_EINPUT;
  if (need > (size_t)r->pcap) {   /* + 1: room even for a plan of no outputs */
    free(r->py);
    r->py = malloc(sizeof(double) * need);
    if (!r->py) return r->pcap = 0, SALTA_EMEM;
    r->pcap = (int)need;
  }
  r->pdy = r->py + cap * (size_t)nplan;
  r->pn = nplan;
  s->run.plan_y = plan_y;
  s->run.nplan = nplan;
  if (!y_state) return SALTA_OK;
  for (q = 0; q < nplan; ++q)
    if (y_state[plan_y[q]] < 0) return SALTA_OK;
  if (!(s->run.plan_x = malloc(sizeof(int) * (size_t)nplan))) return SALTA_EMEM;
  for (q = 0; q < nplan; ++q) s->run.plan_x[q] = y_state[plan_y[q]];
  return SALTA_OK;
}

/* A planned run's outputs at target k from the full ones there. */
void salta__plan_record(salta_sim *s, int k) {
  salta__results *r = &s->res;
  const salta__run *run = &s->run;
  int q, i, ny = s->d->ny, ns = s->ns;
  for (q = 0; q < run->nplan; ++q) {
    int yi = run->plan_y[q];
    r->py[(size_t)k * run->nplan + q] = r->y[(size_t)k * ny + yi];
    for (i = 0; i < ns; ++i)
      r->pdy[((size_t)k * run->nplan + q) * ns + i] = r->dy[((size_t)k * ns + i) * ny + yi];
  }
}

/* A planned run's outputs at t inside a step: the states they are, from
** the interpolant alone (no algebraic solve, no output Jacobians). */
int salta__plan_store(salta_sim *s, const salta__integrator *it, double t) {
  salta__results *r = &s->res;
  const salta__run *run = &s->run;
  int k = r->nout++;
  r->t[k] = t;
  return it->ops->states_at(it->self, t, run->plan_x, run->nplan, r->py + (size_t)k * run->nplan,
                            s->ns > 0 ? r->pdy + (size_t)k * run->nplan * s->ns : NULL);
}

int salta__sim_planned_count(const salta_sim *s) { return s->res.nout; }

const char *salta__sim_bad_text(const salta_sim *s, char *buf, size_t cap) {
  return salta__dae_bad_text(&s->dae, buf, cap);
}

void salta__sim_planned_out(const salta_sim *s, int k, const double **y, const double **dy) {
  const salta__results *r = &s->res;
  *y = r->py + (size_t)k * r->pn;
  *dy = r->pdy + (size_t)k * r->pn * s->ns;
}

const double *salta__sim_start_state(const salta_sim *s) { return s->res.w_start; }

/* The plan's stop rule after the groups at tau (the records from first
** on): every event has fired as often as it asks, and tau is past
** stop_after. */
int salta__plan_stop_reached(salta_sim *s, double tau, int first) {
  salta__run *run = &s->run;
  int k, j;
  for (k = first; k < s->events.nlog; ++k) run->fired[s->events.log[k].event]++;
  if (tau < run->stop_after) return 0;
  for (j = 0; j < s->d->ne; ++j)
    if (run->fired[j] < run->stop_counts[j]) return 0;
  return run->stopped = 1;
}
