-- make bench: the parallel efficiency of salta.experiments. Eight Cauer
-- experiments (as examples/multi_experiment.lua, 201 targets x 4 outputs),
-- one loss-and-gradient evaluation timed REPEATS times; run alone and under
-- mpirun -n 2 by examples/bench.lua. Rank 0 prints the median and minimum
-- per evaluation, the compute per experiment (alone) and the time of one
-- allreduce of the gradient (under mpirun).
--
--   salta examples/bench/mpi_experiments.lua [REPEATS]
local salta = require("salta")
local mpi = require("salta.mpi")
local clock = require("salta.core").clock

local repeats = tonumber((...)) or 41
local X = dofile("examples/cauer_experiment.lua")
-- with a cold cache each process builds cc kernels in the background
local m = dofile("examples/bench/common.lua").wait_for_cc(X.model)
local OUT = { "L2_i", "L1_i", "C5_v", "C1_v" }
local times = {}
for i = 0, 200 do times[i + 1] = 20 * i / 200 end
local losses = {}
for e, V in ipairs({ 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0 }) do
  local clean = m:simulate{ tf = 20, times = times, params = { V_V = V }, rtol = 1e-10, atol = 1e-12 }
  local data = {}
  for _, n in ipairs(OUT) do data[n] = clean.y[n] end
  losses[e] = salta.lsq{ model = m, times = times, data = data, free = X.FREE, params = { V_V = V },
    rtol = 1e-6, atol = 1e-6 }
end
local E = salta.experiments{ losses = losses, shared = X.FREE }
local p = X.START
E:value_and_grad(p)   -- warm-up
local function median(xs)
  table.sort(xs)
  return xs[(#xs + 1) // 2], xs[1]
end
local xs = {}
for k = 1, repeats do
  local t0 = clock()
  E:value_and_grad(p)
  xs[k] = (clock() - t0) * 1e6
end
local med, min = median(xs)
mpi.print(("ranks %d experiments %d median_us %.1f min_us %.1f"):format(mpi.size(), #losses, med, min))
-- the collective alone: one allreduce of a gradient's worth of numbers
local ys, buf = {}, {}
for k = 1, #X.FREE + 1 do buf[k] = k end
for k = 1, 201 do
  local t0 = clock()
  mpi.allreduce(buf)
  ys[k] = (clock() - t0) * 1e6
end
local amed = median(ys)
mpi.print(("allreduce_us %.2f"):format(amed))
