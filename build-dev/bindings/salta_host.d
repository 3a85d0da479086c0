build-dev/bindings/salta_host.o: bindings/salta_host.c \
 /usr/include/lua5.4/lua.h /usr/include/lua5.4/luaconf.h \
 /usr/include/lua5.4/lauxlib.h /usr/include/lua5.4/lua.h \
 /usr/include/lua5.4/lualib.h engine/include/salta.h \
 engine/include/salta_kernel.h bindings/repl_print.h
/usr/include/lua5.4/lua.h:
/usr/include/lua5.4/luaconf.h:
/usr/include/lua5.4/lauxlib.h:
/usr/include/lua5.4/lua.h:
/usr/include/lua5.4/lualib.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
bindings/repl_print.h:
