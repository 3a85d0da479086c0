#!/bin/sh
# Runs every test: the C unit tests, then the busted specs under the salta
# host and under plain lua5.4; ends with the total "N passed, N failed".
# usage: spec/run.sh BUILD_DIR [SANITIZE]
build=${1:-build}
sanitize=${2:-}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0

for t in "$build"/tests/test_*; do
  [ -x "$t" ] || continue
  "$t" 2>&1 | tee -a "$log" || status=1
done
sh engine/tests/layers.sh "$build" 2>&1 | tee -a "$log"

# The host program under test, for specs that run it as a process.
SALTA_BIN="$build/salta"
export SALTA_BIN
if [ -n "$sanitize" ]; then SALTA_SANITIZE=1; export SALTA_SANITIZE; fi

# Specs get a private JIT cache so that every run compiles for real once.
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
trap 'rm -f "$log"; rm -rf "$XDG_CACHE_HOME"' EXIT

busted_args="--lpath=./lua/?.lua;./lua/?/init.lua;./spec/?.lua -o spec/support/output.lua spec"
SALTA_TEST_LABEL="busted/salta" "$build"/salta /usr/bin/busted $busted_args 2>&1 | tee -a "$log" || status=1
if [ -z "$sanitize" ]; then
  SALTA_TEST_LABEL="busted/lua5.4" lua5.4 /usr/bin/busted --cpath="./$build/lua/?.so" $busted_args 2>&1 \
    | tee -a "$log" || status=1
fi

if [ -z "$sanitize" ]; then
  sh spec/embed_test.sh "$build" 2>&1 | tee -a "$log"
fi

passed=$(sed -n 's/^\[[^]]*\] \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(sed -n 's/^\[[^]]*\] \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' "$log" | awk '{s+=$1} END {print s+0}')
runs=$(grep -c '^\[[^]]*\] [0-9]* passed' "$log")
expected=$(( $(ls "$build"/tests/test_* 2>/dev/null | wc -l) + 2 + 2 * (${#sanitize} == 0) ))
if [ "$runs" -lt "$expected" ]; then
  echo "spec/run.sh: only $runs of $expected test runners reported (a runner crashed)"
  failed=$((failed + 1))
fi
[ "$failed" -eq 0 ] || status=1
echo "$passed passed, $failed failed"
exit $status
