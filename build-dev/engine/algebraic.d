build-dev/engine/algebraic.o: engine/src/algebraic.c \
 engine/src/algebraic.h engine/src/pattern.h \
 engine/include/salta_kernel.h engine/src/sparselu.h \
 engine/include/salta.h engine/include/salta_kernel.h engine/src/linsol.h \
 engine/src/tol.h
engine/src/algebraic.h:
engine/src/pattern.h:
engine/include/salta_kernel.h:
engine/src/sparselu.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
engine/src/linsol.h:
engine/src/tol.h:
