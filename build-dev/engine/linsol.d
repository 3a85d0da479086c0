build-dev/engine/linsol.o: engine/src/linsol.c engine/src/linsol.h
engine/src/linsol.h:
