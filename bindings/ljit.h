/*
** ljit.h -- the userdata shared by the JIT backends (salta.core's cc
** backend and the host's salta.tcc) and salta.core's model constructor.
*/
#ifndef SALTA_LJIT_H
#define SALTA_LJIT_H

#include <lua.h>
#include "salta_kernel.h"

#define SALTA_JIT_MT "salta.jit"

/* Compiled code that owns a salta_model_def. release frees owner exactly
** once; after it, def and owner are NULL. */
typedef struct salta_jit_ud {
  void *owner;
  const salta_model_def *def;
  void (*release)(void *owner);
  const char *backend;          /* static string: "cc" or "tcc" */
} salta_jit_ud;

/* Pushes a new closed salta_jit_ud with the shared metatable
** (__gc/__close release it, __name/__tostring for the REPL). */
salta_jit_ud *salta_jit_push(lua_State *L);

#endif
