build-dev/engine/sparselu.o: engine/src/sparselu.c \
 /usr/include/suitesparse/klu.h /usr/include/suitesparse/amd.h \
 /usr/include/suitesparse/SuiteSparse_config.h \
 /usr/include/suitesparse/colamd.h /usr/include/suitesparse/btf.h \
 engine/src/sparselu.h engine/src/pattern.h engine/include/salta_kernel.h \
 engine/include/salta.h engine/include/salta_kernel.h
/usr/include/suitesparse/klu.h:
/usr/include/suitesparse/amd.h:
/usr/include/suitesparse/SuiteSparse_config.h:
/usr/include/suitesparse/colamd.h:
/usr/include/suitesparse/btf.h:
engine/src/sparselu.h:
engine/src/pattern.h:
engine/include/salta_kernel.h:
engine/include/salta.h:
engine/include/salta_kernel.h:
