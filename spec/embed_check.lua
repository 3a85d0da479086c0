-- Checks the numbers printed by examples/embed/ against the Lua API.
-- usage: salta spec/embed_check.lua cauer.out script.out
local salta = require("salta")
local passed, failed = 0, 0
local function check(ok, what)
  if ok then passed = passed + 1 else failed = failed + 1; print("FAIL " .. what) end
end
local function near(a, b, tol) return a and b and math.abs(a - b) <= tol * (1 + math.abs(b)) end

-- cauer_gradient.c: the same loss and gradient through salta.lsq
local lines = {}
for l in io.lines(arg[1]) do lines[#lines + 1] = l end
check(table.remove(lines, 1) == "version " .. salta.version, "the library's version")
local m = dofile("models/cauer.lua")()
local times = {}
for k = 0, 100 do times[k + 1] = 20 * k / 100 end
local tr = m:simulate{ tf = 20, times = times, rtol = 1e-10, atol = 1e-12, method = "erk" }
check(lines[1] == "events " .. #tr:events(), "event count: " .. tostring(lines[1]))
local free = { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" }
local data = {}
for _, n in ipairs({ "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" }) do data[n] = tr.y[n] end
local loss = salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-8, atol = 1e-10, method = "erk" }
local start = { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 }
local v, g = loss:value_and_grad(start)
check(near(tonumber(lines[2]:match("^loss (%S+)")), v, 1e-10), "loss: " .. lines[2] .. " vs " .. v)
for k, n in ipairs(free) do
  local c = tonumber((lines[2 + k] or ""):match("^grad " .. n .. " (%S+)"))
  check(near(c, g[k], 1e-9), ("dL/d%s: %s vs %.12e"):format(n, tostring(c), g[k]))
end

for k, n in ipairs(free) do   -- the C fd route agrees with the sensitivities
  local c = tonumber((lines[9 + k] or ""):match("^fd " .. n .. " (%S+)"))
  check(near(c, g[k], 1e-4 * math.abs(g[k]) / (1 + math.abs(g[k]))), ("fd dL/d%s: %s vs %.12e"):format(n, tostring(c), g[k]))
end

-- the C check's verdict and routes are loss:check_gradient's
local rep = loss:check_gradient{ at = start, routes = { "sens", "adjoint_cont" } }
check(lines[17] == "check " .. rep.verdict, ("check: %s vs %s"):format(tostring(lines[17]), rep.verdict))
local function verdict_of(r)
  return r.ok and "ok" or r.ill_conditioned and "ill-conditioned" or r.uncertain and "uncertain"
    or r.undefined and "not differentiable" or r.error and "refused" or "disagree"
end
for k, r in ipairs(rep.routes) do
  local verdict, worst = (lines[17 + k] or ""):match("^route %d+ (%S+) worst (%S+)")
  check(verdict == verdict_of(r) and math.abs((tonumber(worst) or -1) - r.worst) <= 1e-2 * r.worst,
    ("route %s: %s vs %s, worst %.3g"):format(r.name, tostring(lines[17 + k]), verdict_of(r), r.worst))
end

-- run_script.c: the script's numbers, recomputed here
local out = {}
for l in io.lines(arg[2]) do out[#out + 1] = tonumber(l) end
_G.input = { 9.5, 0.7 }
local expect = dofile("examples/embed/script.lua")
_G.input = nil
check(#out == #expect, ("run_script printed %d numbers, expected %d"):format(#out, #expect))
for i = 1, #expect do check(near(out[i], expect[i], 1e-11), ("script value %d: %s vs %.12e"):format(i, tostring(out[i]), expect[i])) end
print(("[embed] %d passed, %d failed"):format(passed, failed))
os.exit(failed == 0 and 0 or 1)
