/*
** run_script.c -- a host application that embeds Lua and salta to run a
** user's script: numbers go in as the global array `input`, the script
** returns an array of numbers, which the host prints.
**
**   cc run_script.c $(pkg-config --cflags lua5.4) -llua5.4 -o run_script
**   SALTA_PREFIX=/usr/local ./run_script script.lua 9.81 0.8
*/
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

/* Points package.path and package.cpath at an installed salta. */
static void use_prefix(lua_State *L, const char *prefix) {
  lua_getglobal(L, "package");
  lua_pushfstring(L, "%s/share/lua/5.4/?.lua;%s/share/lua/5.4/?/init.lua;", prefix, prefix);
  lua_getfield(L, -2, "path");
  lua_concat(L, 2);
  lua_setfield(L, -2, "path");
  lua_pushfstring(L, "%s/lib/lua/5.4/?.so;", prefix);
  lua_getfield(L, -2, "cpath");
  lua_concat(L, 2);
  lua_setfield(L, -2, "cpath");
  lua_pop(L, 1);
}

int main(int argc, char **argv) {
  lua_State *L;
  const char *prefix = getenv("SALTA_PREFIX");
  int i, n, rc = 1;
  if (argc < 2) {
    fprintf(stderr, "usage: %s script.lua [numbers...]\n", argv[0]);
    return 2;
  }
  L = luaL_newstate();
  if (!L) return 1;
  luaL_openlibs(L);
  if (prefix) use_prefix(L, prefix);
  lua_createtable(L, argc - 2, 0);           /* input = {numbers...} */
  for (i = 2; i < argc; ++i) {
    lua_pushnumber(L, strtod(argv[i], NULL));
    lua_rawseti(L, -2, i - 1);
  }
  lua_setglobal(L, "input");
  if (luaL_loadfile(L, argv[1]) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
    fprintf(stderr, "script failed: %s\n", lua_tostring(L, -1));
    goto done;
  }
  if (!lua_istable(L, -1)) {
    fprintf(stderr, "the script must return an array of numbers\n");
    goto done;
  }
  n = (int)luaL_len(L, -1);
  for (i = 1; i <= n; ++i) {
    lua_geti(L, -1, i);
    printf("%.12e\n", lua_tonumber(L, -1));
    lua_pop(L, 1);
  }
  rc = 0;
done:
  lua_close(L);
  return rc;
}
