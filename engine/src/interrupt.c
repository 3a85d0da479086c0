/*
** interrupt.c -- the process-wide interrupt request: set from a signal
** handler, read by the engine between steps.
*/
#include <signal.h>

#include "salta.h"

static volatile sig_atomic_t requested = 0;

void salta_interrupt(void) { requested = 1; }
void salta_interrupt_clear(void) { requested = 0; }
int salta_interrupted(void) { return requested != 0; }
