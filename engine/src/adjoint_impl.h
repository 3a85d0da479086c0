/*
** adjoint_impl.h -- the event-split discrete adjoint's state (internal),
** shared by adjoint.c (the mesh and the discrete forward trajectory) and
** adjoint_sweep.c (the discrete loss and the backward sweep).
**
** The trajectory of a forward run is cut at its event groups into
** segments; each segment carries trapezoidal residuals on a mesh whose node
** times stretch with the event times,
**   R_i = [x_i+1 - x_i - h_i/2 (f_i + f_i+1); g(t_i+1, w_i+1)],
** and each event block the group's first guard (its time), the composite
** reset (every state: those no member resets map to themselves) and the
** post-event algebraic equations. A located group whose members commute
** (no member reads what another sets) is split into a sequence of
** single-member blocks with zero-length segments between them, so that
** each member has its own time and the flows between members enter.
*/
#ifndef SALTA_ADJOINT_IMPL_H
#define SALTA_ADJOINT_IMPL_H

#include "adjoint.h"
#include "dae.h"
#include "errors.h"
#include "sparselu.h"
#include "targets.h"
#include "track.h"

/* What an adjoint keeps between evaluations. */
struct salta__adj_work {
  salta__dae dae;               /* the local algebra */
};

typedef struct salta__adj_seg {
  int node0, m;                 /* first node index, number of steps */
  int first, count;             /* its closing group: events[first .. first + count); 0 for the last */
  int cascade;                  /* that group is a round of event iteration: its time is the
                                   previous group's, and the segment has zero length */
  int follows;                  /* its event is a later member of a group split into a
                                   sequence (members that commute, each with its own time):
                                   the segment starts at the previous member's instant, with
                                   zero length, and only its own guard sets its end's time */
} salta__adj_seg;

typedef struct salta__adj {
  const salta__targets *tg;     /* what the discrete loss compares */
  salta__dae *dae;
  salta__track track;           /* the march's algebraics stay on the forward run's branch */
  const salta_sim_options *o;   /* the forward run's options */
  const salta_model_def *d;
  const double *p, *x0;
  int nx, nz, n, np, nseg, nnodes;
  salta__adj_seg *segs;
  int *events;                  /* the members of every group, in order */
  int *rec_bound;               /* per event record: the boundary (index of tau) that is its time */
  int end_bound;                /* the boundary where the run ends: a terminal event's, or nseg (tf) */
  int ends_at_event;            /* the run ended at its last group (a terminal event, a loss's stop
                                   rule): the last segment has no length, its end follows that time */
  double *tau;                  /* nseg + 1 boundaries: t0, the group times, tf */
  double *tau_run;              /* the same as the forward run found them: a target belongs to
                                   the segment the run put it in, whatever the discrete times */
  double *sigma;                /* per node: its fraction of its segment */
  int mesh_fail;                /* the segment whose mesh failed the discrete solve, or -1 */
  double *w;                    /* per node: [x; z] */
  /* step matrices: the sweep's (dense or KLU) and the forward march's,
  ** kept across Newton iterations and steps while Newton contracts fast */
  int sparse;
  double *A;                    /* dense n x n, factored */
  int *piv;
  double *Af, hf;               /* the march's dense matrix, its step size */
  int *piv_f, af_valid;
  salta__pattern pat;
  double *Ax;                   /* values on the pattern */
  salta__sparselu *lu_march, *lu_sweep;
  /* vectors */
  double *step_res;             /* n: a step's residual, then its Newton step */
  double *fa, *fb;              /* n: f at a step's two nodes */
  double *guards;               /* ne: the guards at a segment's last node */
  double *flow, *rate, *rscale; /* the flow at an event's left limit; guard rates there */
  double *ew, *ep;              /* the lead guard's row (n, np) */
  double *dR;                   /* n: a step residual's derivative by a segment end */
  double *tterm;                /* n: time-derivative terms at a point */
  double *gt;                   /* nz: g_t at a point */
  double *dLdz;                 /* nz: g_z^-T dL/dz at a target */
  /* the discrete loss */
  double *gy;                   /* ny: dL/dyhat at a target */
  double *yk, *r, *dL;          /* nout: a target's predictions, residuals, and d(r^2)/dy */
  double *dr, *rs;              /* nout: dr/dy, and the residuals before their window factors */
  salta__blend bl;              /* blended: the weights at a target (nseg) */
  double *ys;                   /* blended: per segment its outputs (ny + 1 apart) */
  double *resid;                /* out, or NULL: the discrete loss's residuals in salta_loss_eval's
                                   layout (tg->nres: finite data only, output rows first) */
  char *err;
} salta__adj;

static inline double *salta__adj_node(const salta__adj *a, int k) { return a->w + (size_t)k * a->n; }

static inline double salta__adj_time(const salta__adj *a, int s, int i) {
  double sg = a->sigma[a->segs[s].node0 + i];
  return (1 - sg) * a->tau[s] + sg * a->tau[s + 1];
}

/* adjoint_sweep.c: Newton on g at (t, w) (w in/out), failing with the
** adjoint's message; and the discrete loss (value) with, when want_grad,
** its gradient by parameters and initial states, by the backward sweep
** over the solved discrete trajectory (grad_p, grad_x0: buffers either
** way). A step's matrix dR/dw_next is the DAE's iteration matrix with
** alpha = 1, beta = h/2. */
int salta__adj_solve_z(salta__adj *a, double t, double *w);
int salta__adj_sweep(salta__adj *a, double *value, double *grad_p, double *grad_x0, int want_grad);

#endif
