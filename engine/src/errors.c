/*
** errors.c -- per-handle error messages.
*/
#include <stdarg.h>
#include <stdio.h>

#include "errors.h"

int salta__fail(char *buf, int status, const char *fmt, ...) {
  va_list ap;
  if (!buf) return status;
  va_start(ap, fmt);
  vsnprintf(buf, SALTA_ERRMSG_SIZE, fmt, ap);
  va_end(ap);
  return status;
}
