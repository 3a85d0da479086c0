build-dev/engine/errors.o: engine/src/errors.c engine/src/errors.h
engine/src/errors.h:
