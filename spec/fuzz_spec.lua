-- The fuzz driver sorts what a case did: it must see a crash, a sanitizer
-- report, a hang, a silent NaN, an unclear message, a name that did not
-- come back and a payload that ran for what they are.
-- A stand-in for the host plays each outcome on its own seed.
local FAKE = [[#!/bin/sh
case "$2" in
  1) echo OK ;;
  2) kill -SEGV $$ ;;
  3) echo "ERROR ./lua/salta/spec.lua:437: attempt to index a number value" ;;
  4) echo "==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x1"; exit 1 ;;
  5) sleep 30 ;;
  6) echo "SILENT-NAN gradient[2] = nan" ;;
  7) echo "ERROR model 'ball': f for state 'v' is nan at t = 0.5" ;;
  8) echo "runtime error: signed integer overflow"; exit 1 ;;
  9) echo "NAMES output \"a,b\" of model \"m\" did not come back intact" ;;
  10) echo "PAYLOAD a name's payload ran (it created /tmp/x)" ;;
  *) echo OK ;;
esac
]]

describe("make fuzz's driver", function()
  it("sorts crashes, sanitizer reports, hangs, silent NaNs and unclear messages, and fails on them", function()
    local bin = os.tmpname()
    local f = assert(io.open(bin, "w"))
    f:write(FAKE)
    f:close()
    assert(os.execute("chmod +x " .. bin))
    local host = os.getenv("SALTA_BIN") or "build/salta"
    local p = assert(io.popen(("FUZZ_TIMEOUT=1 SALTA_BIN=%s %s spec/fuzz/fuzz.lua 1 1 3; echo rc=$?"):format(bin, host)))
    local out = p:read("a")
    p:close()
    os.remove(bin)
    assert(out:find("fuzz: 12 cases (seeds 1..12)", 1, true), out)
    assert(out:find("ok 3, refused 1, unclear 1, silent-nan 1, names 1, payload 1, crash 1, sanitizer 2, hang 1", 1, true),
      out)
    for _, line in ipairs({ "crash      seed 2", "unclear    seed 3", "sanitizer  seed 4", "hang       seed 5",
      "silent-nan seed 6: gradient[2] = nan", "sanitizer  seed 8", "names      seed 9", "payload    seed 10" }) do
      assert(out:find(line, 1, true), ("%q not in\n%s"):format(line, out))
    end
    assert(out:find("rc=1", 1, true), out)
  end)
end)
