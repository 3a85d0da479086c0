-- End to end: a relay-controlled hybrid model with an implicit algebraic
-- and input tables (models/dcmotor.lua: a DC motor under a bang-bang speed
-- controller with hysteresis, its current implicit and switching with the
-- relay, the start speed a parameter), fitted to noisy data from an
-- independent simulation (examples/dcmotor_reference.lua: Runge-Kutta in
-- plain Lua) by the recipe of the guide's "Fitting a hybrid model to
-- measured data": sigma, log parameters, event_window = true, horizon =
-- true, Levenberg-Marquardt; and the profiles of its estimates.
local salta = require("salta")

local ref = dofile("examples/dcmotor_reference.lua")
local m = dofile("models/dcmotor.lua")()
local FREE = { "K", "R", "J", "b", "dlt", "w0" }
local TIMES = {}
for k = 1, 1000 do TIMES[k] = k * 0.01 end

-- The recipe on data measured with seed, from start.
local function recipe(data, start)
  local loss = salta.lsq{ model = m, times = TIMES, data = data, sigma = ref.SIGMA, free = FREE, transform = "log",
    event_window = true }
  return salta.fit{ loss = loss, start = start, horizon = true, print_every = 0 }, loss
end

-- Each fitted parameter's error in standard errors.
local function z_scores(r)
  local se = assert(r:std_errors())
  local z = {}
  for k, n in ipairs(FREE) do z[n] = (r.x[k] - ref.TRUTH[n]) / se[n] end
  return z, se
end

describe("the DC motor under a relay (models/dcmotor.lua)", function()
  it("simulates as the independent reference does, switchings included", function()
    local y = ref.simulate(ref.TRUTH, TIMES)
    local tr = m:simulate{ tf = 10, times = TIMES, rtol = 1e-10, atol = 1e-10 }
    for k = 1, #TIMES do
      assert.is_near(y.w[k], tr.y.w[k], 1e-6)
      assert.is_near(y.i[k], tr.y.i[k], 1e-6)
    end
    local ev = tr:events()
    assert.are.equal(#y.events, #ev)
    assert.is_true(#ev >= 10)
    for q, e in ipairs(ev) do
      assert.are.equal(y.events[q].name, e.name)
      assert.is_near(y.events[q].t, e.t, 1e-7)
    end
  end)

  it("the recipe recovers every parameter within 3 standard errors from starts 15-40 % off", function()
    local data = ref.measure(2025, TIMES)
    local rng = salta.gaussian(77)
    for trial = 1, 6 do
      local start, shown = {}, {}
      for _, n in ipairs(FREE) do   -- 15 to 40 % off, either way
        local u = math.abs(rng())
        local f = (0.15 + 0.25 * (u % 1)) * (math.floor(u * 1000) % 2 == 0 and 1 or -1)
        start[n] = ref.TRUTH[n] * (1 + f)
        shown[#shown + 1] = ("%s %+.0f %%"):format(n, 100 * f)
      end
      local r, loss = recipe(data, start)
      local what = table.concat(shown, ", ") .. ": " .. r:table()
      assert.is_true(r.converged, what)
      for n, z in pairs(z_scores(r)) do assert.is_true(math.abs(z) <= 3, n .. " " .. what) end
      -- chi^2 / N below 1 by the windows' share of the data, not a misfit
      assert.is_true(r.loss > 0.8 and r.loss < 1.1, what)
      -- the first stage ends before the first switching of the run at the start, and holds the
      -- hysteresis, which nothing before a switching depends on
      local first = loss:event_times(start)[1]
      assert.is_true(r.stages[1].t_end < first, what)
      assert.are.equal(math.huge, r.stages[1].held_rse.dlt)
      assert.truthy(r:table():find("horizon 1 (t <= ", 1, true))
    end
  end)

  it("profiles on the treated loss agree with Wald within 20 % and contain the truth", function()
    local r = recipe(ref.measure(2025, TIMES), { K = 0.06, R = 0.8, J = 0.025, b = 2.6e-4, dlt = 4.0, w0 = 120 })
    local _, se = z_scores(r)
    local wald = r:confidence(0.95)
    for k, n in ipairs(FREE) do
      -- steps of half a standard error over +-3 of them (the default span is +-10 % of the estimate)
      local pr = r:profile(n, { range = { r.x[k] - 3 * se[n], r.x[k] + 3 * se[n] }, points = 13 })
      local ratio = (pr.interval[2] - pr.interval[1]) / (wald[n][2] - wald[n][1])
      assert.is_true(pr.bounded[1] and pr.bounded[2], pr:table())
      assert.is_true(math.abs(ratio - 1) <= 0.2, ("%s: width ratio %.3f\n%s"):format(n, ratio, pr:table()))
      assert.is_true(pr.interval[1] <= ref.TRUTH[n] and ref.TRUTH[n] <= pr.interval[2], pr:table())
    end
  end)

  it("the treatment's estimates are unbiased over 10 noise draws", function()
    local start = { K = 0.06, R = 0.8, J = 0.025, b = 2.6e-4, dlt = 4.0, w0 = 120 }
    local sum, sum2, n = {}, {}, 10
    for _, p in ipairs(FREE) do sum[p], sum2[p] = 0, 0 end
    for draw = 1, n do
      local r = recipe(ref.measure(100 + draw, TIMES), start)
      for p, z in pairs(z_scores(r)) do assert.is_true(math.abs(z) <= 3, ("draw %d: %s"):format(draw, r:table())) end
      for k, p in ipairs(FREE) do sum[p], sum2[p] = sum[p] + r.x[k], sum2[p] + r.x[k] ^ 2 end
    end
    for _, p in ipairs(FREE) do
      local mean = sum[p] / n
      local sem = math.sqrt((sum2[p] - n * mean * mean) / (n - 1) / n)
      assert.is_true(math.abs(mean - ref.TRUTH[p]) <= 3 * sem,
        ("%s: mean %.6g, truth %.6g, standard error of the mean %.3g"):format(p, mean, ref.TRUTH[p], sem))
    end
  end)
end)
