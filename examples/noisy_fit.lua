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
os.execute("mkdir -p " .. outdir)

local m = dofile("models/cauer.lua"){ backend = "cc" }
local FREE = { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" }
local START = { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 }
local OUT = { "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" }
local truth = {}
for _, n in ipairs(FREE) do truth[n] = m.p0[n] end

local times = {}
for i = 0, 500 do times[i + 1] = 20 * i / 500 end
local clean = m:simulate{ tf = 20, times = times, rtol = 1e-10, atol = 1e-12 }

-- Gaussian noise by Box-Muller on a fixed linear congruential sequence,
-- so that every run sees the same data
local seed = 20261202
local function uniform()
  seed = (1103515245 * seed + 12345) % 2147483648
  return (seed + 0.5) / 2147483648
end
local function gauss() return math.sqrt(-2 * math.log(uniform())) * math.cos(2 * math.pi * uniform()) end
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

local se = r:std_errors()
print("\nerror of each parameter in standard errors (about 1 in size when the noise is the only error):")
for k, n in ipairs(FREE) do
  print(("  %-6s %+.2f"):format(n, (r.x[k] - truth[n]) / se[n]))
end
-- the residuals: noise, except at targets that fall between a fitted and
-- a measured event time, where C3_v was reset from 0.5 to 0 in one of
-- them and not yet in the other
local res, outliers, s2, count = loss:residuals(r.x), 0, 0, 0
for _, v in ipairs(res) do
  local e = v * math.sqrt(#res)   -- residuals are (y - d) / sqrt(N)
  if math.abs(e) > 5 * sigma then outliers = outliers + 1 else s2, count = s2 + e * e, count + 1 end
end
print(("residual standard deviation %.4g without the %d residuals above 5 sigma, at targets between "
  .. "a fitted and a measured event (the noise: %g)"):format(math.sqrt(s2 / count), outliers, sigma))

local fitted = m:simulate{ tf = 20, times = times, params = r.params }
salta.plot.trajectory(outdir .. "/cauer_noisy.png", fitted, { outputs = { "C3_v", "C1_v" },
  data = { t = times, C3_v = data.C3_v, C1_v = data.C1_v }, title = "Cauer ladder: fit to noisy data" })
r:to_json(outdir .. "/cauer_noisy.json", { sigma = sigma })
print("results and plot in " .. outdir .. "/")
return r
