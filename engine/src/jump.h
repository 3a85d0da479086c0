/*
** jump.h -- the jump of the sensitivities through an event group's
** composite reset (internal), stated once in two forms: forward, S+ from
** S- for the ns directions of a run with sensitivities; and transposed,
** the adjoint of S- from the adjoint of S+ with the parameter terms, for
** the continuous adjoint. Per column s of S (direction j):
**   tau_q  = -(e_x s_x + e_z s_z + e_p[:, j]) / rate_q        member q's event time
**   s_x+   = r_x s_x + r_z s_z + r_p[:, j] + (r_t + r_x x'0 + r_z z'0 - x'1) tau_q
**            on the rows member q resets,
**   s_x+   = s_x + (x'0 - x'1) tau                               on the others,
**   s_z+   = -g_z^-1 (g_x s_x+ + g_p[:, j])                      re-consistency,
** composed either together (every member at the left limit, x'0 the flow
** there and x'1 the flow after the group) or in sequence (each member from
** the state and flow the earlier ones left, its reset read at the left
** limit), when a direction moves the members apart.
*/
#ifndef SALTA_JUMP_H
#define SALTA_JUMP_H

#include "sens.h"

/* How the members of a group compose. */
typedef enum salta__jump_form {
  SALTA__JUMP_TOGETHER = 0,   /* at the left limit, each member with its own tau_p */
  SALTA__JUMP_FIXED = 1,      /* the same, every tau_p the located group's (a round of event iteration) */
  SALTA__JUMP_SEQUENCE = 2,   /* in declaration order */
  SALTA__JUMP_REVERSE = 3     /* in the reverse order */
} salta__jump_form;

/* The forward jump of S (in: at the left limit lm; out: at the right limit
** wp) through the group ev[0..nev) at tau; fills out. Each member's tau_p
** is its own crossing's, or tau_p_fixed (ns) for a round of event
** iteration. A grazing member is an error; so is a group a direction
** moves apart whose members do not commute (SALTA_ENODIFF). */
int salta__sens_jump(salta__sens *sn, double tau, const salta__left_limit *lm, const double *wp, const int *ev,
                     int nev, const double *tau_p_fixed, double *S, salta__jump *out);

/* The adjoint of one jump (salta__jump_transpose). */
typedef struct salta__jump_adj {
  double *v;              /* n: in, the adjoint of S+; out, of S- (its z rows not folded) */
  double *grad_p;         /* np: += the parameter terms */
  double *tau_bar;        /* nev, or NULL: in, each member's tau_p's adjoint from outside the
                             jump (a loss that reads event times); used up */
  double tau_fixed_bar;   /* FIXED: += the adjoint of the located group's tau_p (its first
                             member's), which the caller carries to that group */
} salta__jump_adj;

/* The transpose of the jump through the group ev[0..nev) at tau in the
** given form, as salta__sens_jump's (sn's scratch, any ns). lm->ejac may
** be NULL. A grazing member is an error (SALTA_ENODIFF). */
int salta__jump_transpose(salta__sens *sn, double tau, const salta__left_limit *lm, const double *wp, const int *ev,
                          int nev, salta__jump_form form, salta__jump_adj *adj);

#endif
