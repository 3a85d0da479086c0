build-dev/engine/dbuf.o: engine/src/dbuf.c engine/src/dbuf.h
engine/src/dbuf.h:
