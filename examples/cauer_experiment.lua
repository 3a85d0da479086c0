-- The seed paper's Cauer experiment setup (models/cauer.lua), shared
-- by the Cauer examples: the model (cc backend), the seven free
-- parameters, the biased start the reference drew, the five state outputs,
-- the true values and the 501 uniform target times on [0, 20].
--
--   local X = dofile("examples/cauer_experiment.lua")
--   X.model, X.FREE, X.START, X.OUT, X.truth, X.times
local m = dofile("models/cauer.lua"){ backend = "cc" }
local X = {
  model = m,
  FREE = { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" },
  START = { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 },
  OUT = { "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" },
  truth = {},
  times = {},
}
for _, n in ipairs(X.FREE) do X.truth[n] = m.p0[n] end
for i = 0, 500 do X.times[i + 1] = 20 * i / 500 end
return X
