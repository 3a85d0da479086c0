# salta -- build, test, bench, demo, install.
#   make deps          install the Debian packages (as root; idempotent)
#   make               libsalta.a, libsalta.so, the salta host, salta/core.so
#   make test          C unit tests + busted specs (host and lua5.4)
#   make test SANITIZE=1   the same with AddressSanitizer and UBSan
#   make fuzz [FUZZ_SECONDS=600]   mutation and truth fuzzing (spec/fuzz/fuzz.lua): half
#                      the time on the normal build, half on the sanitizer build
#   make bench | demo | install PREFIX=...

PREFIX ?= /usr/local
CC ?= cc

ifeq ($(SANITIZE),1)
BUILD := build-san
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
OPT := -O1
else
BUILD := build
SANFLAGS :=
OPT := -O3 -fno-trapping-math
endif

LUA_INC := /usr/include/lua5.4
CPPFLAGS := -D_POSIX_C_SOURCE=200809L -I/usr/include/suitesparse -Iengine/include -Iengine/src -I$(BUILD) -I$(LUA_INC) -Ibindings
CFLAGS := -std=c11 -Wall -Wextra -Werror -g $(OPT) -fPIC $(SANFLAGS)
ENGINE_LIBS := -lsundials_idas -lsundials_nvecserial -lsundials_sunmatrixdense -lsundials_sunmatrixsparse -lsundials_sunlinsolklu -lklu -llapacke -lopenblas -lsodium -ldl -lm
HOST_LIBS := -Wl,-E -l:liblua5.4.a -ltcc -ledit -ldl -lm
OPTIM_LIBS := -lcminpack -llbfgsb

DEB_PACKAGES := build-essential pkg-config lua5.4 liblua5.4-dev libsundials-dev \
  libopenblas-dev liblapacke-dev libtcc-dev lua-busted lua-cjson lua-yaml \
  libedit-dev libsuitesparse-dev libcminpack-dev liblbfgsb-dev gnuplot-nox \
  libopenmpi-dev openmpi-bin libsodium-dev lua-lpeg

ENGINE_SRC := $(wildcard engine/src/*.c)
ENGINE_OBJ := $(ENGINE_SRC:engine/src/%.c=$(BUILD)/engine/%.o)
CORE_SRC := bindings/lcore.c bindings/lsalta.c bindings/lmodel.c bindings/lsim.c bindings/lloss.c bindings/loptim.c
CORE_OBJ := $(CORE_SRC:bindings/%.c=$(BUILD)/bindings/%.o)
HOST_OBJ := $(BUILD)/bindings/salta_host.o $(BUILD)/bindings/repl_print.o $(BUILD)/bindings/jit_tcc.o
TEST_SRC := $(wildcard engine/tests/test_*.c)
TEST_BIN := $(TEST_SRC:engine/tests/%.c=$(BUILD)/tests/%)
LUA_DIR := $(abspath lua)
# one version, in salta.h; the shared library's soname carries the major
VERSION := $(shell sed -n 's/^\#define SALTA_VERSION "\(.*\)"/\1/p' engine/include/salta.h)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))
ifeq ($(VERSION),)
$(error no SALTA_VERSION found in engine/include/salta.h)
endif

.PHONY: all deps test fuzz bench demo doc install clean
all: $(BUILD)/libsalta.a $(BUILD)/libsalta.so $(BUILD)/salta $(BUILD)/lua/salta/core.so \
  $(BUILD)/lua/salta/mpi_core.so

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	  | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# -MMD: each object also depends on the headers it includes (build/**/*.d)
$(BUILD)/engine/%.o: engine/src/%.c | $(BUILD)/engine
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/bindings/%.o: bindings/%.c $(BUILD)/kernel_abi.h | $(BUILD)/bindings
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -DSALTA_LUA_DIR='"$(LUA_DIR)"' -c -o $@ $<

-include $(ENGINE_OBJ:.o=.d) $(CORE_OBJ:.o=.d) $(HOST_OBJ:.o=.d)

# The kernel ABI header, as a C string for the code generator.
$(BUILD)/kernel_abi.h: engine/include/salta_kernel.h | $(BUILD)
	{ echo 'static const char salta_kernel_abi[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/  "/' -e 's/$$/\\n"/' $<; echo ';'; } > $@

$(BUILD)/libsalta.a: $(ENGINE_OBJ)
	rm -f $@; ar rcs $@ $^

$(BUILD)/libsalta.so.$(VERSION): $(ENGINE_OBJ)
	$(CC) $(CFLAGS) -shared -Wl,-soname,libsalta.so.$(SOMAJOR) -o $@ $^ $(ENGINE_LIBS)

$(BUILD)/libsalta.so: $(BUILD)/libsalta.so.$(VERSION)
	ln -sf libsalta.so.$(VERSION) $(BUILD)/libsalta.so.$(SOMAJOR)
	ln -sf libsalta.so.$(SOMAJOR) $@

$(BUILD)/lua/salta/core.so: $(CORE_OBJ) $(ENGINE_OBJ) | $(BUILD)/lua/salta
	$(CC) $(CFLAGS) -shared -o $@ $^ $(OPTIM_LIBS) $(ENGINE_LIBS)

# The MPI binding, a module of its own: built where Debian's OpenMPI is
# (libopenmpi-dev, checked when the recipe runs, so that a make that has
# just installed it builds it), so that nothing else links MPI.
$(BUILD)/lua/salta/mpi_core.so: bindings/lmpi.c | $(BUILD)/lua/salta
	@if pkg-config --exists ompi-c; then \
	  echo "$(CC) ... -shared -o $@ $< (OpenMPI)"; \
	  $(CC) $(CPPFLAGS) $$(pkg-config --cflags ompi-c) $(CFLAGS) -shared -o $@ $< $$(pkg-config --libs ompi-c) -ldl; \
	else echo "no OpenMPI (libopenmpi-dev): salta.mpi_core not built"; fi

$(BUILD)/salta: $(HOST_OBJ) $(CORE_OBJ) $(ENGINE_OBJ)
	$(CC) $(CFLAGS) -no-pie -o $@ $^ $(HOST_LIBS) $(OPTIM_LIBS) $(ENGINE_LIBS)

$(BUILD)/tests/%: engine/tests/%.c engine/tests/check.h $(BUILD)/libsalta.a | $(BUILD)/tests
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(BUILD)/libsalta.a $(ENGINE_LIBS)

$(BUILD) $(BUILD)/engine $(BUILD)/bindings $(BUILD)/tests $(BUILD)/lua/salta $(BUILD)/bench:
	mkdir -p $@

test: deps all $(TEST_BIN)
	@sh spec/run.sh $(BUILD) $(SANITIZE)

# Two workers; the sanitizer half starts at seed FUZZ_SEED + 1000000 and runs
# whatever the first half found; either half failing fails the target.
FUZZ_SECONDS ?= 600
FUZZ_SEED ?= 1
fuzz: deps
	$(MAKE) --no-print-directory SANITIZE= all
	$(MAKE) --no-print-directory SANITIZE=1 all
	status=0; \
	SALTA_BIN=build/salta OPENBLAS_NUM_THREADS=1 build/salta spec/fuzz/fuzz.lua $$(($(FUZZ_SECONDS) / 2)) \
	  $(FUZZ_SEED) 2 || status=1; \
	SALTA_BIN=build-san/salta OPENBLAS_NUM_THREADS=1 build/salta spec/fuzz/fuzz.lua $$(($(FUZZ_SECONDS) / 2)) \
	  $$(($(FUZZ_SEED) + 1000000)) 2 || status=1; \
	exit $$status

# the hand-written C floor the bench compares the default route with
FLOOR_BIN := $(BUILD)/bench/floor_balls $(BUILD)/bench/floor_cauer $(BUILD)/bench/floor_idas_cauer \
  $(BUILD)/bench/floor_idas_stiff
FLOOR_HDR := examples/bench/floor_harness.h examples/bench/floor_cauer_model.h examples/bench/floor_idas.h
$(BUILD)/bench/floor_idas_%: examples/bench/floor_idas_%.c $(FLOOR_HDR) | $(BUILD)/bench
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -o $@ $< -lsundials_idas \
	  -lsundials_nvecserial -lsundials_sunmatrixdense -lsundials_sunlinsoldense -lm
$(BUILD)/bench/%: examples/bench/%.c $(FLOOR_HDR) | $(BUILD)/bench
	$(CC) -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -o $@ $< -lm

bench: deps all $(FLOOR_BIN)
	SALTA_FLOOR_DIR=$(BUILD)/bench OPENBLAS_NUM_THREADS=1 $(BUILD)/salta examples/bench.lua

demo: deps all
	$(BUILD)/salta examples/demo.lua

# the generated documents of doc/ (spec/doc_spec.lua fails when one is stale)
doc: all
	$(BUILD)/salta -e 'require("salta.docgen").write("doc")'

# make install PREFIX=...: libraries, headers, pkg-config file, Lua modules, host.
LUADIR := $(PREFIX)/share/lua/5.4
CLUADIR := $(PREFIX)/lib/lua/5.4
install: all
	mkdir -p $(PREFIX)/bin $(PREFIX)/lib/pkgconfig $(PREFIX)/include $(LUADIR)/salta $(CLUADIR)/salta
	cp $(BUILD)/salta $(PREFIX)/bin/salta
	rm -f $(PREFIX)/lib/libsalta.so.$(VERSION)   # a running host may map the old file
	cp -P $(BUILD)/libsalta.a $(BUILD)/libsalta.so $(BUILD)/libsalta.so.$(SOMAJOR) $(BUILD)/libsalta.so.$(VERSION) $(PREFIX)/lib/
	cp engine/include/salta.h engine/include/salta_kernel.h $(PREFIX)/include/
	cp lua/salta/*.lua $(LUADIR)/salta/
	cp $(BUILD)/lua/salta/core.so $(CLUADIR)/salta/core.so
	sed -e 's|@PREFIX@|$(abspath $(PREFIX))|' -e 's|@LIBS@|$(ENGINE_LIBS)|' -e 's|@VERSION@|$(VERSION)|' \
	  engine/salta.pc.in > $(PREFIX)/lib/pkgconfig/salta.pc

clean:
	rm -rf build build-san
