-- make demo: the flagship example. Identify the seven capacitances and
-- inductances of the Cauer low-pass ladder (a hybrid DAE: 5 states, 3
-- algebraic variables, a state reset whenever C3_v rises through 0.5) from
-- its simulated trajectories, starting 3-9 % off: Levenberg-Marquardt on
-- exact gradients through the events, with a continuation on the horizon.
-- Writes JSON and a plot to build/demo/.
print("salta demo: fitting the Cauer ladder (the seed paper's experiment) -- examples/cauer_fit.lua lm\n")
arg = { [0] = "examples/cauer_fit.lua", "lm", "build/demo" }
local results = dofile("examples/cauer_fit.lua")
local worst = 0
for _, v in pairs(results.lm:errors()) do worst = math.max(worst, v) end
assert(worst < 1e-4, "the demo fit did not reach the true parameters")
print("\ndemo: every parameter recovered to " .. string.format("%.1e %%", worst))
