/*
** cadj_sweep.c -- the continuous adjoint's backward sweep (see cadj.h,
** cadj_impl.h). The adjoint carried backward is lam (nx): at every time
** t, the gradient is what has been collected after t plus lam(t)^T s_x(t),
** s the sensitivities of any direction. A smooth segment adds its
** quadratures; a datum at T adds h_w^T dL/dy to lam (its z part through g)
** and h_p^T dL/dy to the gradient; an event group maps lam by the
** transpose of its jump; the start gives lam(t0) for the start values,
** through d x0 / d p when the start follows the parameters.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cadj_impl.h"
#include "errors.h"
#include "sim_plan.h"
#include "start.h"
#include "tol.h"

/* ---- data and segments ----------------------------------------------------------- */

double salta__cadj_target(salta__cadj *a, int k, double L) {
  const salta__targets *tg = a->tg;
  const double *y;
  salta__resid res = {a->r, a->dr, a->dL, a->rs};
  int j;
  salta_sim_out(a->sim, k, NULL, NULL, NULL, &y);
  for (j = 0; j < tg->nout; ++j) a->yk[j] = y[tg->outputs[j]];
  L = salta__targets_residuals(tg, k, a->yk, NULL, &res, L);
  memset(a->gy, 0, sizeof(double) * (size_t)a->d->ny);
  for (j = 0; j < tg->nout; ++j) a->gy[tg->outputs[j]] += a->dL[j];
  return L;
}

/* The groups of the run's event log and the segments between them. */
int salta__cadj_segments(salta__cadj *a) {
  salta_sim_stats stats;
  int nev = salta_sim_nevents(a->sim), k, g = 0;
  a->b = malloc(sizeof(double) * ((size_t)nev + 2));
  a->first = malloc(sizeof(int) * ((size_t)nev + 1));
  a->split = calloc((size_t)nev + 1, sizeof(int));
  a->split_dir = calloc((size_t)nev + 1, sizeof(int));
  if (!a->b || !a->first || !a->split || !a->split_dir) return salta__fail(a->err, SALTA_EMEM, "out of memory");
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
static int segment_of(const salta__cadj *a, double T) {
  int s = a->nseg - 1;
  while (s > 0 && a->b[s] > T) --s;
  return s;
}

/* Whether segment s is too short for an integrator: its share of the
** gradient is within round-off of nothing. */
static int no_length(const salta__cadj *a, int s) {
  return !(a->b[s + 1] - a->b[s] > 64 * 2.2e-16 * (fabs(a->b[s]) + fabs(a->b[s + 1])));
}

/* The state segment s starts from: the run's start, or the right limit of
** the group before it. */
static const double *segment_start(salta__cadj *a, int s) {
  salta_event_record r;
  if (s == 0) return salta__sim_start_state(a->sim);
  salta_sim_event(a->sim, a->first[s - 1], &r);
  return r.x_plus;   /* [x+; z+] are contiguous */
}

/* ---- segments backward and groups ------------------------------------------------ */

/* The datum at target k: lam += h_w^T dL/dy with its z part through g, and
** the parameter terms. */
static int datum(salta__cadj *a, int k) {
  const salta_model_def *d = a->d;
  double *v = a->alt_v, T;
  const double *w;
  int i, st;
  salta__cadj_target(a, k, 0);
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

static int lam_is_zero(const salta__cadj *a) {
  int i;
  for (i = 0; i < a->nx; ++i)
    if (a->lam[i] != 0) return 0;
  return 1;
}

/* Segment s backward from its end, with its targets (*k: the last target
** not yet taken, counting down). */
static int segment(salta__cadj *a, int s, int *k) {
  int st, integrate = !no_length(a, s), any = *k >= 0 && segment_of(a, a->tg->times[*k]) == s;
  const salta__backward_ops *bw = a->bw.ops;
  const double *w;
  if (!any && lam_is_zero(a)) return SALTA_OK;   /* nothing reaches back through it */
  if (salta_interrupted())
    return salta__cadj_interrupted(a->err, a->d->name, a->b[s + 1]);
  if (integrate && ((st = bw->forward(a->bw.self, a->b[s], segment_start(a, s), a->b[s + 1])) ||
                    (st = bw->restart(a->bw.self, a->b[s + 1], NULL, a->lam))))
    return st;
  for (; *k >= 0 && segment_of(a, a->tg->times[*k]) == s; --*k) {
    double T = a->tg->times[*k];
    if (integrate && (st = bw->back(a->bw.self, T, a->lam, a->q))) return st;
    if ((st = datum(a, *k))) return st;
    salta_sim_out(a->sim, *k, NULL, &w, NULL, NULL);
    if (integrate && (st = bw->restart(a->bw.self, T, w, a->lam))) return st;
  }
  return integrate ? bw->back(a->bw.self, a->b[s], a->lam, a->q) : SALTA_OK;
}

/* The left limit of the group starting at record r0 (rate and flow
** filled in a), its members into ev. */
static void left_limit(salta__cadj *a, const salta_event_record *r0, int *ev, salta__left_limit *lm) {
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
static int transpose_as(salta__cadj *a, const salta_event_record *r0, const salta__left_limit *lm, const int *ev,
                        salta__jump_form form, int slot, double *fixed_bar) {
  double *v = a->alt_v + (size_t)slot * a->n, *g = a->alt_g + (size_t)slot * a->np;
  salta__jump_adj adj;
  int q, st;
  memcpy(v, a->lam, sizeof(double) * (size_t)a->nx);
  memset(v + a->nx, 0, sizeof(double) * (size_t)(a->n - a->nx));
  memset(g, 0, sizeof(double) * (size_t)a->np);
  for (q = 0; q < r0->group_size; ++q) a->tau_bar[q] = a->rec_bar ? a->rec_bar[r0->group + q] : 0;   /* event data */
  if (r0->cascade == 0) a->tau_bar[0] += a->carry;   /* the later rounds move with this instant */
  adj.v = v, adj.grad_p = g, adj.tau_bar = a->tau_bar, adj.tau_fixed_bar = 0;
  if ((st = salta__jump_transpose(&a->w->sn, r0->t, lm, r0->x_plus, ev, r0->group_size, form, &adj))) return st;
  if (fixed_bar) *fixed_bar = adj.tau_fixed_bar;
  return SALTA_OK;
}

/* Whether the transposes in slots i and j agree to 1e-8 of their sizes. */
static int agree(const salta__cadj *a, int i, int j) {
  const double *vi = a->alt_v + (size_t)i * a->n, *vj = a->alt_v + (size_t)j * a->n;
  const double *gi = a->alt_g + (size_t)i * a->np, *gj = a->alt_g + (size_t)j * a->np;
  double sv = fmax(salta__max_abs(vi, a->n), salta__max_abs(vj, a->n)), sg = fmax(salta__max_abs(gi, a->np), salta__max_abs(gj, a->np));
  int k;
  for (k = 0; k < a->n; ++k)
    if (fabs(vi[k] - vj[k]) > 1e-8 * sv) return 0;
  for (k = 0; k < a->np; ++k)
    if (fabs(gi[k] - gj[k]) > 1e-8 * sg) return 0;
  return 1;
}

/* The left limit of group g (its first record r0, members into ev). */
static int group_limit(salta__cadj *a, const salta_event_record *r0, int *ev, salta__left_limit *lm) {
  left_limit(a, r0, ev, lm);
  if (salta__dae_flow(a->dae, r0->t, r0->x_minus, a->flow, a->flow + a->nx))
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': g_z is singular at an event at t = %.17g", a->d->name, r0->t);
  return SALTA_OK;
}

/* ---- a group a direction may split ------------------------------------------------ */

static int sweep_from(salta__cadj *a, int s_last, int k);
static int gradient(salta__cadj *a, double *grad);

/* The state of a sweep, kept across a sweep of its own. */
typedef struct saved { double *lam, *gp, *q, carry; } saved;

static int save(salta__cadj *a, saved *sv) {
  sv->lam = malloc(sizeof(double) * (size_t)a->n), sv->gp = malloc(sizeof(double) * ((size_t)a->np + 1));
  sv->q = malloc(sizeof(double) * ((size_t)a->ns + 1));
  if (!sv->lam || !sv->gp || !sv->q) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  memcpy(sv->lam, a->lam, sizeof(double) * (size_t)a->n), memcpy(sv->gp, a->gp, sizeof(double) * (size_t)a->np);
  memcpy(sv->q, a->q, sizeof(double) * (size_t)a->ns), sv->carry = a->carry;
  return SALTA_OK;
}

static void restore(salta__cadj *a, saved *sv) {
  if (sv->lam && sv->gp && sv->q) {
    memcpy(a->lam, sv->lam, sizeof(double) * (size_t)a->n), memcpy(a->gp, sv->gp, sizeof(double) * (size_t)a->np);
    memcpy(a->q, sv->q, sizeof(double) * (size_t)a->ns), a->carry = sv->carry;
  }
  free(sv->lam), free(sv->gp), free(sv->q);
}

/* The gradient by the free directions (out, ns) of member j's event time
** tau_j = -(e_w s- + e_p) / rate at the left limit of group g: a sweep of
** its own from there back to t0, without data. */
static int time_gradient(salta__cadj *a, int g, const salta_event_record *r0, const salta__left_limit *lm, int j,
                         double *out) {
  double rate = lm->rate[j], *data = a->rec_bar;
  int i, st;
  memset(a->q, 0, sizeof(double) * (size_t)a->ns);
  salta__dae_guard_row(a->dae, j, r0->t, lm->w, NULL, a->lam, a->gp);
  for (i = 0; i < a->n; ++i) a->lam[i] /= -rate;
  for (i = 0; i < a->np; ++i) a->gp[i] /= -rate;
  a->carry = 0;
  if ((st = salta__dae_fold_z(a->dae, r0->t, lm->w, a->lam, a->gp)))
    return salta__fail(a->err, st, "model '%s': continuous adjoint: g_z is singular at t = %.17g", a->d->name, r0->t);
  a->rec_bar = NULL;   /* the event time alone: no data */
  if ((st = sweep_from(a, g, -1)) == SALTA_OK) st = gradient(a, out);
  a->rec_bar = data;
  return st;
}

/* How far apart the free directions move the members' event times T
** (nev x ns): the largest spread of a direction's entries, each taken per
** relative change of its parameter (or start value; 1 near 0) and as a
** fraction of the run; *dir the direction. The sweeps are accurate to
** their tolerance, not to the rounding the forward sensitivities compare
** their tau_p to (1e-10 of the largest): a direction whose parameter
** leaves an event time's gradient at 0 gives their noise (the members'
** 4e-8 and 1e-8 on a pair of stops at rtol 1e-8). */
static double spread(const salta__cadj *a, const double *T, int nev, int *dir) {
  double worst = 0, span = a->b[a->nseg] - a->b[0];
  int k, q;
  for (k = 0; k < a->ns; ++k) {
    int d = a->dirs[k];
    double lo = T[k], hi = T[k], scale = fmax(fabs(d >= 0 ? a->p[d] : salta__sim_start_state(a->sim)[-d - 1]), 1e-300);
    for (q = 0; q < nev; ++q) lo = fmin(lo, T[(size_t)q * a->ns + k]), hi = fmax(hi, T[(size_t)q * a->ns + k]);
    if (scale == 1e-300) scale = 1;
    if ((hi - lo) * scale / span > worst) worst = (hi - lo) * scale / span, *dir = k;
  }
  return worst;
}

/* Whether a free direction moves the members of group g apart (cached per
** group): every member's event time by every free direction, a sweep each. */
static int splits(salta__cadj *a, int g, const salta_event_record *r0, salta__left_limit *lm, int *ev, int *dir) {
  int nev = r0->group_size, q, st = SALTA_OK;
  double *T, tol = fmax(1e-10, 100 * a->bop.rtol_b);
  saved sv = {NULL, NULL, NULL, 0};
  if (a->split[g]) return *dir = a->split_dir[g], a->split[g] == SALTA__SPLIT_YES;
  if (!(T = malloc(sizeof(double) * (size_t)nev * (size_t)(a->ns + 1)))) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  if ((st = save(a, &sv)) == SALTA_OK)
    for (q = 0; q < nev && st == SALTA_OK; ++q)   /* each sweep uses the left limit's scratch */
      if ((st = group_limit(a, r0, ev, lm)) == SALTA_OK) st = time_gradient(a, g, r0, lm, ev[q], T + (size_t)q * a->ns);
  restore(a, &sv);
  if (st == SALTA_OK) {
    a->split_dir[g] = 0;
    a->split[g] = spread(a, T, nev, &a->split_dir[g]) > tol ? SALTA__SPLIT_YES : SALTA__SPLIT_NO;
    *dir = a->split_dir[g];
  }
  free(T);
  return st ? st : a->split[g] == SALTA__SPLIT_YES;
}

static int not_differentiable(salta__cadj *a, const salta_event_record *r0, const int *ev, int k, const char *why) {
  char dir[160];
  return salta__fail(a->err, SALTA_ENODIFF, "model '%s': events '%s' and '%s' fire together at t = %.17g, and %s moves "
                     "them apart; %s, so the loss is not differentiable there", a->d->name, a->d->e_names[ev[0]],
                     a->d->e_names[ev[r0->group_size - 1]], r0->t, salta__dir_text(a->d, a->dirs[k], dir, sizeof dir),
                     why);
}

/* The composition of a group of several members that gives the forward
** sensitivities' jump (*slot: 0 together, 1 in sequence), or the error
** they report. Members that commute (the same transpose in either order)
** are composed in sequence, which is the jump whether a direction moves
** them apart or not; others only together, unless a direction splits them. */
static int choose(salta__cadj *a, int g, const salta_event_record *r0, salta__left_limit *lm, int *ev, int *slot) {
  int st, coupled, dir = 0;
  *slot = 0;
  if ((st = salta__dae_group_coupled(a->dae, ev, r0->group_size, r0->t, &coupled))) return st;
  if (!coupled) {
    if ((st = transpose_as(a, r0, lm, ev, SALTA__JUMP_TOGETHER, 0, NULL)) ||
        (st = transpose_as(a, r0, lm, ev, SALTA__JUMP_SEQUENCE, 1, NULL)) ||
        (st = transpose_as(a, r0, lm, ev, SALTA__JUMP_REVERSE, 2, NULL)))
      return st;
    if (agree(a, 1, 2)) return *slot = agree(a, 0, 1) ? 0 : 1, SALTA_OK;
  }
  if ((st = splits(a, g, r0, lm, ev, &dir)) <= 0) return st;
  return not_differentiable(a, r0, ev, dir, coupled ? "a member's reset or guard reads a state another's reset sets, "
                            "so the order of firing changes the state after them" : "their resets do not commute "
                            "(firing them in either order gives a different first-order jump)");
}

/* The adjoint through group g (one round of an instant), backward. */
static int group(salta__cadj *a, int g) {
  static const salta__jump_form forms[2] = {SALTA__JUMP_TOGETHER, SALTA__JUMP_SEQUENCE};
  salta_event_record r0;
  salta__left_limit lm;
  int ev[64], *members = ev, slot = 0, st, i;
  double fixed_bar = 0;
  salta_sim_event(a->sim, a->first[g], &r0);
  if (r0.group_size > 64 && !(members = malloc(sizeof(int) * (size_t)r0.group_size)))
    return salta__fail(a->err, SALTA_EMEM, "out of memory");
  st = group_limit(a, &r0, members, &lm);
  if (st == SALTA_OK && r0.cascade == 0 && r0.group_size > 1 && (st = choose(a, g, &r0, &lm, members, &slot)) == SALTA_OK)
    st = group_limit(a, &r0, members, &lm);   /* a split's sweeps used the scratch */
  if (st == SALTA_OK)
    st = transpose_as(a, &r0, &lm, members, r0.cascade ? SALTA__JUMP_FIXED : forms[slot], slot, &fixed_bar);
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

/* From the end of segment s_last back to t0, with the targets from k down
** (k = -1: none); lam(t0) into a->gx0. */
static int sweep_from(salta__cadj *a, int s_last, int k) {
  int s, st;
  for (s = s_last; s >= 0; --s) {
    if ((st = segment(a, s, &k))) return st;
    if (s > 0 && (st = group(a, s - 1))) return st;
  }
  memcpy(a->gx0, a->lam, sizeof(double) * (size_t)a->nx);
  return SALTA_OK;
}

/* The gradient by the free directions after a sweep: the parameters' terms
** and quadratures, and lam(t0) for the start values (through d x0 / d p
** when the start follows the parameters); each finite. */
static int gradient(salta__cadj *a, double *grad) {
  int k, iq = 0, st;
  if (salta__start_follows_p(a->d, a->x0) &&
      (st = salta__start_chain(a->d, a->o->t0, a->p, a->gx0, a->gp, a->err)))
    return st;
  for (k = 0; k < a->ns; ++k) {
    char dir[160];
    int d = a->dirs[k];
    grad[k] = d >= 0 ? a->gp[d] + a->q[iq++] : a->gx0[-d - 1];
    if (!isfinite(grad[k]))
      return salta__fail(a->err, SALTA_ESOLVER, "model '%s': continuous adjoint: the gradient by %s is %g", a->d->name,
                         salta__dir_text(a->d, d, dir, sizeof dir), grad[k]);
  }
  return SALTA_OK;
}

int salta__cadj_gradient(salta__cadj *a, double *grad) {
  int st;
  memset(a->lam, 0, sizeof(double) * (size_t)a->n);
  memset(a->gp, 0, sizeof(double) * (size_t)a->np);
  memset(a->q, 0, sizeof(double) * (size_t)a->ns);
  a->carry = 0;
  if ((st = sweep_from(a, a->nseg - 1, a->tg->nk - 1))) return st;
  return gradient(a, grad);
}
