build-dev/bindings/jit_tcc.o: bindings/jit_tcc.c \
 /usr/include/lua5.4/lua.h /usr/include/lua5.4/luaconf.h \
 /usr/include/lua5.4/lauxlib.h /usr/include/lua5.4/lua.h bindings/ljit.h \
 engine/include/salta_kernel.h
/usr/include/lua5.4/lua.h:
/usr/include/lua5.4/luaconf.h:
/usr/include/lua5.4/lauxlib.h:
/usr/include/lua5.4/lua.h:
bindings/ljit.h:
engine/include/salta_kernel.h:
