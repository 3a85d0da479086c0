/*
** cadj.c -- the continuous adjoint (see cadj.h). The adjoint carried
** backward is lam (nx): at every time t, the gradient is what has been
** collected after t plus lam(t)^T s_x(t), s the sensitivities of any
** direction. A smooth segment adds its quadratures; a datum at T adds
** h_w^T dL/dy to lam (its z part through g) and h_p^T dL/dy to the
** gradient; an event group maps lam by the transpose of its jump; the
** start gives lam(t0) for the start values, through d x0 / d p when the
** start follows the parameters.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arrays.h"
#include "cadj.h"
#include "errors.h"
#include "ida_adj.h"
#include "jump.h"
#include "sim_plan.h"
#include "sparselu.h"
#include "start.h"

struct salta__cadj_work {
  salta__dae dae;               /* the local algebra */
  salta__sens sn;               /* the jumps' scratch */
  char *err;
};

/* One evaluation. */
typedef struct cadj {
  salta__cadj_work *w;
  salta__dae *dae;
  const salta_model_def *d;
  salta__targets *tg;
  salta_sim *sim;
  const salta_sim_options *o;
  int nx, n, np, ne, nseg;
  double *b;                    /* nseg + 1 boundaries: t0, each group's time, the end */
  int *first;                   /* per group: its first event record */
  salta__ida_adj *ia;
  salta__ida_adj_opts iop;
  int *qpar;                    /* the free parameters, whose quadratures IDAS integrates */
  double *lam;                  /* n: the adjoint (x rows; z rows during a jump) */
  double *gp, *q;               /* np: the gradient's other terms; nq: the quadratures */
  double *gy, *yk, *r, *dL;     /* ny: dL/dy at a target; nout: its predictions, residuals, d(r^2)/dy */
  double *flow, *rate, *rscale; /* a group's left limit: the flow (n), the guards' rates (ne) */
  double *tau_bar;              /* ne: the members' tau_p's adjoints */
  double *alt_v, *alt_g;        /* 3 x n, 3 x np: a group's transposes in the three compositions */
  double carry;                 /* the adjoint of an instant's located tau_p, from its later rounds */
  char *err;
} cadj;

/* ---- the forward run and the loss --------------------------------------------- */

/* The predictions of target k (its planned outputs, in a->yk) and the
** loss's derivative by every output there (a->gy); adds its squares to L. */
static double target_terms(cadj *a, int k, double L) {
  const salta__targets *tg = a->tg;
  const double *y;
  int j;
  salta_sim_out(a->sim, k, NULL, NULL, NULL, &y);
  for (j = 0; j < tg->nout; ++j) a->yk[j] = y[tg->outputs[j]];
  L = salta__targets_residuals(tg, k, a->yk, a->r, a->dL, L);
  memset(a->gy, 0, sizeof(double) * (size_t)a->d->ny);
  for (j = 0; j < tg->nout; ++j) a->gy[tg->outputs[j]] += a->dL[j];
  return L;
}

/* The first prediction that is not finite, by output and time. */
static int nonfinite(cadj *a) {
  const salta__targets *tg = a->tg;
  int k, j;
  for (k = 0; k < tg->nk; ++k) {
    target_terms(a, k, 0);
    for (j = 0; j < tg->nout; ++j)
      if (!salta__targets_missing(tg, (size_t)k * tg->nout + j) && !isfinite(a->yk[j]))
        return salta__fail(a->err, SALTA_ESOLVER, "model '%s': output '%s' is %g at t = %g", a->d->name,
                           a->d->y_names[tg->outputs[j]], a->yk[j], tg->times[k]);
  }
  return salta__fail(a->err, SALTA_ESOLVER, "model '%s': the loss is not finite", a->d->name);
}

/* The forward run at the target times and the loss, at a tenth of the
** tolerances: the gradient is as accurate as the event data this run
** gives (event times, left and right limits), while the backward
** problem's tolerance and the re-runs' barely matter (measured on the
** thermostat, the spring latch and the RC network: at rtol 1e-8 this run
** at rtol takes the gradient 2e-5 from the truth, at rtol / 10 2e-7 to
** 4e-6, which the forward sensitivities' run, whose steps their own error
** control shortens, reaches at rtol). */
#define FORWARD_TIGHTER 0.1

static int forward(cadj *a, const double *p, const double *x0, double *value) {
  salta_sim_stats stats;
  salta_sim_options o = *a->o;
  double L = 0;
  int k, st;
  o.record_steps = 0;
  o.rtol = fmax(o.rtol * FORWARD_TIGHTER, 1e-14), o.atol *= FORWARD_TIGHTER;
  if ((st = salta_sim_run(a->sim, &o, p, x0, a->tg->times, a->tg->nt)))
    return salta__fail(a->err, st, "%s", salta_sim_errmsg(a->sim));
  salta_sim_stats_get(a->sim, &stats);
  if ((st = salta__targets_reach(a->tg, salta_sim_nout(a->sim), &stats, a->err))) return st;
  for (k = 0; k < a->tg->nk; ++k) L = target_terms(a, k, L);
  if (!isfinite(L)) return nonfinite(a);
  *value = L;
  return SALTA_OK;
}

/* ---- segments ----------------------------------------------------------------------- */

/* The groups of the run's event log and the segments between them. */
static int segments(cadj *a) {
  salta_sim_stats stats;
  int nev = salta_sim_nevents(a->sim), k, g = 0;
  a->b = malloc(sizeof(double) * ((size_t)nev + 2));
  a->first = malloc(sizeof(int) * ((size_t)nev + 1));
  if (!a->b || !a->first) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  a->b[0] = a->o->t0;
  for (k = 0; k < nev; ++k) {
    salta_event_record r;
    salta_sim_event(a->sim, k, &r);
    if (r.group == k) a->first[g] = k, a->b[++g] = r.t;
  }
  salta_sim_stats_get(a->sim, &stats);
  a->b[g + 1] = stats.t_end;   /* tf, or where a terminal group ended the run */
  a->nseg = g + 1;
  return SALTA_OK;
}

/* The segment of target time T: the last one starting at or before it
** (a target at an event's time sees the state after it). */
static int segment_of(const cadj *a, double T) {
  int s = a->nseg - 1;
  while (s > 0 && a->b[s] > T) --s;
  return s;
}

/* Whether segment s is too short for an integrator: its share of the
** gradient is within round-off of nothing. */
static int no_length(const cadj *a, int s) {
  return !(a->b[s + 1] - a->b[s] > 64 * 2.2e-16 * (fabs(a->b[s]) + fabs(a->b[s + 1])));
}

/* The state segment s starts from: the run's start, or the right limit of
** the group before it. */
static const double *segment_start(cadj *a, int s) {
  salta_event_record r;
  if (s == 0) return salta__sim_start_state(a->sim);
  salta_sim_event(a->sim, a->first[s - 1], &r);
  return r.x_plus;   /* [x+; z+] are contiguous */
}

/* ---- data, segments, groups ----------------------------------------------------------- */

/* The datum at target k: lam += h_w^T dL/dy with its z part through g, and
** the parameter terms. */
static int datum(cadj *a, int k) {
  const salta_model_def *d = a->d;
  double *v = a->alt_v, T;
  const double *w;
  int i, st;
  target_terms(a, k, 0);
  salta_sim_out(a->sim, k, &T, &w, NULL, NULL);
  memset(v, 0, sizeof(double) * (size_t)a->n);
  salta__dae_add_transpose(a->dae, &d->h.d[SALTA_WRT_X], T, w, 1.0, a->gy, 0, v);
  salta__dae_add_transpose(a->dae, &d->h.d[SALTA_WRT_Z], T, w, 1.0, a->gy, 0, v + a->nx);
  salta__dae_add_transpose(a->dae, &d->h.d[SALTA_WRT_P], T, w, 1.0, a->gy, 0, a->gp);
  if ((st = salta__dae_fold_z(a->dae, T, w, v, a->gp)))
    return salta__fail(a->err, st, "model '%s': continuous adjoint: g_z is singular at t = %.17g", d->name, T);
  for (i = 0; i < a->nx; ++i) a->lam[i] += v[i];
  return SALTA_OK;
}

static int lam_is_zero(const cadj *a) {
  int i;
  for (i = 0; i < a->nx; ++i)
    if (a->lam[i] != 0) return 0;
  return 1;
}

/* Segment s backward from its end, with its targets (*k: the last target
** not yet taken, counting down). */
static int segment(cadj *a, int s, int *k) {
  int st, integrate = !no_length(a, s), any = *k >= 0 && segment_of(a, a->tg->times[*k]) == s;
  const double *w;
  if (!any && lam_is_zero(a)) return SALTA_OK;   /* nothing reaches back through it */
  if (salta_interrupted())
    return salta__fail(a->err, SALTA_EINTR, "model '%s': continuous adjoint: interrupted at t = %.17g", a->d->name,
                       a->b[s + 1]);
  if (integrate && ((st = salta__ida_adj_forward(a->ia, a->b[s], segment_start(a, s), a->b[s + 1])) ||
                    (st = salta__ida_adj_restart(a->ia, a->b[s + 1], NULL, a->lam))))
    return st;
  for (; *k >= 0 && segment_of(a, a->tg->times[*k]) == s; --*k) {
    double T = a->tg->times[*k];
    if (integrate && (st = salta__ida_adj_back(a->ia, T, a->lam, a->q))) return st;
    if ((st = datum(a, *k))) return st;
    salta_sim_out(a->sim, *k, NULL, &w, NULL, NULL);
    if (integrate && (st = salta__ida_adj_restart(a->ia, T, w, a->lam))) return st;
  }
  return integrate ? salta__ida_adj_back(a->ia, a->b[s], a->lam, a->q) : SALTA_OK;
}

/* The left limit of the group starting at record r0 (rate and flow
** filled in a), its members into ev. */
static void left_limit(cadj *a, const salta_event_record *r0, int *ev, salta__left_limit *lm) {
  int q;
  for (q = 0; q < r0->group_size; ++q) {
    salta_event_record r;
    salta_sim_event(a->sim, r0->group + q, &r);
    ev[q] = r.event;
    a->rate[r.event] = r.rate, a->rscale[r.event] = r.rate_scale;
  }
  lm->w = r0->x_minus, lm->xdot = a->flow, lm->zdot = a->flow + a->nx;
  lm->rate = a->rate, lm->rscale = a->rscale, lm->ejac = NULL;
}

/* The group's transpose in one form, from lam (x rows) into alt slot
** (its v and parameter terms). */
static int transpose_as(cadj *a, const salta_event_record *r0, const salta__left_limit *lm, const int *ev,
                        salta__jump_form form, int slot, double *fixed_bar) {
  double *v = a->alt_v + (size_t)slot * a->n, *g = a->alt_g + (size_t)slot * a->np;
  salta__jump_adj adj;
  int q, st;
  memcpy(v, a->lam, sizeof(double) * (size_t)a->nx);
  memset(v + a->nx, 0, sizeof(double) * (size_t)(a->n - a->nx));
  memset(g, 0, sizeof(double) * (size_t)a->np);
  for (q = 0; q < r0->group_size; ++q) a->tau_bar[q] = 0;
  if (r0->cascade == 0) a->tau_bar[0] = a->carry;   /* the later rounds move with this instant */
  adj.v = v, adj.grad_p = g, adj.tau_bar = a->tau_bar, adj.tau_fixed_bar = 0;
  if ((st = salta__jump_transpose(&a->w->sn, r0->t, lm, r0->x_plus, ev, r0->group_size, form, &adj))) return st;
  if (fixed_bar) *fixed_bar = adj.tau_fixed_bar;
  return SALTA_OK;
}

static double max_abs(const double *v, int n) {
  double m = 0;
  int i;
  for (i = 0; i < n; ++i) m = fmax(m, fabs(v[i]));
  return m;
}

/* Whether the transposes in slots i and j agree to 1e-8 of their sizes. */
static int agree(const cadj *a, int i, int j) {
  const double *vi = a->alt_v + (size_t)i * a->n, *vj = a->alt_v + (size_t)j * a->n;
  const double *gi = a->alt_g + (size_t)i * a->np, *gj = a->alt_g + (size_t)j * a->np;
  double sv = fmax(max_abs(vi, a->n), max_abs(vj, a->n)), sg = fmax(max_abs(gi, a->np), max_abs(gj, a->np));
  int k;
  for (k = 0; k < a->n; ++k)
    if (fabs(vi[k] - vj[k]) > 1e-8 * sv) return 0;
  for (k = 0; k < a->np; ++k)
    if (fabs(gi[k] - gj[k]) > 1e-8 * sg) return 0;
  return 1;
}

/* A group whose members a direction may move apart: the slot of the
** composition that gives the forward sensitivities' jump. Members that
** commute give the same transpose in either order, which is the jump
** whether a direction moves them apart or not. */
static int choose(cadj *a, const salta_event_record *r0, const salta__left_limit *lm, const int *ev, int *slot) {
  const salta_model_def *d = a->d;
  int st, coupled;
  *slot = 0;
  if ((st = salta__dae_group_coupled(a->dae, ev, r0->group_size, r0->t, &coupled))) return st;
  if (coupled) return SALTA_OK;   /* together, unless a direction splits it */
  if ((st = transpose_as(a, r0, lm, ev, SALTA__JUMP_SEQUENCE, 1, NULL)) ||
      (st = transpose_as(a, r0, lm, ev, SALTA__JUMP_REVERSE, 2, NULL)))
    return st;
  if (agree(a, 1, 2)) return *slot = agree(a, 0, 1) ? 0 : 1, SALTA_OK;
  return salta__fail(a->err, SALTA_ENODIFF,
                     "model '%s': continuous adjoint: events '%s' and '%s' fire together at t = %.17g and their "
                     "resets do not commute (firing them in either order gives a different first-order jump), so "
                     "the gradient depends on whether a free direction moves them apart; use method = \"sens\"",
                     d->name, d->e_names[ev[0]], d->e_names[ev[r0->group_size - 1]], r0->t);
}

/* The adjoint through group g (one round of an instant), backward. */
static int group(cadj *a, int g) {
  salta_event_record r0;
  salta__left_limit lm;
  int ev[64], *members = ev, slot = 0, st, i;
  double fixed_bar = 0;
  salta_sim_event(a->sim, a->first[g], &r0);
  if (r0.group_size > 64 && !(members = malloc(sizeof(int) * (size_t)r0.group_size)))
    return salta__fail(a->err, SALTA_EMEM, "out of memory");
  left_limit(a, &r0, members, &lm);
  st = salta__dae_flow(a->dae, r0.t, r0.x_minus, a->flow, a->flow + a->nx)
           ? salta__fail(a->err, SALTA_ESOLVER, "model '%s': g_z is singular at an event at t = %.17g", a->d->name, r0.t)
           : transpose_as(a, &r0, &lm, members, r0.cascade ? SALTA__JUMP_FIXED : SALTA__JUMP_TOGETHER, 0, &fixed_bar);
  if (st == SALTA_OK && r0.cascade == 0 && r0.group_size > 1) st = choose(a, &r0, &lm, members, &slot);
  if (members != ev) free(members);
  if (st) return st;
  a->carry = r0.cascade ? a->carry + fixed_bar : 0;
  memcpy(a->lam, a->alt_v + (size_t)slot * a->n, sizeof(double) * (size_t)a->n);
  for (i = 0; i < a->np; ++i) a->gp[i] += a->alt_g[(size_t)slot * a->np + i];
  if ((st = salta__dae_fold_z(a->dae, r0.t, r0.x_minus, a->lam, a->gp)))
    return salta__fail(a->err, st, "model '%s': continuous adjoint: g_z is singular at t = %.17g", a->d->name, r0.t);
  return SALTA_OK;
}

/* ---- the sweep and the gradient ----------------------------------------------------- */

/* From the end back to t0; lam(t0) into gx0 (nx). */
static int sweep(cadj *a, double *gx0) {
  int s, st, k = a->tg->nk - 1;
  a->carry = 0;
  for (s = a->nseg - 1; s >= 0; --s) {
    if ((st = segment(a, s, &k))) return st;
    if (s > 0 && (st = group(a, s - 1))) return st;
  }
  memcpy(gx0, a->lam, sizeof(double) * (size_t)a->nx);
  return SALTA_OK;
}

/* The gradient by the directions: the parameters' terms and quadratures,
** the start values' lam(t0); each finite. */
static int gradient(cadj *a, const double *gx0, const int *dirs, int ns, double *grad) {
  int k, iq = 0;
  for (k = 0; k < ns; ++k) {
    char dir[160];
    grad[k] = dirs[k] >= 0 ? a->gp[dirs[k]] + a->q[iq++] : gx0[-dirs[k] - 1];
    if (!isfinite(grad[k]))
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': continuous adjoint: the gradient by %s is %g", a->d->name,
                         salta__dir_text(a->d, dirs[k], dir, sizeof dir), grad[k]);
  }
  return SALTA_OK;
}

/* The tolerances and solvers of the backward problems, from the options. */
static void ida_options(cadj *a, const int *dirs, int ns) {
  const salta_sim_options *o = a->o;
  salta__ida_adj_opts *io = &a->iop;
  int k;
  io->o = o;
  io->linear_solver = salta__use_klu(o, a->n) ? SALTA_LS_KLU : SALTA_LS_DENSE;
  io->rtol_b = o->adjoint_rtol > 0 ? o->adjoint_rtol : o->rtol;
  io->atol_b = o->adjoint_atol > 0 ? o->adjoint_atol : o->atol;
  io->rtol_q = o->quad_rtol > 0 ? o->quad_rtol : io->rtol_b;
  io->atol_q = o->quad_atol > 0 ? o->quad_atol : io->atol_b;
  io->checkpoint_steps = o->checkpoint_steps;
  io->nq = 0;
  for (k = 0; k < ns; ++k)
    if (dirs[k] >= 0) a->qpar[io->nq++] = dirs[k];
  io->qpar = a->qpar;
}

#define CADJ_ARRAYS 14
static size_t cadj_arrays(cadj *a, int ns, salta__array *list) {
  size_t n = (size_t)a->n, np = (size_t)a->np, ne = (size_t)a->ne, ny = (size_t)a->d->ny, nout = (size_t)a->tg->nout;
  salta__array all[CADJ_ARRAYS] = {
    SALTA__ARRAY(a->qpar, (size_t)ns), SALTA__ARRAY(a->lam, n), SALTA__ARRAY(a->gp, np), SALTA__ARRAY(a->q, (size_t)ns),
    SALTA__ARRAY(a->gy, ny), SALTA__ARRAY(a->yk, nout), SALTA__ARRAY(a->r, nout), SALTA__ARRAY(a->dL, nout),
    SALTA__ARRAY(a->flow, n), SALTA__ARRAY(a->rate, ne), SALTA__ARRAY(a->rscale, ne), SALTA__ARRAY(a->tau_bar, ne),
    SALTA__ARRAY(a->alt_v, 3 * n), SALTA__ARRAY(a->alt_g, 3 * np)};
  memcpy(list, all, sizeof all);
  return CADJ_ARRAYS;
}

/* The gradient once the forward run is made. */
static int backward(cadj *a, const double *p, const double *x0, const int *dirs, int ns, double *grad) {
  double *gx0 = malloc(sizeof(double) * ((size_t)a->nx + 1));
  int st;
  if (!gx0) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  ida_options(a, dirs, ns);
  st = segments(a);
  if (st == SALTA_OK) st = salta__ida_adj_create(&a->ia, a->dae, &a->iop);
  if (st == SALTA_OK) st = sweep(a, gx0);
  if (st == SALTA_OK && salta__start_follows_p(a->d, x0)) st = salta__start_chain(a->d, a->o->t0, p, gx0, a->gp, a->err);
  if (st == SALTA_OK) st = gradient(a, gx0, dirs, ns, grad);
  free(gx0);
  return st;
}

int salta__cadj_eval(salta__cadj_work *w, salta__targets *tg, salta_sim *sim, const salta_sim_options *o,
                     const double *p, const double *x0, const int *dirs, int ns, double *value, double *grad) {
  salta__array list[CADJ_ARRAYS];
  cadj a;
  double v = 0;
  int st;
  memset(&a, 0, sizeof a);
  a.w = w, a.dae = &w->dae, a.d = w->dae.d, a.tg = tg, a.sim = sim, a.o = o, a.err = w->err;
  a.nx = a.d->nx, a.n = a.d->nx + a.d->nz, a.np = a.d->np, a.ne = a.d->ne;
  if (tg->beta > 0)
    return salta__fail(a.err, SALTA_EINPUT, "model '%s': the continuous adjoint does not blend (blend = %g); use "
                       "method = \"sens\"", a.d->name, tg->beta);
  if (salta__arrays_alloc(list, cadj_arrays(&a, ns, list))) return salta__fail(a.err, SALTA_EMEM, "out of memory");
  salta__dae_set_params(a.dae, p);
  st = forward(&a, p, x0, &v);
  if (st == SALTA_OK && grad) st = backward(&a, p, x0, dirs, ns, grad);
  if (st == SALTA_OK && value) *value = v;
  salta__ida_adj_free(&a.ia);
  free(a.b), free(a.first);
  salta__arrays_free(list, cadj_arrays(&a, ns, list));
  salta__dae_set_params(a.dae, NULL);
  return st;
}

int salta__cadj_work_new(salta__cadj_work **out, const salta_model_def *d, char *err) {
  salta__cadj_work *w = calloc(1, sizeof *w);
  int st;
  *out = NULL;
  if (!w) return salta__fail(err, SALTA_EMEM, "out of memory");
  w->err = err;
  if ((st = salta__dae_init(&w->dae, d, err))) {
    free(w);
    return st;
  }
  if ((st = salta__sens_init(&w->sn, &w->dae, NULL, 0))) {
    salta__dae_free(&w->dae);
    free(w);
    return st;
  }
  *out = w;
  return SALTA_OK;
}

void salta__cadj_work_free(salta__cadj_work **w) {
  if (!w || !*w) return;
  salta__sens_free(&(*w)->sn);
  salta__dae_free(&(*w)->dae);
  free(*w);
  *w = NULL;
}
