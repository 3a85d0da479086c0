#!/bin/sh
# Embedding: install into a temporary prefix, build examples/embed/ against
# it with pkg-config (an ahead-of-time compiled Cauer model without Lua, and
# a host embedding Lua + salta), run both, and check their numbers against
# the Lua API (spec/embed_check.lua). Ends with "[embed] N passed, N failed".
# usage: spec/embed_test.sh BUILD_DIR
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "embed: $*"; echo "[embed] 0 passed, 1 failed"; exit 1; }

make -s install PREFIX="$tmp/prefix" BUILD="$build" > "$tmp/install.log" 2>&1 || fail "make install failed: $(tail -5 "$tmp/install.log")"
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
"$tmp/prefix/bin/salta" compile models/cauer.lua -o "$tmp/cauer_model.c" 2> "$tmp/compile.log" \
  || fail "salta compile failed: $(cat "$tmp/compile.log")"
cc -std=c11 -Wall -Wextra -Werror examples/embed/cauer_gradient.c "$tmp/cauer_model.c" \
  $(pkg-config --cflags --libs salta) -o "$tmp/cauer_gradient" || fail "building cauer_gradient failed"
cc -std=c11 -Wall -Wextra -Werror examples/embed/run_script.c $(pkg-config --cflags lua5.4) -llua5.4 \
  -o "$tmp/run_script" || fail "building run_script failed"
"$tmp/cauer_gradient" > "$tmp/cauer.out" || fail "cauer_gradient failed"
SALTA_PREFIX="$tmp/prefix" "$tmp/run_script" examples/embed/script.lua 9.5 0.7 > "$tmp/script.out" \
  || fail "run_script failed"
# the shared library is versioned: linked by its soname, with the symlinks
soname=$(readelf -d "$tmp/prefix/lib/libsalta.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = "libsalta.so.0" ] && [ -e "$tmp/prefix/lib/$soname" ] || fail "libsalta.so has soname '$soname'"
readelf -d "$tmp/cauer_gradient" | grep -q "NEEDED.*\[libsalta.so.0\]" || fail "cauer_gradient does not need libsalta.so.0"
"$build"/salta spec/embed_check.lua "$tmp/cauer.out" "$tmp/script.out"
