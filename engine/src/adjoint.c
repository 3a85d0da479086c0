/*
** adjoint.c -- the event-split discrete adjoint (see adjoint_impl.h): the
** mesh from a forward run, the discrete trajectory re-solved so that its
** residuals hold to Newton tolerance ("consistent"), and the entry point.
** The backward sweep is in adjoint_sweep.c: the gradient of the discrete
** loss costs one sweep whatever the number of parameters.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adjoint_impl.h"
#include "arrays.h"
#include "linsol.h"
#include "sens.h"
#include "sim_plan.h"
#include "start.h"

/* ---- the consistent discrete forward ---------------------------------------- */

/* Factors the step matrix for step h ending at (t1, w1) for the march. */
static int factor_march(salta__adj *a, double t1, const double *w1, double h) {
  if (a->sparse)
    a->af_valid = salta__dae_iter_sparse(a->dae, &a->pat, t1, w1, 1.0, h / 2, a->Ax) == SALTA_OK &&
                  salta__sparselu_factor(a->lu_march, a->Ax, NULL) == SALTA_OK;
  else
    a->af_valid = salta__dae_iter_dense(a->dae, t1, w1, 1.0, h / 2, a->Af) == SALTA_OK &&
                  salta__lu_factor(a->n, a->Af, a->piv_f, NULL) == SALTA_OK;
  a->hf = h;
  return a->af_valid ? 0 : -1;
}

/* One trapezoidal step: w1 (in: guess, out: solution) from (t0, w0) to t1.
** Newton with the step matrix of an earlier iterate or step (modified
** Newton): refactored when h changes by more than 10 %, when an iteration
** contracts by less than 4, or when it produces a non-finite value; the
** solution is that of the residuals whatever the matrix. */
static int trapezoid(salta__adj *a, double t0, const double *w0, double t1, double *w1) {
  const salta_model_def *d = a->d;
  double *r = a->step_res, h = t1 - t0, dprev = HUGE_VAL;
  int n = a->n, nx = a->nx, it, i, fresh = 0;
  a->dae->bad.sp = NULL;
  d->f.eval(t0, w0, w0 + nx, a->p, a->fa);
  if (a->af_valid && !(fabs(h - a->hf) <= 0.1 * fabs(h))) a->af_valid = 0;
  for (it = 0; it < 30; ++it) {
    double dmax = 0, wmax = 0;
    d->f.eval(t1, w1, w1 + nx, a->p, a->fb);
    for (i = 0; i < nx; ++i) r[i] = w1[i] - w0[i] - h / 2 * (a->fa[i] + a->fb[i]);
    if (a->nz) d->g.eval(t1, w1, w1 + nx, a->p, r + nx);
    if (!a->af_valid) {
      if (factor_march(a, t1, w1, h)) break;
      fresh = 1;
    }
    if (a->sparse) salta__sparselu_solve(a->lu_march, r, 0);
    else salta__lu_solve(n, a->Af, a->piv_f, r, 1, 0);
    for (i = 0; i < n; ++i) {
      if (!(fabs(r[i]) <= dmax)) dmax = fabs(r[i]);   /* NaN propagates, unlike fmax */
      wmax = fmax(wmax, fabs(w1[i] - r[i]));
    }
    if (!isfinite(dmax)) {
      if (fresh) break;
      a->af_valid = 0;   /* a stale matrix: retry this iterate with a fresh one */
      continue;
    }
    for (i = 0; i < n; ++i) w1[i] -= r[i];
    if (dmax <= 1e-13 * (1 + wmax)) return SALTA_OK;
    if (dmax > 0.25 * dprev) a->af_valid = 0;
    dprev = dmax;
    fresh = 0;
  }
  a->af_valid = 0;
  {
    char cause[512];
    salta__dae_bad_text(a->dae, cause, sizeof cause);
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: the trapezoidal step from t = %.17g to %.17g "
                       "did not converge%s%s", d->name, t0, t1, cause[0] ? ": " : "", cause);
  }
}

/* Marches segment s from its first node with its current end time. */
static int march(salta__adj *a, int s) {
  const salta__adj_seg *g = &a->segs[s];
  int i, st;
  a->mesh_fail = s;
  /* a reset may change the regime (g_z's scale): a matrix from before it
  ** could shrink the first steps enough to pass the convergence test */
  a->af_valid = 0;
  if ((st = salta__track_restart(&a->track, a->o, salta__adj_time(a, s, 0), salta__adj_node(a, g->node0)))) return st;
  for (i = 0; i < g->m; ++i) {
    double *w0 = salta__adj_node(a, g->node0 + i), *w1 = salta__adj_node(a, g->node0 + i + 1);
    if (salta_interrupted())
      return salta__fail(a->err, SALTA_EINTR, "model '%s': adjoint: interrupted at t = %.17g", a->d->name,
                         salta__adj_time(a, s, i));
    memcpy(w1, w0, sizeof(double) * (size_t)a->n);
    if ((st = trapezoid(a, salta__adj_time(a, s, i), w0, salta__adj_time(a, s, i + 1), w1)) ||
        (st = salta__track_accept(&a->track, salta__adj_time(a, s, i + 1), w1, 1)))
      return st;
  }
  a->mesh_fail = -1;
  return SALTA_OK;
}

/* The guard of the group ending segment s (its first member) at its last node. */
static double end_guard(salta__adj *a, int s) {
  const salta__adj_seg *g = &a->segs[s];
  const double *wm = salta__adj_node(a, g->node0 + g->m);
  a->d->e.eval(a->tau[s + 1], wm, wm + a->nx, a->p, a->guards);
  return a->guards[a->events[g->first]];
}

/* Solves segment s and, unless it is the last, its end time (secant on the
** group's first guard from the forward run's event time) and the event
** block after it: the composite reset, then z+ from g. */
static int solve_segment(salta__adj *a, int s) {
  const salta__adj_seg *g = &a->segs[s];
  const char *name;
  double t0, t1, G0, G1, t_forward, closest;
  int it, st, crossed = 0;
  if (g->count == 0) return march(a, s);
  if (g->cascade || g->follows) {   /* at the instant the segment starts */
    a->tau[s + 1] = a->tau[s];
    if ((st = march(a, s))) return st;
    return salta__dae_reset(a->dae, a->events + g->first, g->count, a->tau[s + 1],
                            salta__adj_node(a, g->node0 + g->m), salta__adj_node(a, a->segs[s + 1].node0));
  }
  name = a->d->e_names[a->events[g->first]];
  t0 = t_forward = a->tau[s + 1];
  if ((st = march(a, s))) return st;
  G0 = closest = end_guard(a, s);
  t1 = t0 + 1e-7 * fmax(1.0, fabs(t0));
  for (it = 0; it < 40; ++it) {
    double t2;
    a->tau[s + 1] = t1;
    if ((st = march(a, s))) return st;
    G1 = end_guard(a, s);
    crossed |= (G1 > 0) != (G0 > 0) || G1 == 0;
    if (fabs(G1) < fabs(closest)) closest = G1;
    if (G1 == 0 || G1 == G0) break;
    t2 = t1 - G1 * (t1 - t0) / (G1 - G0);
    t0 = t1, G0 = G1, t1 = t2;
    if (fabs(t1 - t0) <= 1e-15 * fmax(1.0, fabs(t1))) {
      a->tau[s + 1] = t1;
      if ((st = march(a, s))) return st;
      break;
    }
  }
  a->mesh_fail = s;
  if (it == 40 && !crossed)
    return salta__fail(a->err, SALTA_ENODIFF, "model '%s': adjoint: the discrete trajectory does not reach the guard "
                       "of event '%s' near t = %.17g (closest %g): the crossing is shallower than the trapezoid's "
                       "error (near grazing); use the forward sensitivities (method = \"sens\")", a->d->name, name,
                       t_forward, closest);
  if (it == 40)
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: the discrete time of event '%s' near "
                       "t = %.17g did not converge", a->d->name, name, t1);
  if (!(a->tau[s + 1] > a->tau[s]) || !(a->tau[s + 1] <= a->tau[a->nseg] || (a->ends_at_event && s + 2 == a->nseg)))
    return salta__fail(a->err, SALTA_ENODIFF, "model '%s': adjoint: on the trapezoid, event '%s' (at t = %.17g in "
                       "the forward run) moved to t = %.17g, out of its segment (the crossing is near grazing); use "
                       "the forward sensitivities (method = \"sens\")", a->d->name, name, t_forward, a->tau[s + 1]);
  a->mesh_fail = -1;
  return salta__dae_reset(a->dae, a->events + g->first, g->count, a->tau[s + 1],
                          salta__adj_node(a, g->node0 + g->m), salta__adj_node(a, a->segs[s + 1].node0));
}

/* ---- setup from a forward run --------------------------------------------------- */

/* The forward run's steps strictly inside segment s (their fractions of
** it into sigma[1 ..], when given). */
static int steps_inside(const salta__adj *a, salta_sim *sim, int s, double *sigma) {
  int i, m = 0, nsteps = salta_sim_nsteps(sim);
  for (i = 0; i < nsteps; ++i) {
    double t;
    salta_sim_step(sim, i, &t, NULL, NULL);
    if (t > a->tau[s] && t < a->tau[s + 1]) {
      if (sigma) sigma[m + 1] = (t - a->tau[s]) / (a->tau[s + 1] - a->tau[s]);
      ++m;
    }
  }
  return m;
}

/* Where the forward run ended: tf, or a terminal event's time. */
static double stats_t_end(const salta_sim *sim) {
  salta_sim_stats st;
  salta_sim_stats_get(sim, &st);
  return st.t_end;
}

/* A segment per event group of the forward run, and the mesh: mesh_k
** uniform steps per segment, or the integrator's steps (mesh_k = 0). */
static int build(salta__adj *a, salta_sim *sim, int mesh_k, const salta_sim_options *o) {
  int nev = salta_sim_nevents(sim), s = 0, k, i;
  size_t total = 0;
  a->segs = calloc((size_t)nev + 1, sizeof(salta__adj_seg));
  a->tau = malloc(sizeof(double) * ((size_t)nev + 2));
  a->events = malloc(sizeof(int) * ((size_t)nev + 1));
  a->rec_bound = malloc(sizeof(int) * ((size_t)nev + 1));
  if (!a->segs || !a->tau || !a->events || !a->rec_bound) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  a->tau[0] = o->t0;
  for (k = 0; k < nev; ++k) {
    salta_event_record r;
    salta_sim_event(sim, k, &r);
    a->events[k] = r.event;
  }
  for (k = 0; k < nev; ++k) {
    salta_event_record r;
    int coupled = 1, q, st;
    salta_sim_event(sim, k, &r);
    if (r.group != k) continue;
    if (r.cascade == 0 && r.group_size > 1 &&
        (st = salta__dae_group_coupled(a->dae, a->events + k, r.group_size, r.t, &coupled)))
      return st;   /* the dae wrote the message (the adjoint's own buffer) */
    for (q = 0; q < (coupled ? 1 : r.group_size); ++q) {   /* commuting members: one block each */
      a->segs[s].first = k + q;
      a->segs[s].count = coupled ? r.group_size : 1;
      a->segs[s].cascade = r.cascade > 0;
      a->segs[s].follows = q > 0;
      a->tau[++s] = r.t;
      for (i = 0; i < (coupled ? r.group_size : 1); ++i) a->rec_bound[k + q + i] = s;
    }
  }
  a->nseg = s + 1;
  a->tau[a->nseg] = stats_t_end(sim);
  a->end_bound = a->nseg;
  {
    salta_sim_stats st;
    salta_sim_stats_get(sim, &st);
    a->ends_at_event = st.t_end < o->tf && a->nseg > 1;
    if (a->ends_at_event) a->end_bound = a->nseg - 1;
    for (k = nev - 1; k >= 0 && st.terminal_event >= 0; --k)
      if (a->events[k] == st.terminal_event) {
        a->end_bound = a->rec_bound[k];
        break;
      }
  }
  if (!(a->tau_run = malloc(sizeof(double) * ((size_t)a->nseg + 1)))) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  memcpy(a->tau_run, a->tau, sizeof(double) * ((size_t)a->nseg + 1));
  for (s = 0; s < a->nseg; ++s) {
    int m = a->segs[s].follows ? 1 : mesh_k > 0 ? mesh_k : steps_inside(a, sim, s, NULL) + 1;
    a->segs[s].node0 = (int)total;
    a->segs[s].m = m;
    total += (size_t)m + 1;
    if (total > (size_t)SALTA_MESH_MAX * 10)
      return salta__fail(a->err, SALTA_EINPUT, "model '%s': adjoint: a mesh of %d nodes per segment over %d segments "
                         "is more than %d nodes", a->d->name, mesh_k, a->nseg, SALTA_MESH_MAX * 10);
  }
  a->nnodes = (int)total;
  a->sigma = malloc(sizeof(double) * (size_t)total);
  a->w = malloc(sizeof(double) * (size_t)total * a->n);
  if (!a->sigma || !a->w) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  for (s = 0; s < a->nseg; ++s) {
    salta__adj_seg *g = &a->segs[s];
    double *sg = a->sigma + g->node0;
    sg[0] = 0;
    sg[g->m] = 1;
    if (mesh_k > 0)
      for (i = 1; i < g->m; ++i) sg[i] = (double)i / g->m;
    else
      steps_inside(a, sim, s, sg);
  }
  return SALTA_OK;
}

/* The nodes of the zero-length segments between the members of a split
** group: the group's left limit with the earlier members' resets applied
** (their own reads of the left limit). */
static int split_nodes(salta__adj *a, salta_sim *sim) {
  int s, st;
  for (s = 1; s < a->nseg; ++s) {
    const salta__adj_seg *g = &a->segs[s];
    salta_event_record r;
    int lead = s;
    double *w0 = salta__adj_node(a, g->node0);
    if (!g->follows) continue;
    while (a->segs[lead].follows) --lead;
    salta_sim_event(sim, a->segs[lead].first, &r);
    if ((st = salta__dae_reset(a->dae, a->events + a->segs[lead].first, g->first - a->segs[lead].first, r.t,
                               r.x_minus, w0)))
      return st;
    memcpy(salta__adj_node(a, g->node0 + 1), w0, sizeof(double) * (size_t)a->n);
  }
  return SALTA_OK;
}

/* forward = "ida" (the seed paper's): the nodes are the integrator's
** solution at the node times, taken as they are (the discrete residuals
** then hold only to the integration tolerance); a segment's last node is
** the group's left limit. */
static int ida_nodes(salta__adj *a, salta_sim *sim, const salta_sim_options *o) {
  double *t = malloc(sizeof(double) * (size_t)a->nnodes);
  salta_sim_options oo = *o;
  int s, i, k = 0, st;
  if (!t) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  for (s = 0; s < a->nseg; ++s)
    for (i = 0; i <= a->segs[s].m; ++i) t[k++] = salta__adj_time(a, s, i);
  salta__out_plan plan = {NULL, 0, 1, NULL, 0, 0};
  oo.record_steps = 0;
  salta__targets_plan_stop(a->tg, &plan);   /* the forward run's end */
  st = salta__sim_run_planned(sim, &oo, a->p, a->x0, t, a->nnodes, &plan);
  free(t);
  if (st) return salta__fail(a->err, st, "%s", salta_sim_errmsg(sim));
  for (s = 0, k = 0; k < salta_sim_nevents(sim); ++k) {
    salta_event_record r;
    salta_sim_event(sim, k, &r);
    if (r.group == k) ++s;
  }
  if (s != a->nseg - 1)
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: the event sequence changed between runs",
                       a->d->name);
  for (k = 0; k < a->nnodes; ++k) {
    const double *x;
    salta_sim_out(sim, k, NULL, &x, NULL, NULL);
    memcpy(salta__adj_node(a, k), x, sizeof(double) * (size_t)a->n);   /* [x; z] are contiguous */
  }
  for (s = 0; s + 1 < a->nseg; ++s) {
    salta_event_record r;
    salta_sim_event(sim, a->segs[s].first, &r);
    if (a->segs[s].follows) continue;
    memcpy(salta__adj_node(a, a->segs[s].node0 + a->segs[s].m), r.x_minus, sizeof(double) * (size_t)a->n);
  }
  return split_nodes(a, sim);
}

/* ---- following the integrator to its tolerance -------------------------------- */

/* How often the mesh may be doubled, and how large the trapezoid's error
** may be, in units of the integrator's error weights. */
#define REFINE_ROUNDS 16
#define FOLLOW_TOL 10.0
#define FAILED_REFINES 3   /* solves failing on as many successive meshes: the failure stands */
#define MESH_RTOL 1e-10    /* the tightest tolerance the mesh follows */
#define MESH_RTOL_SETTLE 1e-9   /* and the one it settles for where that mesh passes the node limit */

/* Whether segment s has a length of its own (not a cascade round, not a
** later member of a split group): its end is compared between meshes. */
static int has_length(const salta__adj *a, int s) {
  return !a->segs[s].cascade && !a->segs[s].follows && a->tau[s + 1] > a->tau[s];
}

/* Doubles the mesh (every step halved; the nodes are solved again). */
static int refine_mesh(salta__adj *a) {
  size_t total = 0;
  double *sigma, *w;
  int s, i, k = 0;
  for (s = 0; s < a->nseg; ++s) total += (size_t)2 * a->segs[s].m + 1;
  if (total > (size_t)SALTA_MESH_MAX * 10) return -1;
  sigma = malloc(sizeof(double) * total);
  w = malloc(sizeof(double) * total * (size_t)a->n);
  if (!sigma || !w) return free(sigma), free(w), -2;
  for (s = 0; s < a->nseg; ++s) {
    salta__adj_seg *g = &a->segs[s];
    const double *old = a->sigma + g->node0;
    g->node0 = k;
    for (i = 0; i < g->m; ++i) sigma[k++] = old[i], sigma[k++] = 0.5 * (old[i] + old[i + 1]);
    sigma[k++] = 1;
    g->m *= 2;
  }
  free(a->sigma);
  free(a->w);
  a->sigma = sigma, a->w = w, a->nnodes = (int)total;
  return 0;
}

/* Solves the discrete trajectory from w0. */
static int solve_all(salta__adj *a, const double *w0) {
  int s, st;
  memcpy(salta__adj_node(a, 0), w0, sizeof(double) * (size_t)a->n);
  a->mesh_fail = -1;
  for (s = 0; s < a->nseg; ++s) {
    if ((st = solve_segment(a, s))) return st;
    if (a->ends_at_event && s + 2 == a->nseg) a->tau[a->nseg] = a->tau[s + 1];
  }
  return SALTA_OK;
}

/* The trapezoid's error at every node of the coarse mesh (the fine one's
** every other node), estimated by step doubling (the coarse solution's
** error is 4/3 the change, the fine one's 1/3), in units of atol + rtol X:
** at a segment's end, where the next one starts, X is the state's |value|
** there (the integrator's error weights); inside, its largest |value| over
** the segment (a global error against the state's size, not against its
** value where it passes through zero). Both are scaled up to rtol =
** MESH_RTOL when tighter. The ends alone are not enough: a forced
** trajectory's error at its end may be far below its error at the targets
** before it. coarse holds the coarse mesh's nodes, nx apart; the time of
** the worst node goes to *at. */
static double doubling_error(const salta__adj *a, const double *coarse, const salta_sim_options *o, double *at) {
  /* a second-order method does not chase tolerances below MESH_RTOL: its
  ** mesh would grow past memory for digits the gradient does not need */
  double worst = 0, scale = fmax(1.0, MESH_RTOL / o->rtol), rtol = o->rtol * scale, atol = o->atol * scale;
  int s, i, j, c0 = 0;
  for (s = 0; s < a->nseg; ++s) {
    const salta__adj_seg *g = &a->segs[s];
    int mc = g->m / 2;
    for (j = 0; has_length(a, s) && j < a->nx; ++j) {
      double X = 0;
      for (i = 0; i <= g->m; ++i) X = fmax(X, fabs(salta__adj_node(a, g->node0 + i)[j]));
      for (i = 1; i <= mc; ++i) {
        double f = salta__adj_node(a, g->node0 + 2 * i)[j];
        double e = fabs(f - coarse[(size_t)(c0 + i) * a->nx + j]) / 3 / (atol + rtol * (i == mc ? fabs(f) : X));
        if (e > worst) worst = e, *at = salta__adj_time(a, s, 2 * i);
      }
    }
    c0 += mc + 1;
  }
  return worst;
}

/* Copies every node's states, nx apart, into *buf (grown to fit). */
static int keep_states(const salta__adj *a, double **buf) {
  double *b = realloc(*buf, sizeof(double) * ((size_t)a->nnodes * a->nx + 1));
  int k;
  if (!b) return -1;
  *buf = b;
  for (k = 0; k < a->nnodes; ++k) memcpy(b + (size_t)k * a->nx, salta__adj_node(a, k), sizeof(double) * (size_t)a->nx);
  return 0;
}

/* The doubling error in units of MESH_RTOL_SETTLE's weights, per unit of
** doubling_error's (both scale atol and rtol alike). */
static double settle_factor(const salta_sim_options *o) {
  return fmax(o->rtol, MESH_RTOL) / fmax(o->rtol, MESH_RTOL_SETTLE);
}

/* The discrete trajectory on a mesh doubled until the trapezoid's error,
** estimated by step doubling, is within FOLLOW_TOL times the weights of
** doubling_error at every node (a solve that fails on a coarse mesh is
** retried on a finer one): the adjoint's accuracy follows the tolerance,
** whatever mesh it starts from. Below MESH_RTOL_SETTLE, a mesh that would
** pass the node limit settles for that tolerance when the last doubling
** met it (rtol 1e-10 on a ladder of 136 resets). */
static int follow_tolerance(salta__adj *a, const salta_sim_options *o, const double *w0) {
  double *prev = NULL, err = 0, at = 0;
  int round, st, have_prev = 0, failures = 0, measured;
  for (round = 0;; ++round) {
    measured = 0;
    memcpy(a->tau, a->tau_run, sizeof(double) * ((size_t)a->nseg + 1));   /* each solve starts from the run's times */
    if ((st = solve_all(a, w0)) != SALTA_OK) {
      /* a coarse mesh may miss what a finer one follows; not three times */
      if (a->mesh_fail < 0 || round == REFINE_ROUNDS || ++failures == FAILED_REFINES) break;
      have_prev = 0;
    } else {
      if ((measured = have_prev) && (err = doubling_error(a, prev, o, &at)) <= FOLLOW_TOL) break;
      if (round == REFINE_ROUNDS) {
        st = salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: after %d doublings of its mesh (%d nodes) the "
                         "trapezoid's error is still %.3g times the tolerance at t = %.17g; use method = \"sens\"",
                         a->d->name, REFINE_ROUNDS, a->nnodes, err, at);
        break;
      }
      if (keep_states(a, &prev)) {
        st = salta__fail(a->err, SALTA_EMEM, "out of memory");
        break;
      }
      have_prev = 1;
    }
    if ((st = refine_mesh(a)) != 0) {
      if (st == -1 && measured && err * settle_factor(o) <= FOLLOW_TOL) {   /* the last solve stands */
        st = SALTA_OK;
        break;
      }
      if (failures > 0 && st == -1) {   /* the solve's own failure says more than the mesh's size */
        memcpy(a->tau, a->tau_run, sizeof(double) * ((size_t)a->nseg + 1));
        st = solve_all(a, w0);
        break;
      }
      st = st == -2 ? salta__fail(a->err, SALTA_EMEM, "out of memory")
                    : salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: following the tolerance (rtol %g) "
                                  "needs a mesh of more than %d nodes; loosen rtol, or use method = \"sens\"",
                                  a->d->name, o->rtol, SALTA_MESH_MAX * 10);
      break;
    }
  }
  free(prev);
  return st;
}

/* ---- the entry point ---------------------------------------------------------------- */

void salta__adj_work_bind(salta__adj_work *w, const salta_model_def *d) { salta__dae_bind(&w->dae, d); }

int salta__adj_work_new(salta__adj_work **out, const salta_model_def *d, char *err) {
  salta__adj_work *w = calloc(1, sizeof *w);
  int st;
  *out = NULL;
  if (!w) return salta__fail(err, SALTA_EMEM, "out of memory");
  if ((st = salta__dae_init(&w->dae, d, err))) {
    free(w);
    return st;
  }
  *out = w;
  return SALTA_OK;
}

void salta__adj_work_free(salta__adj_work **w) {
  if (!w || !*w) return;
  salta__dae_free(&(*w)->dae);
  free(*w);
  *w = NULL;
}

/* The arrays of one evaluation, in a list (the lengths matter only for
** the allocation): the dense matrices without KLU, the vectors, and per
** segment the blending's weights. */
#define ADJ_ARRAYS 23
static size_t adj_arrays(salta__adj *a, int dense, salta__array *list) {
  size_t n = (size_t)a->n, nz = (size_t)a->nz, ne = (size_t)a->d->ne, np = (size_t)a->np, ny = (size_t)a->d->ny;
  size_t nn = dense ? n * n : 0, nout = a->tg ? (size_t)a->tg->nout : 0;
  salta__array all[ADJ_ARRAYS] = {
    SALTA__ARRAY(a->A, nn), SALTA__ARRAY(a->Af, nn), SALTA__ARRAY(a->piv, n), SALTA__ARRAY(a->piv_f, n),
    SALTA__ARRAY(a->step_res, n), SALTA__ARRAY(a->fa, n), SALTA__ARRAY(a->fb, n), SALTA__ARRAY(a->flow, n),
    SALTA__ARRAY(a->ew, n), SALTA__ARRAY(a->dR, n), SALTA__ARRAY(a->tterm, n), SALTA__ARRAY(a->guards, ne),
    SALTA__ARRAY(a->rate, ne), SALTA__ARRAY(a->rscale, ne), SALTA__ARRAY(a->ep, np), SALTA__ARRAY(a->gt, nz),
    SALTA__ARRAY(a->dLdz, nz), SALTA__ARRAY(a->gy, ny + 1), SALTA__ARRAY(a->yk, nout), SALTA__ARRAY(a->r, nout),
    SALTA__ARRAY(a->dL, nout), SALTA__ARRAY(a->dr, nout), SALTA__ARRAY(a->rs, nout)};
  memcpy(list, all, sizeof all);
  return ADJ_ARRAYS;
}

/* Blending's weights and the segments' outputs, per segment (known once
** the segments are). */
static size_t blend_arrays(salta__adj *a, salta__array *list) {
  size_t nseg = (size_t)a->nseg;
  salta__array all[4] = {SALTA__ARRAY(a->bl.w, nseg), SALTA__ARRAY(a->bl.dw_a, nseg), SALTA__ARRAY(a->bl.dw_b, nseg),
                         SALTA__ARRAY(a->ys, nseg * ((size_t)a->d->ny + 1))};
  memcpy(list, all, sizeof all);
  a->bl.nseg = a->nseg;
  return 4;
}

/* The KLU factorisations of the march and the sweep, on the model's pattern. */
static int alloc_klu(salta__adj *a) {
  int st;
  a->sparse = 1;
  if ((st = salta__pattern_build(&a->pat, a->d, a->err))) return st;
  if (!(a->Ax = malloc(sizeof(double) * ((size_t)a->pat.nnz + 1)))) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  if ((st = salta__sparselu_new(&a->lu_march, &a->pat, a->err))) return st;
  return salta__sparselu_new(&a->lu_sweep, &a->pat, a->err);
}

static void free_adj(salta__adj *a) {
  salta__array list[ADJ_ARRAYS];
  salta__arrays_free(list, adj_arrays(a, 0, list));
  salta__arrays_free(list, blend_arrays(a, list));
  free(a->segs); free(a->tau); free(a->tau_run); free(a->events); free(a->rec_bound); free(a->sigma); free(a->w);
  salta__track_free(&a->track);
  salta__sparselu_free(a->lu_march);
  salta__sparselu_free(a->lu_sweep);
  free(a->Ax);
  if (a->sparse) salta__pattern_free(&a->pat);
}

/* The forward run that gives the event sequence (and, for mesh = steps,
** the steps: of a second-order method, so that the trapezoid on them is
** as accurate as the tolerance asks), and the targets it reaches. */
static int forward_run(salta__adj *a, salta__targets *tg, salta_sim *sim, int mesh_k, salta_sim_options *o) {
  salta_sim_stats stats;
  salta__out_plan plan = {NULL, 0, 1, NULL, 0, 0};
  int st;
  o->record_steps = mesh_k == 0;
  if (mesh_k == 0 && o->method != SALTA_METHOD_ERK) o->method = SALTA_METHOD_BDF, o->max_order = 2;
  salta__targets_plan_stop(tg, &plan);
  if ((st = salta__sim_run_planned(sim, o, a->p, a->x0, tg->times, tg->nt, &plan)))
    return salta__fail(a->err, st, "%s", salta_sim_errmsg(sim));
  salta_sim_stats_get(sim, &stats);
  if ((st = salta__targets_match_events(tg, sim, o, a->err))) return st;
  return salta__targets_reach(tg, salta_sim_nout(sim), &stats, a->err);
}

/* The consistent discrete trajectory from the start state: on the mesh
** that follows the tolerance (mesh_k = 0), or on the fixed one. */
static int consistent_trajectory(salta__adj *a, const salta_sim_options *o, int mesh_k) {
  double *w0 = salta__adj_node(a, 0), *start;
  int st;
  if ((st = salta__start_values(a->d, o->t0, o->tf, a->p, a->x0, w0, a->err))) return st;
  if (a->nz) memcpy(w0 + a->nx, a->d->z_start, sizeof(double) * (size_t)a->nz);
  if ((st = salta__start_modes(a->dae, o->t0, w0))) return st;
  if ((st = salta__adj_solve_z(a, a->tau[0], w0))) return st;
  if (!(start = malloc(sizeof(double) * (size_t)(a->n + 1)))) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  memcpy(start, w0, sizeof(double) * (size_t)a->n);
  st = mesh_k == 0 ? follow_tolerance(a, o, start) : solve_all(a, start);
  free(start);
  if (st && mesh_k > 0 && a->mesh_fail >= 0) {   /* a finer mesh would change something: say which */
    char msg[SALTA_ERRMSG_SIZE];
    snprintf(msg, sizeof msg, "%s", a->err);
    st = salta__fail(a->err, st, "%s (on the fixed mesh of %d nodes per segment; the default mesh = \"steps\" "
                     "is refined until it follows the tolerance)", msg, mesh_k);
  }
  return st;
}

/* The gradient by the directions from gp = [d/dp; d/dx0], each finite. */
static int pick_directions(salta__adj *a, const double *gp, const int *dirs, int ns, double *grad) {
  int k;
  for (k = 0; k < ns; ++k) {
    char cause[512], dir[160];
    grad[k] = gp[salta__dir_slot(a->np, dirs[k])];
    if (isfinite(grad[k])) continue;
    salta__dae_bad_text(a->dae, cause, sizeof cause);
    return salta__fail(a->err, SALTA_ESOLVER, "model '%s': adjoint: the gradient by %s is %g%s%s", a->d->name,
                       salta__dir_text(a->d, dirs[k], dir, sizeof dir), grad[k], cause[0] ? ": " : "", cause);
  }
  return SALTA_OK;
}

/* The evaluation once the forward run is made: the discrete trajectory,
** its loss and, when want_grad, the sweep and the start's share of the
** gradient. */
static int solve_and_sweep(salta__adj *a, salta_sim *sim, const salta_sim_options *o, int mesh_k, int consistent,
                           double *value, double *gp, int want_grad) {
  salta__array list[ADJ_ARRAYS];
  int st;
  if (salta__arrays_alloc(list, adj_arrays(a, !salta__use_klu(o, a->n), list)))
    return salta__fail(a->err, SALTA_EMEM, "out of memory");
  if ((salta__use_klu(o, a->n) && (st = alloc_klu(a))) || (st = salta__track_init(&a->track, a->dae)) ||
      (st = build(a, sim, mesh_k, o)))
    return st;
  if (salta__arrays_alloc(list, blend_arrays(a, list))) return salta__fail(a->err, SALTA_EMEM, "out of memory");
  if ((st = consistent ? consistent_trajectory(a, o, mesh_k) : ida_nodes(a, sim, o))) return st;
  a->dae->bad.sp = NULL;   /* the forward Newton's trial matrices are not the gradient's */
  if ((st = salta__adj_sweep(a, value, gp, gp + a->np, want_grad))) return st;
  if (want_grad && salta__start_follows_p(a->d, a->x0)) return salta__start_chain(a->d, o->t0, a->p, gp + a->np, gp, a->err);
  return SALTA_OK;
}

int salta__adj_eval(salta__adj_work *w, salta__targets *tg, salta_sim *sim, const salta_sim_options *opts,
                    const double *p, const double *x0, int mesh_k, int consistent, const int *dirs, int ns,
                    double *value, double *grad, double *resid, char *err) {
  salta__adj a;
  salta_sim_options o = *opts;
  double *gp, v = 0;
  int st;
  memset(&a, 0, sizeof a);
  a.tg = tg;
  a.resid = resid;
  a.dae = &w->dae;
  a.d = w->dae.d;
  a.x0 = x0;
  a.nx = a.d->nx, a.nz = a.d->nz, a.n = a.nx + a.nz, a.np = a.d->np;
  a.err = err;
  a.o = &o;
  salta__dae_set_params(a.dae, p);
  a.p = a.dae->p;   /* with the derived values the kernels read */
  if (!(gp = malloc(sizeof(double) * (size_t)(a.np + a.nx + 1)))) st = salta__fail(err, SALTA_EMEM, "out of memory");
  else if ((st = forward_run(&a, tg, sim, mesh_k, &o)) == SALTA_OK &&
           (st = solve_and_sweep(&a, sim, &o, mesh_k, consistent, &v, gp, grad != NULL)) == SALTA_OK && grad)
    st = pick_directions(&a, gp, dirs, ns, grad);
  if (st == SALTA_OK && value) *value = v;
  free(gp);
  free_adj(&a);
  salta__dae_set_params(a.dae, NULL);
  return st;
}
