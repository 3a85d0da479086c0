#!/bin/sh
# The engine's layout rules: no source file over 700 lines, no call cycle
# between engine files (from the symbols their objects define and use).
# usage: engine/tests/layers.sh BUILD_DIR
build=${1:-build}
passed=0 failed=0
for f in engine/src/*.c engine/src/*.h; do
  n=$(wc -l < "$f")
  if [ "$n" -gt 700 ]; then echo "FAIL $f has $n lines (at most 700)"; failed=$((failed + 1)); else passed=$((passed + 1)); fi
done
defs=$(mktemp) edges=$(mktemp)
trap 'rm -f "$defs" "$edges"' EXIT
for o in "$build"/engine/*.o; do
  nm --defined-only "$o" | awk -v f="$(basename "$o" .o)" '$2 ~ /^[TDB]$/ {print $3, f}'
done > "$defs"
for o in "$build"/engine/*.o; do
  nm -u "$o" | awk '{print $2}' | grep '^salta' | awk -v f="$(basename "$o" .o)" 'NR == FNR {def[$1] = $2; next}
    ($1 in def) && def[$1] != f {print f, def[$1]}' "$defs" -
done | sort -u > "$edges"
if tsort "$edges" > /dev/null 2>&1; then
  passed=$((passed + 1))
else
  echo "FAIL a call cycle between engine files:"; tsort "$edges" 2>&1 >/dev/null | sed 's/^/  /'
  failed=$((failed + 1))
fi
echo "[c:layers] $passed passed, $failed failed"
[ "$failed" -eq 0 ]
