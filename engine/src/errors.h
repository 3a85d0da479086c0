/*
** errors.h -- error messages (internal), and the engine's one convention:
** a function that can fail returns SALTA_OK (0) or a negative status (a
** public SALTA_E* of salta.h, or an internal one below) and, when it
** fails, has written what failed into a message buffer of
** SALTA_ERRMSG_SIZE bytes: its err argument, or the one its object
** borrowed from its owner (a handle's). A caller that knows more (the
** model, the element, the time) writes the message again; a NULL buffer
** takes no message (a caller that will write its own). A handle's
** message is its last failure's; what a recovered failure wrote there is
** cleared when the call succeeds.
*/
#ifndef SALTA_ERRORS_H
#define SALTA_ERRORS_H

#include <stddef.h>

#define SALTA_ERRMSG_SIZE 1024

/* Internal status: ERK found the model stiff (SALTA_METHOD_AUTO restarts
** the run with BDF; it never reaches the API). */
#define SALTA__ESTIFF (-100)
/* Internal status: a stage's algebraics left the branch of g = 0 they
** followed (track.c): ERK retries a shorter step, and past the shortest
** reports it as SALTA_EALGEBRAIC with the message already set. */
#define SALTA__EBRANCH (-101)
/* Internal status: the same where a dummy derivative's pivot vanished;
** reported as SALTA_ESOLVER. */
#define SALTA__EPIVOT (-102)

/* Formats into buf (SALTA_ERRMSG_SIZE bytes; NULL: nothing) and returns
** status, so that `return salta__fail(m->err, SALTA_EINPUT, "...", ...)`
** reads naturally. */
int salta__fail(char *buf, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
