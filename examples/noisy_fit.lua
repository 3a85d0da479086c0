-- Fitting noisy data, with uncertainties: the Cauer ladder's five state
-- trajectories with Gaussian noise (sigma = 0.01 by default, a fixed seed),
-- seven parameters by Levenberg-Marquardt from the paper's biased start,
-- with a continuation on the horizon whose first window (t <= 3) holds
-- enough of the step response to pin all seven down. C3_v jumps at every
-- reset of the reinit: event windows drop its data near each fitted reset
-- (a target between a fitted and a measured reset would be a residual of
-- 0.5 that no gradient sees). Prints the fit with standard errors, each
-- parameter's error in standard errors, and writes a plot of the fit
-- against the data.
--
--   salta examples/noisy_fit.lua [sigma] [outdir]
local salta = require("salta")

local sigma = tonumber(arg and arg[1]) or 0.01
local outdir = arg and arg[2] or "noisy_fit_out"
os.execute(("mkdir -p '%s'"):format(outdir))

local X = dofile("examples/cauer_experiment.lua")
local m, FREE, START, OUT, truth, times = X.model, X.FREE, X.START, X.OUT, X.truth, X.times
local clean = m:simulate{ tf = 20, times = times, rtol = 1e-10, atol = 1e-12 }

-- Gaussian noise from a fixed seed (salta.gaussian),
-- so that every run sees the same data
local gauss = salta.gaussian(20261202)
local data = { t = times }
for _, n in ipairs(OUT) do
  data[n] = {}
  for i, v in ipairs(clean.y[n]) do data[n][i] = v + sigma * gauss() end
end
local csv = outdir .. "/cauer_noisy.csv"
salta.write_csv(csv, { "t", table.unpack(OUT) }, data)
print(("Cauer ladder, noise sigma = %g on %d x %d targets (written to %s)"):format(sigma, #times, #OUT, csv))

-- the data straight from the CSV file
local loss = salta.lsq{ model = m, data = csv, free = FREE, rtol = 1e-10, atol = 1e-12, method = "erk",
  event_window = true }
local r = salta.fit{ loss = loss, start = START, method = "lm", truth = truth, horizon = { 3, 6, 12 },
  print_every = 5 }
print(r:table())
local se, why = r:std_errors()
if not se then error("no standard errors: " .. tostring(why)) end
print("\nerror of each parameter in standard errors (about 1 in size when the noise is the only error):")
for k, n in ipairs(FREE) do
  print(("  %-6s %+.2f"):format(n, (r.x[k] - truth[n]) / se[n]))
end

local fitted = m:simulate{ tf = 20, times = times, params = r.params }
salta.plot.trajectory(outdir .. "/cauer_noisy.png", fitted, { outputs = { "C3_v", "C1_v" },
  data = { t = times, C3_v = data.C3_v, C1_v = data.C1_v }, title = "Cauer ladder: fit to noisy data" })
r:to_json(outdir .. "/cauer_noisy.json", { sigma = sigma })
print("results and plot in " .. outdir .. "/")
return r
