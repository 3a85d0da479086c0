build-dev/engine/interrupt.o: engine/src/interrupt.c \
 engine/include/salta.h engine/include/salta_kernel.h
engine/include/salta.h:
engine/include/salta_kernel.h:
