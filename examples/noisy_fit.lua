-- Fitting noisy data, with uncertainties: the Cauer ladder's five state
-- trajectories with Gaussian noise (sigma = 0.01 by default, a fixed seed),
-- seven parameters by Levenberg-Marquardt from the paper's biased start,
-- with a continuation on the horizon whose first window (t <= 3) holds
-- enough of the step response to pin all seven down. Prints the fit with
-- standard errors, each parameter's error in standard errors, and writes
-- a plot of the fit against the data.
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
local loss = salta.lsq{ model = m, data = csv, free = FREE, rtol = 1e-10, atol = 1e-12, method = "erk" }
local r = salta.fit{ loss = loss, start = START, method = "lm", truth = truth, horizon = { 3, 6, 12 },
  print_every = 5 }
print(r:table())

-- The residuals: noise, except at targets that fall between a fitted and a
-- measured event time, where C3_v was reset from 0.5 to 0 in one of them
-- and not yet in the other. Those few inflate the noise estimate s^2 of
-- the standard errors; marked missing (NaN), the fit and its standard
-- errors are those of the noise alone.
local res, no = loss:residuals(r.x), #OUT
local cleaned, dropped = {}, 0
for j, n in ipairs(OUT) do cleaned[n] = { table.unpack(data[n]) } end
for k, v in ipairs(res) do
  if math.abs(v * math.sqrt(#res)) > 5 * sigma then   -- residuals are (y - d) / sqrt(N)
    local i, j = (k - 1) // no + 1, (k - 1) % no + 1
    cleaned[OUT[j]][i] = 0 / 0
    dropped = dropped + 1
  end
end
print(("\n%d residuals above 5 sigma, at targets between a fitted and a measured event: refitted "
  .. "without them"):format(dropped))
local clean_loss = salta.lsq{ model = m, times = times, data = cleaned, outputs = OUT, free = FREE,
  rtol = 1e-10, atol = 1e-12, method = "erk" }
local rc = salta.fit{ loss = clean_loss, start = r.x, method = "lm", truth = truth, print_every = 0 }
print(rc:table())
local se, why = rc:std_errors()
if not se then error("no standard errors: " .. tostring(why)) end
print("\nerror of each parameter in standard errors (about 1 in size when the noise is the only error):")
for k, n in ipairs(FREE) do
  print(("  %-6s %+.2f"):format(n, (rc.x[k] - truth[n]) / se[n]))
end
print(("residual standard deviation %.4g (the noise: %g)"):format(
  math.sqrt(rc.loss * (#times * no - dropped) / (#times * no - dropped - #FREE)), sigma))
r = rc

local fitted = m:simulate{ tf = 20, times = times, params = r.params }
salta.plot.trajectory(outdir .. "/cauer_noisy.png", fitted, { outputs = { "C3_v", "C1_v" },
  data = { t = times, C3_v = data.C3_v, C1_v = data.C1_v }, title = "Cauer ladder: fit to noisy data" })
r:to_json(outdir .. "/cauer_noisy.json", { sigma = sigma })
print("results and plot in " .. outdir .. "/")
return r
