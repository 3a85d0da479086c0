/*
** errors.h -- per-handle error messages (internal).
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
** reports it as SALTA_ESOLVER with the message already set. */
#define SALTA__EBRANCH (-101)

/* Formats into buf (SALTA_ERRMSG_SIZE bytes) and returns status, so that
** `return salta__fail(m->err, SALTA_EINPUT, "...", ...)` reads naturally. */
int salta__fail(char *buf, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
