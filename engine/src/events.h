/*
** events.h -- the event logic every route shares (internal): arming of
** guards, crossing location on an integrator's interpolant, the group of
** events firing at one instant and its composite reset, the event log, and
** the checks for Zeno behaviour and for too many events.
**
** Semantics: an armed guard fires where it reaches its firing side (down:
** e <= 0, up: e >= 0, both: a sign change). Every guard on its firing side
** at the located instant fires with the group; every reset of the group
** reads the left limit (two resets of one state are an error). A guard a
** reset leaves at zero is not armed until it has left its firing side,
** unless the reset turned it around (a ball's bounce), in which case it may
** fire again once it has been clear.
*/
#ifndef SALTA_EVENTS_H
#define SALTA_EVENTS_H

#include <math.h>

#include "dae.h"
#include "dbuf.h"

/* The integrator's interpolant over its last step: w = [x; z] at t. With
** cols, only the states cols[0..ncols) need be valid, and z not at all.
** Returns 0 or a status (with the owner's message set). Unless exact_z,
** its z only approximates g's solution (IDAS leaves algebraic components
** out of its error test): guards that read z see it re-solved. */
typedef struct salta__interp {
  int (*at)(void *ctx, double t, double *w, const int *cols, int ncols);
  void *ctx;
  int exact_z;
} salta__interp;

/* A guard's arming, one state per guard:
**   DISARMED  arms once it is clear of its firing side;
**   STUCK     a reset left it at zero: arms once clear of its band;
**   LEAVING   a reset turned it around (a ball's bounce): armed, but
**             fires only once it has been clear after leave_t;
**   ARMED     fires on reaching its firing side. */
typedef enum salta__arming { SALTA__DISARMED, SALTA__STUCK, SALTA__LEAVING, SALTA__ARMED } salta__arming;

/* A logged event; cascade: the round of event iteration that fired its
** group (0: a crossing located in time). */
typedef struct salta__event_rec {
  double t, rate, rscale;       /* its guard's rate at the left limit, and the size of its terms */
  int event, group, group_size, cascade;
} salta__event_rec;

/* A guard's bracket of its earliest crossing in a step. */
typedef struct salta__bracket {
  double lo, hi, elo, ehi;
  int guard, refined;
  int narrowed;                 /* to the guard's first crossing in it (locate.c) */
} salta__bracket;

/* Base samples of the interpolant per step (locate.c halves the intervals
** between them where a guard could change sides unseen). */
#define SALTA__SAMPLES 4

typedef struct salta__events {
  salta__dae *dae;              /* borrowed */
  const salta_model_def *d;
  const salta_sim_options *o;   /* of the current run (borrowed) */
  int ne;
  salta__arming *arming;        /* per guard */
  double *stuck_t, *leave_t;    /* when it was left at zero; from when it may fire (leaving) */
  double *arm_t;                /* in the step just located: from when it is armed
                                   (INFINITY: not armed in it) */
  double *band0, *band;         /* "at zero": its value scale; and widened by its rate */
  double *side;                 /* a two-sided guard's side (+1, -1) where last seen clear;
                                   0 before that */
  double *g_start;              /* guard values where the current step starts */
  double *g_probe;              /* guard values at the located instant (or the step's end) */
  double *g_work;               /* scratch: every guard at a probe of one, or of the end rates */
  int *crossing;                /* whether it has a bracket in the current step */
  double *quiet_margin;         /* per guard: > 0 when the step's samples show it on one
                                   side of zero, which its curvature bound cannot leave */
  double *rate0, *rate1;        /* its rate along the interpolant at the step's start and end */
  int rate0_valid;              /* rate0 holds the last step's end rate (no event since) */
  double *kbound;               /* its curvature bound K in the step (locate.c) */
  /* location scratch */
  double *samples;              /* sampled guard values of a step, a row per sample */
  salta__bracket *brackets;
  double *w_probe;              /* the interpolated state of a probe (n) */
  int *col_ptr, *cols;          /* per guard: the states it reads (probes of one guard; col_ptr the dae's) */
  int *read_cols, nread;        /* the states any guard reads (probes of all), nread of them;
                                   -1: every state */
  double *rate, *rscale, *flow; /* at the fired group's left limit: guard rates, the
                                   size of their terms, the flow [x'; z'], */
  double *ejac[4];              /* and the values of e_x, e_z and e_t there */
  double *rate_p, *rscale_p, *flow_p;   /* the same after its resets, for the one-sided */
  int *stuck_list;                      /* guards they left at zero (only theirs) */
  int *fire, nfire;             /* the located group, in declaration order */
  double *ahead;                /* per guard: the end of the bracket of a crossing a step
                                   showed after its located instant, else INFINITY */
  double t_next;                /* after a located group: the earliest of them (the next
                                   crossing expected), else INFINITY */
  int cascade;                  /* its round of event iteration (0: located in time) */
  int *next, nnext;             /* the group its resets pushed across zero (event iteration) */
  salta__arming *arming_pre;    /* the arming before the group's resets */
  int *in_group;                /* 1 for the members of the group being fired, else 0 */
  int *fired_now;               /* 1 for the guards fired at the current instant (any round) */
  int *entering;                /* left at zero by the resets with the flow now driving it
                                   into its firing side (it fires in the next round) */
  double *g_pre;                /* guard values before the group's resets */
  /* the log */
  salta__event_rec *log;
  int nlog, log_cap;
  int ncounted;                 /* the logged events that are not input breakpoints */
  salta__dbuf w_minus, w_plus;  /* per event: [x-; z-] and [x+; z+] */
  /* a guard found not finite */
  int bad_guard;
  double bad_t, bad_v;
  long probes;                  /* guard evaluations */
} salta__events;

/* Sides. Down guards fire at e <= 0, up guards at e >= 0, two-sided ones
** where e leaves the side it was last seen clear on (side). */
static inline int salta__on_firing_side(const salta__events *ev, int j, double e) {
  switch (ev->d->e_direction[j]) {
    case SALTA_DIR_DOWN: return e <= 0;
    case SALTA_DIR_UP: return e >= 0;
    default: return e * (ev->side[j] != 0 ? ev->side[j] : ev->g_start[j]) <= 0;
  }
}

/* Whether guard j reads states its row of e_x does not show (through
** floor, ceil, sign or a condition). */
static inline int salta__hidden_reads(const salta__events *ev, int j) {
  return ev->d->e_flags && (ev->d->e_flags[j] & SALTA_EVENT_HIDDEN_READS);
}

/* A two-sided guard seen clear of zero at e is on e's side from now on. */
static inline void salta__note_side(salta__events *ev, int j, double e) {
  if (ev->d->e_direction[j] == SALTA_DIR_BOTH && fabs(e) > 0.1 * ev->band[j]) ev->side[j] = e > 0 ? 1 : -1;
}

/* Strictly off the side a guard fires from; two-sided guards clear of
** zero by a tenth of their band. */
static inline int salta__is_clear(const salta__events *ev, int j, double e) {
  switch (ev->d->e_direction[j]) {
    case SALTA_DIR_DOWN: return e > 0;
    case SALTA_DIR_UP: return e < 0;
    default: return fabs(e) > 0.1 * ev->band[j];
  }
}

/* Off its firing side by more than its band: a guard a reset left at zero
** has left it, and is not just the interpolant's noise around it (IDAS's
** first steps after a restart at t = 1e5 are an ulp long). */
static inline int salta__is_clear_of_band(const salta__events *ev, int j, double e) {
  switch (ev->d->e_direction[j]) {
    case SALTA_DIR_DOWN: return e > ev->band[j];
    case SALTA_DIR_UP: return e < -ev->band[j];
    default: return fabs(e) > 0.1 * ev->band[j];
  }
}

/* Armed in the wide sense: it fires from its firing side (once clear, when leaving). */
static inline int salta__is_armed(salta__arming a) { return a == SALTA__ARMED || a == SALTA__LEAVING; }

int salta__events_init(salta__events *ev, salta__dae *dae);
void salta__events_free(salta__events *ev);

/* A new run from the consistent state w at t0 under options o (borrowed for
** the run): empties the log and arms the guards. */
int salta__events_start(salta__events *ev, const salta_sim_options *o, double t0, const double *w);
/* The earliest group of armed guards reaching their firing side in
** (t_from, t_end] of the step that began at t_start: its size (ev->fire),
** with *tau the instant (the side just past the crossing, to a few ulps);
** 0 for none; or a negative status. Guards are armed along the step where
** they are first clear (ev->arm_t), up to the instant; ev->t_next is the
** next crossing this step or an earlier one showed. (locate.c) */
int salta__events_locate(salta__events *ev, const salta__interp *ip, double t_start, double t_from,
                         double t_end, double *tau);
/* Fires the group in ev->fire at tau from the left limit wm (z
** consistent): checks, composite reset into wp, the log, re-arming; and
** finds the armed guards its resets pushed clearly past zero (ev->next:
** event iteration, as Modelica's). */
int salta__events_fire(salta__events *ev, double tau, const double *wm, double *wp);
/* Makes ev->next the group to fire at the same instant (its cascade round
** one more): its size, 0 when the iteration has settled, or an error when
** it has not within SALTA__CASCADE_MAX rounds (a loop), naming its events. */
#define SALTA__CASCADE_MAX 32
int salta__events_next_round(salta__events *ev, double tau);
/* An accepted step that ended at t with no event: arms the guards that
** left their firing side in it; the next step starts from their values
** and rates at t. */
int salta__events_step_done(salta__events *ev, double t);

/* The log: event k's record and its states (borrowed, valid until the next
** start). */
static inline const double *salta__events_w_minus(const salta__events *ev, int k) {
  return ev->w_minus.v + (size_t)k * ev->dae->n;
}
static inline const double *salta__events_w_plus(const salta__events *ev, int k) {
  return ev->w_plus.v + (size_t)k * ev->dae->n;
}

#endif
