/*
** salta_host.c -- the salta program: a Lua 5.4 interpreter shaped after
** lua.c with the engine modules preloaded and a friendlier REPL (libedit,
** persistent history, readable printing of tables).
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "salta.h"
#include "repl_print.h"

#ifndef SALTA_LUA_DIR
#define SALTA_LUA_DIR "./lua"
#endif
#define HISTORY_MAX 1000

int luaopen_salta_core(lua_State *L);
int luaopen_salta_tcc(lua_State *L);

static lua_State *globalL = NULL;
static volatile sig_atomic_t prompt_interrupted = 0;

/* ---- messages and protected calls (as lua.c) ---- */

static void l_message(const char *msg) {
  fprintf(stderr, "salta: %s\n", msg);
  fflush(stderr);
}

static int report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    l_message(msg != NULL ? msg : "(error object is not a string)");
    lua_pop(L, 1);
  }
  return status;
}

/* After a fatal error, under mpirun (the MPI binding loaded): ends every
** rank of the job, which may be waiting for this one in a collective. */
static void abort_mpi_job(lua_State *L) {
  int top = lua_gettop(L);
  if (lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE) == LUA_TTABLE &&
      lua_getfield(L, -1, "salta.mpi_core") == LUA_TTABLE &&
      lua_getfield(L, -1, "abort") == LUA_TFUNCTION) {
    lua_pushinteger(L, EXIT_FAILURE);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) report(L, LUA_ERRRUN);
  }
  lua_settop(L, top);
}

static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {  /* honour __tostring on error objects */
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      msg = lua_tostring(L, -1);
    else
      msg = lua_pushfstring(L, "(error object is a %s value)",
                            luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static void setsignal(int sig, void (*handler)(int), struct sigaction *old) {
  struct sigaction sa;
  sa.sa_handler = handler;
  sa.sa_flags = 0;  /* no SA_RESTART: a blocked read must see the signal */
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, &sa, old) != 0) { /* cannot fail for SIGINT */ }
}

/* Raises the interrupt inside Lua, where it can unwind cleanly. */
static void lstop(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

/* Ctrl-C during a call: the engine stops at its next step (SALTA_EINTR),
** Lua at its next instruction. The handler stays: a second Ctrl-C asks
** again instead of killing the session (Ctrl-\ still quits). */
static void laction(int sig) {
  (void)sig;
  salta_interrupt();
  lua_sethook(globalL, lstop,
              LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
}

static void onprompt(int sig) {
  (void)sig;
  prompt_interrupted = 1;
}

static int docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  struct sigaction old;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  globalL = L;
  salta_interrupt_clear();
  setsignal(SIGINT, laction, &old);
  int status = lua_pcall(L, narg, nres, base);
  if (sigaction(SIGINT, &old, NULL) != 0) { /* cannot fail: old is valid */ }
  lua_remove(L, base);
  return status;
}

/* Runs a chunk whose load status is given, reporting any error. */
static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = docall(L, 0, 0);
  return report(L, status);
}

/* ---- the REPL (after lua.c's doREPL) ---- */

/* Reads one line; 1: pushed, 0: end of input, -1: interrupted. */
static int pushline(lua_State *L, int firstline) {
  int top = lua_gettop(L);
  const char *prompt = firstline ? "salta> " : "  >> ";
  if (lua_getglobal(L, firstline ? "_PROMPT" : "_PROMPT2") != LUA_TNIL)
    prompt = luaL_tolstring(L, -1, NULL);
  prompt_interrupted = 0;
  char *line = readline(prompt);
  lua_settop(L, top);  /* the prompt string lived until here */
  if (line == NULL) return prompt_interrupted ? -1 : 0;
  if (firstline && line[0] == '=') lua_pushfstring(L, "return %s", line + 1);
  else lua_pushstring(L, line);
  free(line);
  return 1;
}

/* ---- completion (Tab): candidates from lua/salta/complete.lua ---- */

static lua_State *completion_state = NULL;   /* the REPL's state, while it runs */

/* readline's generator: state 0 computes the candidates of text into a
** registry table, then each call returns the next (malloc'd) or NULL. */
static char *complete_next(const char *text, int state) {
  static lua_Integer next = 0;
  lua_State *L = completion_state;
  char *out = NULL;
  if (L == NULL) return NULL;
  if (state == 0) {
    next = 1;
    lua_getglobal(L, "require");
    lua_pushliteral(L, "salta.complete");
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) { lua_pop(L, 1); lua_pushnil(L); }
    else {
      lua_getfield(L, -1, "candidates");
      lua_remove(L, -2);
      lua_pushstring(L, text);
      lua_pushglobaltable(L);
      if (lua_pcall(L, 2, 1, 0) != LUA_OK) { lua_pop(L, 1); lua_pushnil(L); }
    }
    lua_setfield(L, LUA_REGISTRYINDEX, "salta.completions");
  }
  if (lua_getfield(L, LUA_REGISTRYINDEX, "salta.completions") == LUA_TTABLE &&
      lua_geti(L, -1, next++) == LUA_TSTRING)
    out = strdup(lua_tostring(L, -1));
  lua_settop(L, lua_gettop(L) - (lua_type(L, -2) == LUA_TTABLE ? 2 : 1));
  return out;
}

static char **complete(const char *text, int start, int end) {
  (void)start; (void)end;
  rl_attempted_completion_over = 1;   /* no file names */
  return rl_completion_matches(text, complete_next);
}

static const char *history_file = NULL;   /* where the REPL keeps its history, or NULL */

/* Adds a line to the history and writes the file at once: a session that
** ends abnormally keeps what was typed. */
static void saveline(const char *line) {
  if (line[0] == '\0') return;
  if (add_history(line) != 0) { /* history is optional */ }
  if (history_file != NULL && write_history(history_file) != 0) { /* ignored: convenience */ }
}

static int addreturn(lua_State *L) {
  const char *line = lua_tostring(L, -1);
  const char *retline = lua_pushfstring(L, "return %s;", line);
  int status = luaL_loadbuffer(L, retline, strlen(retline), "=stdin");
  if (status == LUA_OK) {
    lua_remove(L, -2);
    saveline(line);
  } else {
    lua_pop(L, 2);
  }
  return status;
}

static int incomplete(lua_State *L, int status) {
  size_t len;
  const char *msg = lua_tolstring(L, -1, &len);
  return status == LUA_ERRSYNTAX && len >= 5 &&
         strcmp(msg + len - 5, "<eof>") == 0;
}

/* Compiles the buffer as statements, reading continuation lines while
** the chunk is incomplete. Returns -1 when Ctrl-C abandoned it. */
static int multiline(lua_State *L) {
  for (;;) {
    size_t len;
    const char *line = lua_tolstring(L, 1, &len);
    int status = luaL_loadbuffer(L, line, len, "=stdin");
    int more = incomplete(L, status) ? pushline(L, 0) : 0;
    if (more <= 0) {
      saveline(line);
      if (more < 0) lua_pop(L, 1);
      return more < 0 ? -1 : status;
    }
    lua_remove(L, -2);  /* the syntax error */
    lua_pushliteral(L, "\n");
    lua_insert(L, -2);
    lua_concat(L, 3);
  }
}

/* -2: end of input, -1: nothing to run, else a load status with the chunk
** or error on the stack. */
static int loadline(lua_State *L) {
  lua_settop(L, 0);
  int got = pushline(L, 1);
  if (got <= 0) return got == 0 ? -2 : -1;
  int status = addreturn(L);
  if (status != LUA_OK) status = multiline(L);
  lua_remove(L, 1);
  return status;
}

static const char *history_path(char *buf, size_t size) {
  const char *home = getenv("HOME");
  if (home == NULL || home[0] == '\0') return NULL;
  int n = snprintf(buf, size, "%s/.salta_history", home);
  return (n > 0 && (size_t)n < size) ? buf : NULL;
}

/* The REPL and -e code are for exploring: the library is there as the
** global `salta`, with `help` (scripts still `require` it). A failure is
** reported, not fatal. */
static void load_salta_global(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "salta");
  if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
    lua_getfield(L, -1, "help");
    lua_setglobal(L, "help");   /* help(), help("fit"), help(obj) */
    lua_setglobal(L, "salta");
  } else {
    fprintf(stderr, "salta: could not load the salta library: %s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
  }
}

static void doREPL(lua_State *L) {
  char buf[4096];
  const char *hist = isatty(STDIN_FILENO) ? history_path(buf, sizeof buf) : NULL;
  struct sigaction old;
  int status;
  using_history();
  stifle_history(HISTORY_MAX);
  if (hist != NULL && read_history(hist) != 0) { /* first run: no file */ }
  history_file = hist;
  salta_repl_init_printer(L);
  load_salta_global(L);
  completion_state = L;
  rl_attempted_completion_function = complete;
  setsignal(SIGINT, onprompt, &old);
  printf("salta %s (%s) -- help() for help, Tab completes, Ctrl-D quits\n", salta_version(), LUA_VERSION);
  while ((status = loadline(L)) != -2) {
    if (status == -1) {  /* Ctrl-C: drop the input, prompt again */
      putchar('\n');
      continue;
    }
    if (status == LUA_OK) status = docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK) salta_repl_print(L);
    else report(L, status);
  }
  lua_settop(L, 0);
  putchar('\n');
  fflush(stdout);
  if (sigaction(SIGINT, &old, NULL) != 0) { /* cannot fail: old is valid */ }
  history_file = NULL;
  completion_state = NULL;
}

/* ---- command line (after lua.c) ---- */

enum { has_error = 1, has_i = 2, has_v = 4, has_e = 8, has_E = 16, has_help = 32 };

static const char usage_text[] =
    "usage: salta [options] [script [args]]\n"
    "       salta compile model.lua -o model.c [--symbol NAME] [key=value ...]\n"
    "                     ahead-of-time C for embedding (key=value: the model function's options;\n"
    "                     salta -e 'salta.help(\"compile\")')\n"
    "options:\n"
    "  -e code       run code (the library is the global 'salta')\n"
    "  -l name       require library 'name' into global 'name' (-l g=name: into 'g')\n"
    "  -i            the REPL after the script or -e\n"
    "  -v, --version the version\n"
    "  -E            ignore LUA_* and SALTA_LUA_PATH\n"
    "  -h, --help    this text\n"
    "  --            stop handling options; script '-' reads stdin\n"
    "In the REPL: Tab completes names, help() and help(\"fit\") explain, =expr prints,\n"
    "Ctrl-C interrupts a running call, Ctrl-D quits. Docs: doc/guide.md.\n";

static void print_usage(const char *bad) {
  if (bad[1] == 'e' || bad[1] == 'l') fprintf(stderr, "salta: '%s' needs argument\n", bad);
  else fprintf(stderr, "salta: unrecognized option '%s'\n", bad);
  fputs(usage_text, stderr);
}

/* Returns the flags; *first: index of the script, 0 if none. */
static int collectargs(char **argv, int *first) {
  int args = 0;
  *first = 0;
  for (int i = 1; argv[i] != NULL; i++) {
    *first = i;
    const char *a = argv[i];
    if (a[0] != '-' || a[1] == '\0') return args;  /* script or "-" */
    if (a[1] == '-') {
      if (strcmp(a, "--help") == 0) { args |= has_help; continue; }
      if (strcmp(a, "--version") == 0) { args |= has_v; continue; }
      if (a[2] != '\0') return has_error;
      *first = argv[i + 1] != NULL ? i + 1 : 0;
      return args;
    }
    switch (a[1]) {
      case 'E': args |= has_E; break;
      case 'i': args |= has_i; break;
      case 'v': args |= has_v; break;
      case 'h': args |= has_help; break;
      case 'e':
      case 'l':
        if (a[1] == 'e') args |= has_e;
        if (a[2] == '\0' && (argv[++i] == NULL || argv[i][0] == '-'))
          return has_error;
        continue;
      default: return has_error;
    }
    if (a[2] != '\0') return has_error;
  }
  *first = 0;
  return args;
}

/* -l name (or g=name): require("name") into the global g (or name). */
static int dolibrary(lua_State *L, const char *arg) {
  const char *eq = strchr(arg, '=');
  const char *mod = eq ? eq + 1 : arg;
  int status;
  lua_getglobal(L, "require");
  lua_pushstring(L, mod);
  status = docall(L, 1, 1);
  if (status != LUA_OK) return report(L, status), 0;
  if (eq) lua_pushlstring(L, arg, (size_t)(eq - arg)); else lua_pushstring(L, arg);
  lua_insert(L, -2);
  lua_setglobal(L, lua_tostring(L, -2));
  lua_pop(L, 1);
  return 1;
}

/* Runs the -e and -l options in order; returns 0 on the first failure. */
static int runargs(lua_State *L, char **argv, int n) {
  for (int i = 1; i < n; i++) {
    if (argv[i][0] != '-') continue;
    if (argv[i][1] == 'l') {
      if (!dolibrary(L, argv[i][2] != '\0' ? argv[i] + 2 : argv[++i])) return 0;
      continue;
    }
    if (argv[i][1] != 'e') continue;
    const char *code = argv[i][2] != '\0' ? argv[i] + 2 : argv[++i];
    int status = luaL_loadbuffer(L, code, strlen(code), "=(command line)");
    if (dochunk(L, status) != LUA_OK) return 0;
  }
  return 1;
}

static void createargtable(lua_State *L, char **argv, int argc, int script) {
  lua_createtable(L, argc - (script + 1), script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int handle_script(lua_State *L, char **argv) {
  const char *fname = argv[0];
  if (strcmp(fname, "-") == 0 && strcmp(argv[-1], "--") != 0) fname = NULL;
  int status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    if (lua_getglobal(L, "arg") != LUA_TTABLE)
      return luaL_error(L, "'arg' is not a table");
    int n = (int)luaL_len(L, -1);
    luaL_checkstack(L, n + 3, "too many arguments to script");
    for (int i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
    lua_remove(L, -n - 1);
    status = docall(L, n, LUA_MULTRET);
  }
  return report(L, status);
}

static int handle_luainit(lua_State *L) {
  const char *name = "=LUA_INIT_5_4";
  const char *init = getenv(name + 1);
  if (init == NULL) init = getenv((name = "=LUA_INIT") + 1);
  if (init == NULL) return LUA_OK;
  if (init[0] == '@') return dochunk(L, luaL_loadfile(L, init + 1));
  return dochunk(L, luaL_loadbuffer(L, init, strlen(init), name));
}

/* C modules built beside the host (<dir>/lua/?.so: the MPI binding) or
** installed beside it (<prefix>/lib/lua/5.4/?.so), before the default
** cpath; the package table is on the stack top. */
static void setup_cpath(lua_State *L) {
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *slash;
  if (len <= 0) return;
  exe[len] = '\0';
  if ((slash = strrchr(exe, '/')) == NULL) return;
  *slash = '\0';
  lua_pushfstring(L, "%s/lua/?.so;%s/../lib/lua/5.4/?.so;", exe, exe);
  lua_getfield(L, -2, "cpath");
  lua_concat(L, 2);
  lua_setfield(L, -2, "cpath");
}

static void setup_modules(lua_State *L, int noenv) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_salta_core);
  lua_setfield(L, -2, "salta.core");
  lua_pushcfunction(L, luaopen_salta_tcc);
  lua_setfield(L, -2, "salta.tcc");
  lua_pop(L, 1);
  lua_getglobal(L, LUA_LOADLIBNAME);
  const char *dir = noenv ? NULL : getenv("SALTA_LUA_PATH");
  int n = 1;
  if (dir != NULL && dir[0] != '\0') {
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", dir, dir);
    n++;
  }
  {
    /* an installed host finds the installed library beside it:
    ** <prefix>/bin/salta -> <prefix>/share/lua/5.4 */
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;
    if (len > 0) {
      exe[len] = '\0';
      if ((slash = strrchr(exe, '/')) != NULL) {
        *slash = '\0';
        lua_pushfstring(L, "%s/../share/lua/5.4/?.lua;%s/../share/lua/5.4/?/init.lua;", exe, exe);
        n++;
      }
    }
  }
  lua_pushliteral(L, SALTA_LUA_DIR "/?.lua;" SALTA_LUA_DIR "/?/init.lua;");
  lua_getfield(L, -n - 1, "path");
  lua_concat(L, n + 1);
  lua_setfield(L, -2, "path");
  setup_cpath(L);
  lua_pop(L, 1);
}

/* `salta compile ...`: ahead-of-time compilation (lua/salta/aot.lua). */
static int run_compile(lua_State *L, int argc, char **argv) {
  int i;
  luaL_openlibs(L);
  setup_modules(L, 0);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "salta.aot");
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) return report(L, LUA_ERRRUN), 0;
  lua_getfield(L, -1, "main");
  lua_createtable(L, argc - 2, 0);
  for (i = 2; i < argc; ++i) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - 1);
  }
  /* no traceback: these are a command's usage and input errors */
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) return report(L, LUA_ERRRUN), 0;
  return lua_toboolean(L, -1);
}

static int pmain(lua_State *L) {
  int argc = (int)lua_tointeger(L, 1);
  char **argv = lua_touserdata(L, 2);
  int script;
  int args;
  if (argc >= 2 && strcmp(argv[1], "compile") == 0) {
    lua_pushboolean(L, run_compile(L, argc, argv));
    return 1;
  }
  args = collectargs(argv, &script);
  luaL_checkversion(L);
  if (args == has_error) {
    print_usage(argv[script]);
    return 0;
  }
  if (args & has_help) {
    fputs(usage_text, stdout);
    lua_pushboolean(L, 1);
    return 1;
  }
  if (args & has_v) printf("salta %s (%s)\n", salta_version(), LUA_VERSION);
  if (args & has_E) {
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);
  setup_modules(L, args & has_E);
  createargtable(L, argv, argc, script);
  lua_gc(L, LUA_GCRESTART);
  lua_gc(L, LUA_GCGEN, 0, 0);
  if (!(args & has_E) && handle_luainit(L) != LUA_OK) return 0;
  if (args & has_e) load_salta_global(L);
  if (!runargs(L, argv, script > 0 ? script : argc)) return 0;
  if (script > 0 && handle_script(L, argv + script) != LUA_OK) return 0;
  if (args & has_i) doREPL(L);
  else if (script == 0 && !(args & (has_e | has_v))) {
    if (isatty(STDIN_FILENO)) doREPL(L);
    else if (dochunk(L, luaL_loadfile(L, NULL)) != LUA_OK) return 0;
  }
  lua_pushboolean(L, 1);
  return 1;
}

int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    l_message("cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  lua_gc(L, LUA_GCSTOP);  /* no collections while the libraries load */
  lua_pushcfunction(L, pmain);
  lua_pushinteger(L, argc);
  lua_pushlightuserdata(L, argv);
  int status = lua_pcall(L, 2, 1, 0);
  int ok = status == LUA_OK && lua_toboolean(L, -1);
  report(L, status);
  if (!ok) abort_mpi_job(L);
  lua_close(L);
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
