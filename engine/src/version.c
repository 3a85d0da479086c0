/*
** version.c -- the library's version, for hosts that check it against the
** header they were compiled with.
*/
#include "salta.h"

const char *salta_version(void) { return SALTA_VERSION; }
