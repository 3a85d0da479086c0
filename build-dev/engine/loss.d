build-dev/engine/loss.o: engine/src/loss.c engine/src/blend.h \
 engine/src/errors.h engine/src/loss_impl.h engine/src/dae.h \
 engine/src/algebraic.h engine/src/pattern.h \
 engine/include/salta_kernel.h engine/src/sparselu.h \
 engine/include/salta.h engine/include/salta_kernel.h engine/src/start.h \
 engine/src/sim_impl.h engine/src/dbuf.h engine/src/events.h \
 engine/src/sens.h engine/src/tol.h
engine/src/blend.h:
engine/src/errors.h:
engine/src/loss_impl.h:
engine/src/dae.h:
engine/src/algebraic.h:
engine/src/pattern.h:
engine/include/salta_kernel.h:
engine/src/sparselu.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
engine/src/start.h:
engine/src/sim_impl.h:
engine/src/dbuf.h:
engine/src/events.h:
engine/src/sens.h:
engine/src/tol.h:
