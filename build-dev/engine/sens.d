build-dev/engine/sens.o: engine/src/sens.c engine/src/errors.h \
 engine/src/sens.h engine/src/dae.h engine/src/algebraic.h \
 engine/src/pattern.h engine/include/salta_kernel.h engine/src/sparselu.h \
 engine/include/salta.h engine/include/salta_kernel.h engine/src/start.h \
 engine/src/tol.h
engine/src/errors.h:
engine/src/sens.h:
engine/src/dae.h:
engine/src/algebraic.h:
engine/src/pattern.h:
engine/include/salta_kernel.h:
engine/src/sparselu.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
engine/src/start.h:
engine/src/tol.h:
