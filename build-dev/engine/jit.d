build-dev/engine/jit.o: engine/src/jit.c engine/src/digest.h \
 engine/src/errors.h engine/include/salta.h engine/include/salta_kernel.h
engine/src/digest.h:
engine/src/errors.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
