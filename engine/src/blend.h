/*
** blend.h -- sigmoid blending across event boundaries (internal), shared by
** the loss and the adjoint's discrete loss:
**   yhat(T) = sum_k w_k(T) y_k(clip(T, b_k, b_k+1)) / (sum_k w_k(T) + 1e-30)
**   w_k(T)  = s(beta (T - b_k)) - s(beta (T - b_k+1))
**           = s(beta (T - b_k)) s(beta (b_k+1 - T)) (1 - exp(-beta (b_k+1 - b_k)))
** over the segments [b_k, b_k+1] between boundaries (t0, the event groups,
** tf). Each boundary enters through one sigmoid, so a segment of zero
** length weighs nothing: an event group that splits into nearby events
** changes the blended loss continuously.
*/
#ifndef SALTA_BLEND_H
#define SALTA_BLEND_H

#define SALTA_BLEND_FLOOR 1e-30

/* The weight of segment [a, b] at T, and its derivatives by a and b. */
double salta__blend_weight(double beta, double T, double a, double b, double *dw_da, double *dw_db);

#endif
