build-dev/engine/version.o: engine/src/version.c engine/include/salta.h \
 engine/include/salta_kernel.h
engine/include/salta.h:
engine/include/salta_kernel.h:
