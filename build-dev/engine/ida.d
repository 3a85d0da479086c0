build-dev/engine/ida.o: engine/src/ida.c engine/src/errors.h \
 engine/src/integrator.h engine/src/dae.h engine/src/algebraic.h \
 engine/src/pattern.h engine/include/salta_kernel.h engine/src/sparselu.h \
 engine/include/salta.h engine/include/salta_kernel.h engine/src/sens.h \
 engine/src/linsol.h
engine/src/errors.h:
engine/src/integrator.h:
engine/src/dae.h:
engine/src/algebraic.h:
engine/src/pattern.h:
engine/include/salta_kernel.h:
engine/src/sparselu.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
engine/src/sens.h:
engine/src/linsol.h:
