-- One model, eight experiments: the Cauer ladder driven at eight source
-- amplitudes (V_V, known per experiment), its four continuous states
-- measured with noise of known standard deviation (sigma per output; C3_v,
-- which the reinit resets, is left out: a target between a fitted and a
-- measured reset time makes the unblended loss jump), the seven component
-- values shared. salta.experiments makes one loss of the eight;
-- salta.fit fits it (Levenberg-Marquardt, a horizon continuation) and its
-- standard errors use the known sigma. Under mpirun the experiments are
-- split across the ranks; only rank 0 prints and writes.
--
--   salta examples/multi_experiment.lua [outdir]
--   mpirun -n 2 salta examples/multi_experiment.lua [outdir]
local salta = require("salta")
local mpi = require("salta.mpi")

local outdir = (...) or "multi_experiment_out"
if mpi.is_root() then os.execute(("mkdir -p '%s'"):format(outdir)) end

local X = dofile("examples/cauer_experiment.lua")
local m = X.model
local OUT = { "L2_i", "L1_i", "C5_v", "C1_v" }
local SIGMA = { L2_i = 0.005, L1_i = 0.005, C5_v = 0.01, C1_v = 0.01 }
local AMPLITUDES = { 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0 }

local times = {}
for i = 0, 200 do times[i + 1] = 20 * i / 200 end
local gauss = salta.gaussian(20261203)
local losses, names = {}, {}
for e, V in ipairs(AMPLITUDES) do
  local clean = m:simulate{ tf = 20, times = times, params = { V_V = V }, rtol = 1e-10, atol = 1e-12 }
  local data = {}
  for _, n in ipairs(OUT) do
    data[n] = {}
    for i, v in ipairs(clean.y[n]) do data[n][i] = v + SIGMA[n] * gauss() end
  end
  names[e] = ("V=%.1f"):format(V)
  losses[e] = salta.lsq{ model = m, times = times, data = data, free = X.FREE, params = { V_V = V },
    sigma = SIGMA, rtol = 1e-8, atol = 1e-10 }
end
local E = salta.experiments{ losses = losses, names = names, shared = X.FREE }
mpi.print(("%s\n%d experiments on %d rank(s), %d targets x %d outputs each"):format(tostring(E), #losses,
  mpi.size(), #times, #OUT))

local r = salta.fit{ loss = E, start = X.START, method = "lm", truth = X.truth, horizon = true, print_every = 0 }
mpi.print(r:table())
local se = assert(r:std_errors())
mpi.print("\nerror of each parameter in standard errors (about 1 when the noise is the only error):")
for k, n in ipairs(X.FREE) do mpi.print(("  %-6s %+.2f"):format(n, (r.x[k] - X.truth[n]) / se[n])) end

if mpi.is_root() then
  local fitted = m:simulate{ tf = 20, times = times, params = (function()
    local p = { V_V = AMPLITUDES[#AMPLITUDES] }
    for n, v in pairs(r.params) do p[n] = v end
    return p
  end)() }
  local last = losses[#losses]
  salta.plot.trajectory(outdir .. "/multi_experiment.png", fitted, { outputs = { "C1_v", "C5_v" },
    data = { t = times, C1_v = last.columns.C1_v, C5_v = last.columns.C5_v },
    title = "Cauer ladder, 8 amplitudes: the fit at V = 2.0" })
  r:to_json(outdir .. "/multi_experiment.json")
  print("results and plot in " .. outdir .. "/")
end
return r
