build-dev/engine/model.o: engine/src/model.c engine/src/errors.h \
 engine/src/matching.h engine/include/salta.h \
 engine/include/salta_kernel.h
engine/src/errors.h:
engine/src/matching.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
