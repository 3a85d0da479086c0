/*
** repl_print.h -- how the salta host's REPL prints its results.
*/
#ifndef SALTA_REPL_PRINT_H
#define SALTA_REPL_PRINT_H

#include <lua.h>

/* Sets up the printer (salta.repl's show when that module exists) in the
** registry of L. */
void salta_repl_init_printer(lua_State *L);
/* Prints the values on L's stack (all of them) and pops them. */
void salta_repl_print(lua_State *L);

#endif
