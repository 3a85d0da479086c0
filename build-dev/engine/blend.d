build-dev/engine/blend.o: engine/src/blend.c engine/src/blend.h
engine/src/blend.h:
