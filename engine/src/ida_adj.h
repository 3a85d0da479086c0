/*
** ida_adj.h -- IDAS's adjoint module on one event-free segment (internal):
** the forward run over the segment with checkpoints every so many steps
** (IDAAdjInit, IDASolveF), then the backward DAE of the continuous adjoint
** of F = [x' - f; g] = 0 from the segment's end (IDASolveB),
**   lam_x' = -f_x^T lam_x + g_x^T lam_z,     0 = f_z^T lam_x - g_z^T lam_z,
** with the quadratures q = int (lam_x^T f_p - lam_z^T g_p) dt of chosen
** parameters, so that across the segment [a, b]
**   lam_x(b)^T s_x(b) = lam_x(a)^T s_x(a) + q   for every direction s.
** The quadratures are differential unknowns of the backward DAE, not
** IDAS's quadratures: IDAS picks its order from the unknowns alone, and an
** adjoint that is a polynomial (free flight) drops it to 1, where the
** quadratures' error then sets tiny steps (found by test: a linear adjoint
** lost 2e-6 of its integral at rtol 1e-10 in 30,000 steps). Its Newton
** systems are block triangular; their adjoint block is the transpose of
** the forward iteration matrix, factored as the forward problem's is. The
** algebraic adjoint is made consistent (lam_z = g_z^-T f_z^T lam_x) at
** every (re)start, and the problem is solved for lam / max |lam_x| (it is
** linear), so that its absolute tolerances are relative to its size.
*/
#ifndef SALTA_IDA_ADJ_H
#define SALTA_IDA_ADJ_H

#include "dae.h"

typedef struct salta__ida_adj salta__ida_adj;

/* What the problem is solved with. */
typedef struct salta__ida_adj_opts {
  const salta_sim_options *o;   /* the forward run's tolerances and steps (borrowed) */
  int linear_solver;            /* SALTA_LS_DENSE or SALTA_LS_KLU, resolved */
  double rtol_b, atol_b;        /* the backward problem's tolerances: of the adjoint */
  double rtol_q, atol_q;        /* and of its quadratures */
  int checkpoint_steps;         /* forward steps between checkpoints */
  const int *qpar;              /* the parameters whose quadratures are integrated (nq, borrowed) */
  int nq;
} salta__ida_adj_opts;

/* Returns owned (*out NULL on failure, the message in dae->err). Borrows
** dae and opts for its life. */
int salta__ida_adj_create(salta__ida_adj **out, salta__dae *dae, const salta__ida_adj_opts *opts);
void salta__ida_adj_free(salta__ida_adj **c);

/* The checkpointed forward run from the consistent state w0 at t0 to t1
** (t0 < t1). */
int salta__ida_adj_forward(salta__ida_adj *c, double t0, const double *w0, double t1);
/* (Re)starts the backward problem at t inside the last forward run from
** lam_x (nx), consistent at the forward state w there (NULL: the forward
** run's end, when t is its end). */
int salta__ida_adj_restart(salta__ida_adj *c, double t, const double *w, const double *lam_x);
/* Integrates backward to t (not before the forward run's start): lam_x
** (nx) there, and q (nq) += the quadratures since the last restart. */
int salta__ida_adj_back(salta__ida_adj *c, double t, double *lam_x, double *q);

/* Counters: forward and backward steps since the object was made. */
void salta__ida_adj_steps(salta__ida_adj *c, long *forward, long *backward);

#endif
