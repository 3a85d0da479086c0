build-dev/bindings/lsalta.o: bindings/lsalta.c /usr/include/lua5.4/lua.h \
 /usr/include/lua5.4/luaconf.h /usr/include/lua5.4/lauxlib.h \
 /usr/include/lua5.4/lua.h build-dev/kernel_abi.h bindings/lcore.h \
 engine/include/salta.h engine/include/salta_kernel.h bindings/ljit.h \
 engine/include/salta_kernel.h
/usr/include/lua5.4/lua.h:
/usr/include/lua5.4/luaconf.h:
/usr/include/lua5.4/lauxlib.h:
/usr/include/lua5.4/lua.h:
build-dev/kernel_abi.h:
bindings/lcore.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
bindings/ljit.h:
engine/include/salta_kernel.h:
