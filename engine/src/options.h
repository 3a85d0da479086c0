/*
** options.h -- the declared simulation options (internal).
*/
#ifndef SALTA_OPTIONS_H
#define SALTA_OPTIONS_H

#include "salta.h"

/* SALTA_OK when every declared option of o is within its range (a choice
** among its names), else SALTA_EINPUT with err (SALTA_ERRMSG_SIZE bytes)
** naming the model, the option, what it must be and its value. */
int salta__options_check(const salta_sim_options *o, const char *model_name, char *err);

#endif
