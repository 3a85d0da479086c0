-- Fitting a thermostat-controlled room (models/thermostat.lua: hysteresis
-- in a discrete heater state, driven by the hourly outdoor temperature of
-- examples/data/outdoor.csv, a start temperature that is a parameter) to
-- three days of noisy room temperature: the loss coefficient, the heater
-- power, the start temperature and both switching thresholds, by
-- Levenberg-Marquardt. Prints the fit against the truth and writes a plot.
--
--   salta examples/thermostat_fit.lua [outdir]
local salta = require("salta")

local outdir = (...) or "thermostat_fit_out"   -- the script's argument, or a caller's
os.execute(("mkdir -p '%s'"):format(outdir))

local m = dofile("models/thermostat.lua")()
local truth = { a = 0.15, P = 3.0, T0 = 16.0, T_lo = 19.0, T_hi = 21.0 }
local FREE = { "a", "P", "T0", "T_lo", "T_hi" }
local start = { a = 0.13, P = 3.3, T0 = 16.5, T_lo = 18.8, T_hi = 21.2 }

-- every 15 minutes for 72 hours, noise 0.05 deg C (a fixed seed)
local times = {}
for i = 1, 288 do times[i] = i * 0.25 end
local clean = m:simulate{ tf = 72, times = times, rtol = 1e-10, atol = 1e-12 }
local gauss = salta.gaussian(11)
local T = {}
for i, x in ipairs(clean.y.T) do T[i] = x + 0.05 * gauss() end
print(("thermostat: %d samples over 72 h, %d heater switchings, noise 0.05 deg C"):format(#times,
  #clean:events()))

local loss = salta.lsq{ model = m, times = times, data = { T = T }, free = FREE, rtol = 1e-8, atol = 1e-10 }
local r = salta.fit{ loss = loss, start = start, method = "lm", truth = truth, print_every = 5,
  horizon = { 12, 24, 48 } }
print(r:table())

local fitted = m:simulate{ tf = 72, times = times, params = r.params }
salta.plot.trajectory(outdir .. "/thermostat.png", fitted, { outputs = { "T" }, data = { t = times, T = T },
  title = "thermostat: fit to three days of room temperature" })
r:to_json(outdir .. "/thermostat.json")
print("results and plot in " .. outdir .. "/")
return r
