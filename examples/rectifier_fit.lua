-- Fitting a diode rectifier (models/rectifier.lua: a discrete diode mode,
-- an algebraic current, events on a voltage and on the current) to a noisy
-- measurement of its output voltage: the diode's forward voltage and
-- on-resistance and the capacitor, by Levenberg-Marquardt in log space with
-- gradients through every switching of the diode. The load resistor is
-- known: from the voltage alone only Ron C and R C are determined (v' =
-- (vs - v - Vf) / (Ron C) - v / (R C) while the diode conducts). Prints the
-- fit against the truth and writes a plot of the fit against the data.
--
--   salta examples/rectifier_fit.lua [outdir]
local salta = require("salta")

local outdir = (...) or "rectifier_fit_out"   -- the script's argument, or a caller's
os.execute(("mkdir -p '%s'"):format(outdir))

local m = dofile("models/rectifier.lua")()
local truth = { Vf = 0.7, Ron = 2.0, C = 1.0e-4 }
local FREE = { "Vf", "Ron", "C" }
local start = { Vf = 0.5, Ron = 3.0, C = 1.5e-4 }

-- 4 periods at 50 Hz sampled at 5 kHz, noise 20 mV (a fixed seed)
local times = {}
for i = 1, 400 do times[i] = i * 2e-4 end
local clean = m:simulate{ tf = 0.08, times = times, rtol = 1e-10, atol = 1e-12 }
local gauss = salta.gaussian(7)
local v = {}
for i, x in ipairs(clean.y.v) do v[i] = x + 0.02 * gauss() end
print(("rectifier: %d samples of the output voltage, %d diode switchings, noise 20 mV"):format(#times,
  #clean:events()))

local loss = salta.lsq{ model = m, times = times, data = { v = v }, outputs = { "v" }, free = FREE,
  transform = "log", rtol = 1e-8, atol = 1e-10 }
-- a small initial step bound: in log space a step of 100 |x| (the default) leaves any sensible range
local r = salta.fit{ loss = loss, start = start, method = "lm", truth = truth, print_every = 5, factor = 0.1 }
print(r:table())

local fitted = m:simulate{ tf = 0.08, times = times, params = r.params }
salta.plot.trajectory(outdir .. "/rectifier.png", fitted, { outputs = { "v" }, data = { t = times, v = v },
  title = "half-wave rectifier: fit to the noisy output voltage" })
r:to_json(outdir .. "/rectifier.json")
print("results and plot in " .. outdir .. "/")
return r
