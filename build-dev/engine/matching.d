build-dev/engine/matching.o: engine/src/matching.c engine/src/matching.h
engine/src/matching.h:
