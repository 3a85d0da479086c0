-- The fuzz driver sorts what a case did: it must see a crash, a sanitizer
-- report, a hang, a silent NaN, an unclear message, a name that did not
-- come back, a payload that ran, and a truth case's disagreement and wrong
-- gradient for what they are (failures), and its ill-conditioned and
-- inconclusive outcomes as not failing; odd seeds run the mutation case,
-- even seeds the truth case.
-- A stand-in for the host plays each outcome on its own seed (and crashes
-- if it is given the wrong script for the seed).
local FAKE = [[#!/bin/sh
want=spec/fuzz/case.lua
[ $(($2 % 2)) -eq 0 ] && want=spec/fuzz/truth.lua
[ "$1" = "$want" ] || { echo "wrong script $1 for seed $2"; exit 3; }
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
  12) echo "DISAGREE erk rtol 1e-06 vs reference: extra event 'floor' at t = 0.5" ;;
  14) echo "WRONG-GRADIENT sens bdf: dL/de = 1, differences 2" ;;
  16) echo "ILL-CONDITIONED erk rtol 1e-06 vs reference: extra event 'stop', after near-grazing crossing" ;;
  18) echo "INCONCLUSIVE erk rtol 1e-12 vs bdf rtol 1e-12: output 'x' at t = 1" ;;
  *) echo OK ;;
esac
]]

describe("make fuzz's driver", function()
  it("sorts crashes, sanitizer reports, hangs, silent NaNs, unclear messages, disagreements and wrong gradients, "
    .. "and fails on them", function()
    local bin = os.tmpname()
    local f = assert(io.open(bin, "w"))
    f:write(FAKE)
    f:close()
    assert(os.execute("chmod +x " .. bin))
    local host = os.getenv("SALTA_BIN") or "build/salta"
    local p = assert(io.popen(("FUZZ_TIMEOUT=1 SALTA_BIN=%s %s spec/fuzz/fuzz.lua 1 1 5; echo rc=$?"):format(bin, host)))
    local out = p:read("a")
    p:close()
    os.remove(bin)
    assert(out:find("fuzz: 20 cases (seeds 1..20)", 1, true), out)
    assert(out:find("ok 7, refused 1, ill-conditioned 1, inconclusive 1, unclear 1, silent-nan 1, names 1, payload 1, "
      .. "disagree 1, wrong-gradient 1, crash 1, sanitizer 2, hang 1", 1, true), out)
    for _, line in ipairs({ "crash          seed 2 (truth.lua)", "unclear        seed 3 (case.lua)",
      "sanitizer      seed 4", "hang           seed 5", "silent-nan     seed 6 (truth.lua): gradient[2] = nan",
      "sanitizer      seed 8", "names          seed 9", "payload        seed 10",
      "disagree       seed 12 (truth.lua): erk rtol 1e-06 vs reference: extra event 'floor' at t = 0.5",
      "wrong-gradient seed 14 (truth.lua): sens bdf: dL/de = 1, differences 2" }) do
      assert(out:find(line, 1, true), ("%q not in\n%s"):format(line, out))
    end
    for _, seed in ipairs({ 16, 18 }) do   -- not failures
      assert(not out:find(("seed %d "):format(seed), 1, true), out)
    end
    assert(out:find("rc=1", 1, true), out)
  end)
end)

describe("make fuzz's truth case", function()
  local gen = dofile("spec/fuzz/models.lua")

  it("generates the same model from the same seed", function()
    for _, seed in ipairs({ 2, 86, 5740 }) do
      local a, b = gen.generate(seed), gen.generate(seed)
      assert.are.same(a.constructs, b.constructs)
      assert.are.same(a.times, b.times)
      assert.are.same(a.free, b.free)
    end
  end)

  it("ends with one line of a known class, never an error of its own", function()
    local host = os.getenv("SALTA_BIN") or "build/salta"
    for _, seed in ipairs({ 2, 8 }) do
      local p = assert(io.popen(("%s spec/fuzz/truth.lua %d 2>&1"):format(host, seed)))
      local last = p:read("a"):match("([^\n]*)\n?$")
      p:close()
      local ok = last == "OK"
      for _, prefix in ipairs({ "ERROR model '", "DISAGREE ", "WRONG%-GRADIENT ", "ILL%-CONDITIONED ", "INCONCLUSIVE " }) do
        ok = ok or last:find("^" .. prefix) ~= nil
      end
      assert(ok and not last:find("truth.lua:", 1, true), ("seed %d: %s"):format(seed, last))
    end
  end)
end)
