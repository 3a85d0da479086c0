-- Fitting a hybrid model to measured data: a DC motor under a bang-bang
-- speed controller with hysteresis (models/dcmotor.lua), driven by a
-- measured setpoint and load torque, its current implicit and switching
-- with the relay, its start speed a parameter. The "measurements" are an
-- independent simulation (examples/dcmotor_reference.lua: Runge-Kutta in
-- plain Lua) of 10 s at 100 Hz with Gaussian noise of known sigma, written
-- to a CSV file and read back as a user's data would be.
--
-- The recipe of the guide ("Fitting a hybrid model to measured data"):
--   * sigma given, so that the loss is chi^2 / N and the standard errors
--     need no estimate of the noise;
--   * transform = "log" for parameters that are positive and of different
--     scales;
--   * event_window = true: the current jumps at every switching of the
--     relay, and a sample between a fitted and a measured switching is a
--     residual of a hundred sigma that the gradient does not see; the
--     windows drop the current near each fitted switching;
--   * horizon = true: stages from the switchings of the run at each
--     stage's start, the first before the first switching, holding what a
--     stage cannot determine.
-- From a start 15-40 % off, Levenberg-Marquardt then recovers every
-- parameter within its standard errors. Prints the report, the error of
-- each parameter in standard errors, and writes a plot and JSON.
--
--   salta examples/dcmotor_fit.lua [outdir] [seed]
local salta = require("salta")

local outdir = (...) or "dcmotor_fit_out"   -- the script's argument, or a caller's
local seed = tonumber((select(2, ...))) or 2025
os.execute(("mkdir -p '%s'"):format(outdir))

local ref = dofile(salta.resource("examples/dcmotor_reference.lua"))
local m = dofile(salta.resource("models/dcmotor.lua"))()
local FREE = { "K", "R", "J", "b", "dlt", "w0" }
local truth = {}
for _, n in ipairs(FREE) do truth[n] = ref.TRUTH[n] end
local start = { K = 0.06, R = 0.8, J = 0.025, b = 2.6e-4, dlt = 4.0, w0 = 120 }   -- 20 to 30 % off

-- the measurements: 100 Hz for 10 s, sigma 0.5 rad/s and 0.2 A
local times = {}
for k = 1, 1000 do times[k] = k * 0.01 end
local data, clean = ref.measure(seed, times)
local csv = outdir .. "/dcmotor_measured.csv"
salta.write_csv(csv, { "t", "w", "i" }, { t = times, w = data.w, i = data.i })
print(("DC motor: %d samples of speed and current (%s), %d relay switchings, noise sigma %g rad/s and %g A"):format(
  #times, csv, #clean.events, ref.SIGMA.w, ref.SIGMA.i))

local loss = salta.lsq{ model = m, data = csv, sigma = ref.SIGMA, free = FREE, transform = "log",
  event_window = true }
local r = salta.fit{ loss = loss, start = start, truth = truth, horizon = true, print_every = 0 }
print(r:report())
local se = assert(r:std_errors())
print("\nerror of each parameter in standard errors:")
for k, n in ipairs(FREE) do print(("  %-4s %+.2f"):format(n, (r.x[k] - truth[n]) / se[n])) end

r:plot(outdir .. "/dcmotor.png")
r:to_json(outdir .. "/dcmotor.json", { seed = seed })
print("results and plot in " .. outdir .. "/")
return r
