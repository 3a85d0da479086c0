build-dev/engine/adjoint.o: engine/src/adjoint.c \
 engine/src/adjoint_impl.h engine/src/dae.h engine/src/algebraic.h \
 engine/src/pattern.h engine/include/salta_kernel.h engine/src/sparselu.h \
 engine/include/salta.h engine/include/salta_kernel.h \
 engine/src/loss_impl.h engine/src/errors.h engine/src/linsol.h \
 engine/src/start.h
engine/src/adjoint_impl.h:
engine/src/dae.h:
engine/src/algebraic.h:
engine/src/pattern.h:
engine/include/salta_kernel.h:
engine/src/sparselu.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
engine/src/loss_impl.h:
engine/src/errors.h:
engine/src/linsol.h:
engine/src/start.h:
