build-dev/engine/pattern.o: engine/src/pattern.c engine/src/pattern.h \
 engine/include/salta_kernel.h
engine/src/pattern.h:
engine/include/salta_kernel.h:
