#!/bin/sh
# The layout rules of the engine, the bindings and the Lua library:
#  - no engine source file over 700 lines;
#  - no call cycle between engine files, nor between binding files (from
#    the symbols their objects define and use);
#  - no cycle in the Lua library's require graph (every require of a
#    salta module in lua/salta/*.lua, those inside functions included);
#  - no Lua function over 60 lines (luac's listing).
# usage: engine/tests/layers.sh BUILD_DIR
build=${1:-build}
passed=0 failed=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass() { passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

for f in engine/src/*.c engine/src/*.h; do
  n=$(wc -l < "$f")
  if [ "$n" -gt 700 ]; then fail "$f has $n lines (at most 700)"; else pass; fi
done

# acyclic LABEL EDGES: the edges file ("from to" lines) has no cycle.
acyclic() {
  if tsort "$2" > /dev/null 2>&1; then
    pass
  else
    fail "a cycle between $1:"; tsort "$2" 2>&1 >/dev/null | sed 's/^/  /'
  fi
}

# calls OBJECTS...: "caller callee" per pair of objects where one uses a
# symbol the other defines.
calls() {
  for o in "$@"; do
    nm --defined-only "$o" | awk -v f="$(basename "$o" .o)" '$2 ~ /^[TDB]$/ {print $3, f}'
  done > "$tmp/defs"
  for o in "$@"; do
    nm -u "$o" | awk '{print $2}' | awk -v f="$(basename "$o" .o)" 'NR == FNR {def[$1] = $2; next}
      ($1 in def) && def[$1] != f {print f, def[$1]}' "$tmp/defs" -
  done | sort -u
}

calls "$build"/engine/*.o > "$tmp/engine"
acyclic "engine files" "$tmp/engine"
calls "$build"/bindings/*.o > "$tmp/bindings"
acyclic "binding files" "$tmp/bindings"

# The require graph: module -> each salta module it requires (comments
# left out; lua/salta/init.lua is the module "salta").
for f in lua/salta/*.lua; do
  m=salta.$(basename "$f" .lua)
  [ "$m" = salta.init ] && m=salta
  sed 's/--.*$//' "$f" | grep -oE 'require[ (]*"salta(\.[a-z_]+)?"' | sed -E 's/.*"(.*)"/\1/' | sort -u \
    | awk -v m="$m" '{print m, $1}'
done > "$tmp/lua"
acyclic "Lua modules (require)" "$tmp/lua"

for f in lua/salta/*.lua; do
  luac5.4 -p -l "$f" | sed -nE 's/^function <[^:]*:([0-9]+),([0-9]+)>.*/\1 \2/p' \
    | awk -v f="$f" '$2 - $1 + 1 > 60 {print f ":" $1 ": a function of " $2 - $1 + 1 " lines (at most 60)"}'
done > "$tmp/long"
if [ -s "$tmp/long" ]; then fail "Lua functions too long:"; sed 's/^/  /' "$tmp/long"; else pass; fi

echo "[c:layers] $passed passed, $failed failed"
[ "$failed" -eq 0 ]
