/*
** cadj_impl.h -- the continuous adjoint's working state (internal), shared
** by cadj.c (the forward run, the loss, the entry) and cadj_sweep.c (the
** backward sweep: segments, data, event groups).
*/
#ifndef SALTA_CADJ_IMPL_H
#define SALTA_CADJ_IMPL_H

#include "cadj.h"
#include "backward.h"
#include "jump.h"

struct salta__cadj_work {
  salta__dae dae;               /* the local algebra */
  salta__sens sn;               /* the jumps' scratch */
  char *err;
};

/* Whether a group's members may be moved apart by a free direction:
** unknown until a sweep needs to know. */
enum { SALTA__SPLIT_UNKNOWN = 0, SALTA__SPLIT_NO = 1, SALTA__SPLIT_YES = 2 };

/* One evaluation. */
typedef struct salta__cadj {
  salta__cadj_work *w;
  salta__dae *dae;
  const salta_model_def *d;
  salta__targets *tg;
  salta_sim *sim;
  const salta_sim_options *o;
  const double *p, *x0;
  const int *dirs;              /* the free directions (ns) */
  int ns, nx, n, np, ne, nseg;
  double *b;                    /* nseg + 1 boundaries: t0, each group's time, the end */
  int *first;                   /* per group: its first event record */
  int *split, *split_dir;       /* per group: SALTA__SPLIT_*, and the free direction that splits it most */
  salta__backward bw;           /* the segments' backward problems */
  salta__backward_opts bop;
  int *qpar;                    /* the free parameters, whose quadratures the backward problem carries */
  double *lam;                  /* n: the adjoint (x rows; z rows during a jump) */
  double *gp, *q;               /* np: the gradient's other terms; nq: the quadratures */
  double *gx0;                  /* nx: the gradient by the start state */
  double *gy, *yk;              /* ny: dL/dy at a target; nout: its predictions */
  double *r, *dr, *dL, *rs;     /* nout: its residuals and their parts (salta__resid) */
  double *flow, *rate, *rscale; /* a group's left limit: the flow (n), the guards' rates (ne) */
  double *tau_bar;              /* ne: the members' tau_p's adjoints */
  double *rec_bar;              /* per event record of the run: dL / d its time, from the event data
                                   (NULL: none, or a sweep for one event time alone) */
  double *alt_v, *alt_g;        /* 3 x n, 3 x np: a group's transposes in the three compositions */
  double carry;                 /* the adjoint of an instant's located tau_p, from its later rounds */
  char *err;
} salta__cadj;

/* cadj_sweep.c: target k's predictions (a->yk) and the loss's derivative
** by every output there (a->gy), its squares added to L; the groups and
** segments of the forward run; and the sweep from the end back to t0,
** with the gradient by the free directions into grad (ns). */
double salta__cadj_target(salta__cadj *a, int k, double L);
int salta__cadj_segments(salta__cadj *a);
int salta__cadj_gradient(salta__cadj *a, double *grad);

#endif
