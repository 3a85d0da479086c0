build-dev/bindings/repl_print.o: bindings/repl_print.c \
 /usr/include/lua5.4/lauxlib.h /usr/include/lua5.4/luaconf.h \
 /usr/include/lua5.4/lua.h /usr/include/lua5.4/lua.h \
 /usr/include/lua5.4/lualib.h bindings/repl_print.h
/usr/include/lua5.4/lauxlib.h:
/usr/include/lua5.4/luaconf.h:
/usr/include/lua5.4/lua.h:
/usr/include/lua5.4/lua.h:
/usr/include/lua5.4/lualib.h:
bindings/repl_print.h:
