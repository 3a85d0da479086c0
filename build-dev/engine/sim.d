build-dev/engine/sim.o: engine/src/sim.c engine/src/errors.h \
 engine/src/integrator.h engine/src/dae.h engine/src/algebraic.h \
 engine/src/pattern.h engine/include/salta_kernel.h engine/src/sparselu.h \
 engine/include/salta.h engine/include/salta_kernel.h engine/src/sens.h \
 engine/src/sim_impl.h engine/src/dbuf.h engine/src/events.h \
 engine/src/start.h engine/src/tol.h
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
engine/src/sim_impl.h:
engine/src/dbuf.h:
engine/src/events.h:
engine/src/start.h:
engine/src/tol.h:
