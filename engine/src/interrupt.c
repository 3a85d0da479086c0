/*
** interrupt.c -- the process-wide interrupt request: set from a signal
** handler or another thread, read by the engine between steps.
*/
#include <stdatomic.h>

#include "salta.h"

/* C11 (7.14.1.1) lets a signal handler touch lock-free atomics only; an
** atomic also makes a set from another thread race-free (a volatile
** sig_atomic_t does neither for threads). */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the interrupt flag must be a lock-free atomic");

static atomic_int requested = 0;

/* Relaxed: the flag orders no other data; coherence alone brings a store
** to the other threads' later loads. */
void salta_interrupt(void) { atomic_store_explicit(&requested, 1, memory_order_relaxed); }
void salta_interrupt_clear(void) { atomic_store_explicit(&requested, 0, memory_order_relaxed); }
int salta_interrupted(void) { return atomic_load_explicit(&requested, memory_order_relaxed) != 0; }
