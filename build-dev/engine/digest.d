build-dev/engine/digest.o: engine/src/digest.c engine/src/digest.h \
 engine/include/salta.h engine/include/salta_kernel.h
engine/src/digest.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
