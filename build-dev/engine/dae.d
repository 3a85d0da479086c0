build-dev/engine/dae.o: engine/src/dae.c engine/src/dae.h \
 engine/src/algebraic.h engine/src/pattern.h \
 engine/include/salta_kernel.h engine/src/sparselu.h \
 engine/include/salta.h engine/include/salta_kernel.h engine/src/errors.h \
 engine/src/linsol.h engine/src/tol.h
engine/src/dae.h:
engine/src/algebraic.h:
engine/src/pattern.h:
engine/include/salta_kernel.h:
engine/src/sparselu.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
engine/src/errors.h:
engine/src/linsol.h:
engine/src/tol.h:
