build-dev/engine/locate.o: engine/src/locate.c engine/src/errors.h \
 engine/src/events.h engine/src/dae.h engine/src/algebraic.h \
 engine/src/pattern.h engine/include/salta_kernel.h engine/src/sparselu.h \
 engine/include/salta.h engine/include/salta_kernel.h engine/src/dbuf.h \
 engine/src/tol.h
engine/src/errors.h:
engine/src/events.h:
engine/src/dae.h:
engine/src/algebraic.h:
engine/src/pattern.h:
engine/include/salta_kernel.h:
engine/src/sparselu.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
engine/src/dbuf.h:
engine/src/tol.h:
