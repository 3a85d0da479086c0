build-dev/engine/adjoint_sweep.o: engine/src/adjoint_sweep.c \
 engine/src/adjoint_impl.h engine/src/dae.h engine/src/algebraic.h \
 engine/src/pattern.h engine/include/salta_kernel.h engine/src/sparselu.h \
 engine/include/salta.h engine/include/salta_kernel.h \
 engine/src/loss_impl.h engine/src/errors.h engine/src/blend.h \
 engine/src/linsol.h
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
engine/src/blend.h:
engine/src/linsol.h:
