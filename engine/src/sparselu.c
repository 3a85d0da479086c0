/*
** sparselu.c -- KLU on a fixed CSC pattern (see sparselu.h).
*/
#include <klu.h>
#include <stdlib.h>

#include "errors.h"
#include "sparselu.h"

struct salta__sparselu {
  const salta__pattern *p;
  klu_common common;
  klu_symbolic *sym;
  klu_numeric *num;
  double rcond0;     /* the condition estimate of the last pivoted factorisation */
};

int salta__use_klu(const salta_sim_options *o, int n) {
  return o->linear_solver == SALTA_LS_KLU || (o->linear_solver == SALTA_LS_AUTO && n >= SALTA_KLU_MIN_N);
}

int salta__sparselu_new(salta__sparselu **out, const salta__pattern *p, char *err) {
  salta__sparselu *s = *out = calloc(1, sizeof *s);
  if (!s) return salta__fail(err, SALTA_EMEM, "out of memory");
  s->p = p;
  klu_defaults(&s->common);
  s->sym = klu_analyze(p->n, p->colptr, p->rowind, &s->common);
  if (!s->sym) {
    int status = s->common.status;
    free(s);
    *out = NULL;
    if (status == KLU_OUT_OF_MEMORY) return salta__fail(err, SALTA_EMEM, "out of memory");
    return salta__fail(err, SALTA_ESOLVER, "KLU refuses the %d x %d pattern of %d entries (status %d)", p->n, p->n,
                       p->nnz, status);
  }
  return SALTA_OK;
}

/* A refactorisation keeps the last pivoted factorisation's pivots: cheap,
** and good while the values stay alike. When its diagonal condition
** estimate falls below 1e-3 of that factorisation's (the old pivots no
** longer suit), it factors afresh with pivoting. */
int salta__sparselu_factor(salta__sparselu *s, const double *Ax, char *err) {
  const salta__pattern *p = s->p;
  double *ax = (double *)Ax;   /* KLU takes non-const pointers it does not write */
  if (s->num && klu_refactor(p->colptr, p->rowind, ax, s->sym, s->num, &s->common) &&
      klu_rcond(s->sym, s->num, &s->common) && s->common.rcond >= 1e-3 * s->rcond0)
    return SALTA_OK;
  if (s->num) klu_free_numeric(&s->num, &s->common);
  s->num = klu_factor(p->colptr, p->rowind, ax, s->sym, &s->common);
  if (!s->num || s->common.status != KLU_OK || !klu_rcond(s->sym, s->num, &s->common))
    return salta__fail(err, SALTA_ESOLVER, "a %d x %d sparse matrix is singular or not finite (KLU status %d)", p->n,
                       p->n, s->common.status);
  s->rcond0 = s->common.rcond;
  return SALTA_OK;
}

void salta__sparselu_solve(salta__sparselu *s, double *b, int trans) {
  if (trans) klu_tsolve(s->sym, s->num, s->p->n, 1, b, &s->common);
  else klu_solve(s->sym, s->num, s->p->n, 1, b, &s->common);
}

void salta__sparselu_free(salta__sparselu *s) {
  if (!s) return;
  if (s->num) klu_free_numeric(&s->num, &s->common);
  klu_free_symbolic(&s->sym, &s->common);
  free(s);
}
