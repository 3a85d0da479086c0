-- Multi-start: the bouncing balls (N = 3, the seed paper's model) fitted
-- from 32 starts sampled in a box (Latin hypercube), each by
-- Levenberg-Marquardt; the final losses sorted into a waterfall plot (the
-- plateaus are the minima; the lowest, reached from several starts, the
-- global one). Under mpirun the starts are split across the ranks; only
-- rank 0 prints and writes.
--
--   salta examples/multistart.lua [outdir]
--   mpirun -n 2 salta examples/multistart.lua [outdir]
local salta = require("salta")
local mpi = require("salta.mpi")

local outdir = (...) or "multistart_out"
if mpi.is_root() then os.execute(("mkdir -p '%s'"):format(outdir)) end

local m = dofile("models/bouncing_balls.lua"){ N = 3 }
local truth = { g = 9.81, e_g = 0.5, e_b = 0.9 }
local times = {}
for i = 0, 200 do times[i + 1] = 1.9 * i / 200 end
local tr = m:simulate{ tf = 1.9, times = times, params = truth, rtol = 1e-10, atol = 1e-12 }
local data, outputs = {}, {}
for i = 1, 3 do
  for _, c in ipairs({ "x", "y" }) do
    local n = c .. i
    outputs[#outputs + 1], data[n] = n, tr.y[n]
  end
end
local loss = salta.lsq{ model = m, times = times, data = data, outputs = outputs, free = { "g", "e_g", "e_b" },
  rtol = 1e-8, atol = 1e-10 }

local r = salta.fit{ loss = loss, method = "lm", starts = 32, sampling = "latin", seed = 7,
  lower = { g = 5, e_g = 0.2, e_b = 0.5 }, upper = { g = 15, e_g = 0.95, e_b = 1.0 }, truth = truth }
mpi.print(("%d starts on %d rank(s) in %.2f s"):format(#r.starts, mpi.size(), r.multistart_s))
mpi.print(r:starts_table())
mpi.print("\nthe best start:\n" .. r:table())
r:waterfall(outdir .. "/waterfall.png", { title = "bouncing balls N = 3: 32 Latin starts" })
mpi.print("waterfall plot in " .. outdir .. "/waterfall.png")
return r
