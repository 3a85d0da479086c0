build-dev/engine/start.o: engine/src/start.c engine/include/salta.h \
 engine/include/salta_kernel.h engine/src/errors.h engine/src/start.h \
 engine/src/dae.h engine/src/algebraic.h engine/src/pattern.h \
 engine/include/salta_kernel.h engine/src/sparselu.h
engine/include/salta.h:
engine/include/salta_kernel.h:
engine/src/errors.h:
engine/src/start.h:
engine/src/dae.h:
engine/src/algebraic.h:
engine/src/pattern.h:
engine/include/salta_kernel.h:
engine/src/sparselu.h:
