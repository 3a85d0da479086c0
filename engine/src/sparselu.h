/*
** sparselu.h -- KLU on a fixed CSC pattern (internal): one symbolic
** analysis, then numeric factorisations of changing values and solves with
** the matrix or its transpose.
*/
#ifndef SALTA_SPARSELU_H
#define SALTA_SPARSELU_H

#include "pattern.h"
#include "salta.h"

typedef struct salta__sparselu salta__sparselu;

/* Whether options o ask for KLU on a system of n unknowns (AUTO resolved). */
int salta__use_klu(const salta_sim_options *o, int n);

/* Analyses the pattern (borrowed: it must outlive the object) into *out
** (owned): SALTA_OK, SALTA_EMEM, or SALTA_ESOLVER when KLU refuses the
** pattern (*out NULL). */
int salta__sparselu_new(salta__sparselu **out, const salta__pattern *p, char *err);
/* Factors the matrix with values Ax (in the pattern's order): SALTA_OK, or
** SALTA_ESOLVER when it is singular. */
int salta__sparselu_factor(salta__sparselu *s, const double *Ax, char *err);
/* Solves A x = b (trans = 0) or A^T x = b (trans = 1) in place. */
void salta__sparselu_solve(salta__sparselu *s, double *b, int trans);
void salta__sparselu_free(salta__sparselu *s);

#endif
