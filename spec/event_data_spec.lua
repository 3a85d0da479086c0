-- Event times as data: salta.lsq{event_data = {...}} matches an event's
-- k-th measured time with its k-th firing. Every route differentiates it
-- (check_gradient; through groups, cascade rounds and a terminal end
-- against a closed form), it mixes with ordinary targets, a firing the run does
-- not reach is the documented penalty, and fits to noisy impact and
-- switching times (data from closed forms) recover the parameters within
-- three standard errors.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

-- The ball's impact times from h = 1 at rest: t1 (1 + 2 sum_{i<k} e^i), t1 = sqrt(2 / g).
local function impacts(g, e, n)
  local out, t1, s = {}, math.sqrt(2 / g), 0
  for k = 1, n do
    out[k] = t1 * (1 + 2 * s)
    s = s + e ^ k
  end
  return out
end

-- The relay's switching times up to tf in closed form (from T = 15, heating).
local function switches(a, P, lo, hi, tf)
  local top = 10 + P / a
  local off, on, t = {}, {}, math.log((top - 15) / (top - hi)) / a
  while t <= tf do
    off[#off + 1] = t
    t = t + math.log((hi - 10) / (lo - 10)) / a
    if t > tf then break end
    on[#on + 1] = t
    t = t + math.log((top - lo) / (top - hi)) / a
  end
  return off, on
end

-- Seeded standard normal noise (Box-Muller on helpers' generator).
local function normal(seed)
  local u = H.rng(seed)
  return function()
    local a, b = u(), u()
    return math.sqrt(-2 * math.log(1 - a)) * math.cos(2 * math.pi * b)
  end
end

local function noisy(times, sigma, seed)
  local z, out = normal(seed), {}
  for k, t in ipairs(times) do out[k] = t + sigma * z() end
  return out
end

describe("event times as data", function()
  it("are residuals (tau - t) / sigma over all data, with the outputs' first", function()
    local m = H.ball()
    local data = impacts(9.81, 0.8, 4)
    local shifted = { data[1] + 0.01, data[2] - 0.02, data[3], data[4] + 0.03 }
    local L = salta.lsq{ model = m, event_data = { impact = { times = shifted, sigma = 0.01 } }, free = { "g" },
      rtol = 1e-11, atol = 1e-13 }
    local r = L:residuals({ 9.81 })
    assert.are.equal(4, #r)
    local want = { -1, 2, 0, -3 }
    for k = 1, 4 do assert.is_near(want[k] / 2, r[k], 1e-6) end   -- / sqrt(N), N = 4
    assert.is_near(14 / 4, L:value({ 9.81 }), 1e-5)
    assert.is_true(L:absolute())
    -- with ordinary targets: their residuals first, N counting both
    local tr = m:simulate{ tf = 2, times = { 0.1, 0.2, 0.3 } }
    local M = salta.lsq{ model = m, times = { 0.1, 0.2, 0.3 }, data = { h = tr.y.h }, event_data = { impact = data },
      free = { "g" }, rtol = 1e-11, atol = 1e-13 }
    local rm = M:residuals({ 9.81 })
    assert.are.equal(7, #rm)
    for k = 1, 7 do assert.is_true(math.abs(rm[k]) < 1e-6) end
    assert.is_false(M:absolute())
    assert.truthy(tostring(M):find("event times of impact (4)", 1, true))
  end)

  it("are differentiated alike by sens, the discrete adjoint and differences (check_gradient)", function()
    local m = H.ball()
    local L = salta.lsq{ model = m, event_data = { impact = { times = noisy(impacts(9.7, 0.82, 6), 0.01, 3),
      sigma = 0.01 } }, free = { "g", "e", "x0.h" }, rtol = 1e-9, atol = 1e-11 }
    local rep = L:check_gradient{ at = { 9.81, 0.8, 1.0 } }
    assert.are.equal("ok", rep.verdict, tostring(rep))
    -- mixed with ordinary targets, blended too
    local times = H.uniform(2.5, 40)
    local tr = m:simulate{ tf = 2.5, times = times, params = { g = 9.7, e = 0.82 } }
    for _, blend in ipairs({ 0, 40 }) do
      local M = salta.lsq{ model = m, times = times, data = { h = tr.y.h }, blend = blend,
        event_data = { impact = { times = { tr:events()[1].t + 0.01, tr:events()[2].t - 0.01, 0 / 0,
          tr:events()[4].t } } }, free = { "g", "e" }, rtol = 1e-9, atol = 1e-11 }
      local rep2 = M:check_gradient{ at = { 9.81, 0.8 } }
      assert.are.equal("ok", rep2.verdict, tostring(rep2))
      assert.are.equal(40 + 3, #M:residuals({ 9.81, 0.8 }))   -- the NaN counts its firing, with no residual
    end
    -- beside a robust loss and event windows on the outputs
    for _, o in ipairs({ { robust = "huber" }, { event_window = true }, { robust = "cauchy", event_window = 0.05 } }) do
      local M = salta.lsq{ model = m, times = times, data = { h = tr.y.h }, robust = o.robust,
        event_window = o.event_window, event_data = { impact = { times = { tr:events()[1].t + 0.01,
          tr:events()[2].t - 0.01, 0 / 0, tr:events()[4].t } } }, free = { "g", "e" }, rtol = 1e-9, atol = 1e-11 }
      local rep3 = M:check_gradient{ at = { 9.81, 0.8 } }
      assert.are.equal("ok", rep3.verdict, tostring(rep3))
    end
  end)

  it("of a relay's switches are differentiated alike by every route", function()
    local off, on = switches(0.5, 8, 19, 21, 10)
    local L = salta.lsq{ model = H.relay(), event_data = { off = noisy(off, 0.01, 5), on = noisy(on, 0.01, 6) },
      free = { "T_lo", "T_hi", "a" }, rtol = 1e-9, atol = 1e-11 }
    local rep = L:check_gradient{ at = { 18.9, 21.2, 0.52 } }
    assert.are.equal("ok", rep.verdict, tostring(rep))
  end)

  it("match a firing the run does not reach with the end of the run: a penalty continuous in p", function()
    local m = salta.dae{ name = "shot", states = { { "y", 1 }, { "v", 2 } }, params = { { "g", 9.81 }, { "top", 1.2 } },
      f = function(t, x, z, p) return { x.v, -p.g } end,
      events = {
        { name = "ceiling", direction = "up", guard = function(t, x, z, p) return x.y - p.top end,
          reset = function(t, x) return { v = -x.v } end },
        { name = "ground", direction = "down", guard = function(t, x) return x.y end, terminal = true },
      } }
    -- two ceiling hits measured, one fired before the ground ends the run: the second is matched with t_end
    local L = salta.lsq{ model = m, event_data = { ceiling = { 0.1, 0.5 } }, free = { "g", "top" }, rtol = 1e-11,
      atol = 1e-13, tf = 2 }
    local tr = m:simulate{ tf = 2, params = { g = 9.81, top = 1.2 }, sens = { "g", "top" }, rtol = 1e-11,
      atol = 1e-13 }
    local hit, t_end = tr:events()[1].t, tr.t_end
    local r = L:residuals({ 9.81, 1.2 })
    assert.is_near((hit - 0.1) / math.sqrt(2), r[1], 1e-9)
    assert.is_near((t_end - 0.5) / math.sqrt(2), r[2], 1e-9)
    local J = L:jacobian({ 9.81, 1.2 })
    assert.is_near(tr.dt_end.g / math.sqrt(2), J[2][1], 1e-7)
    local rep = L:check_gradient{ at = { 9.81, 1.2 } }
    assert.are.equal("ok", rep.verdict, tostring(rep))
    -- continuous as a firing leaves the run: the ball's first impact, sqrt(2 / g), passes tf = 1 at g = 2
    local B = salta.lsq{ model = H.ball(), event_data = { impact = { 0.45 } }, free = { "g" }, tf = 1, rtol = 1e-11,
      atol = 1e-13 }
    local before, after = B:value({ 2 + 1e-6 }), B:value({ 2 - 1e-6 })
    assert.is_near(0.55 ^ 2, before, 1e-6)
    assert.is_near(before, after, 1e-6)
    assert.are.equal(0, B:grad({ 2 - 1e-6 })[1])   -- at tf the end does not move
  end)

  -- A saw: x' = a until x reaches p, where A and A2 fire together (a
  -- group) and B in the round their resets start (a cascade), resetting x;
  -- a terminal event at T. Every firing at k p / a; B's fourth, not
  -- reached, is matched with the end T.
  it("are differentiated by every route through groups, cascade rounds and a terminal end: the closed form",
    function()
    local m = salta.dae{ name = "saw", states = { { "x", 0 }, { "y", 0 }, { "u", 0 } },
      params = { { "a", 2 }, { "p", 1 }, { "T", 1.7 } },
      f = function(t, x, z, p) return { p.a, 0, 0 } end,
      events = {
        { name = "A", direction = "up", guard = function(t, x, z, p) return x.x - p.p end,
          reset = function() return { y = 1 } end },
        { name = "A2", direction = "up", guard = function(t, x, z, p) return x.x - p.p end,
          reset = function(t, x) return { u = x.u + 1 } end },
        { name = "B", direction = "up", guard = function(t, x) return x.y - 0.5 end,
          reset = function() return { x = 0, y = 0 } end },
        { name = "stop", direction = "up", guard = function(t, x, z, p) return t - p.T end, terminal = true },
      } }
    local dA2, dB = { 0.49, 1.02 }, { 0.51, 0.98, 1.52, 1.9 }
    local a, p, T, N, gc = 2, 1, 1.7, 6, { 0, 0, 0 }
    local function add(tau, measured, dtau)
      for k = 1, 3 do gc[k] = gc[k] + 2 * (tau - measured) / N * dtau[k] end
    end
    for k, v in ipairs(dA2) do add(k * p / a, v, { -k * p / a ^ 2, k / a, 0 }) end
    for k, v in ipairs(dB) do add(k <= 3 and k * p / a or T, v, k <= 3 and { -k * p / a ^ 2, k / a, 0 } or { 0, 0, 1 }) end
    for _, method in ipairs({ "erk", "bdf" }) do
      local L = salta.lsq{ model = m, event_data = { A2 = dA2, B = dB }, free = { "a", "p", "T" }, tf = 2, rtol = 1e-9,
        atol = 1e-11, method = method }
      local ev = m:simulate{ tf = 2, method = method, rtol = 1e-9, atol = 1e-11 }:events()
      assert.are.equal(10, #ev)
      assert.are.equal(1, ev[3].cascade)
      for _, route in ipairs({ "sens", "adjoint", "adjoint_cont" }) do
        local g = L:grad({ a, p, T }, { method = route })
        for k = 1, 3 do
          assert.is_true(math.abs(g[k] - gc[k]) <= 1e-9, ("%s, %s: component %d = %.12g, closed form %.12g"):format(
            method, route, k, g[k], gc[k]))
        end
      end
    end
  end)

  it("are refused when they name no event, decrease or fall outside [t0, tf]", function()
    local m = H.ball()
    has(err_of(salta.lsq, { model = m, event_data = { bounce = { 1 } } }), "'bounce' is not an event", "impact")
    has(err_of(salta.lsq, { model = m, event_data = { impact = { 1, 0.5 } } }), "event 'impact'", "increase",
      "0.5")
    has(err_of(salta.lsq, { model = m, event_data = { impact = { times = { 1 }, sigma = -1 } } }), "sigma",
      "positive")
    has(err_of(salta.lsq, { model = m, event_data = { 1, 2 } }), "event_data", "by event name")
    local L = salta.lsq{ model = m, event_data = { impact = { 0.4, 3 } }, tf = 2 }
    has(err_of(function() return L:value({}) end), "measured time 3", "'impact'", "outside", "extend tf")
    has(err_of(salta.lsq, { model = m }), "data")
  end)

  it("alone recover a bouncing ball's g and e from noisy impact times within 3 standard errors", function()
    local sigma = 0.005
    local data = noisy(impacts(9.81, 0.8, 8), sigma, 11)   -- a high-speed camera at 200 frames/s
    local L = salta.lsq{ model = H.ball(), event_data = { impact = { times = data, sigma = sigma } },
      free = { "g", "e" }, rtol = 1e-9, atol = 1e-11 }
    local fit = salta.fit{ loss = L, start = { 9.0, 0.7 }, print_every = 0 }
    local se = fit:std_errors()
    local x = fit.x
    assert.is_true(math.abs(x[1] - 9.81) <= 3 * se.g, ("g %g +- %g"):format(x[1], se.g))
    assert.is_true(math.abs(x[2] - 0.8) <= 3 * se.e, ("e %g +- %g"):format(x[2], se.e))
    assert.is_true(se.g < 0.1 and se.e < 0.01)
    -- its plot: the model over the fitted span, the firing times' residuals below
    local path = os.tmpname() .. ".png"
    assert.are.equal(path, fit:plot(path))
    assert.is_true(#H.read_file(path) > 1000)
    os.remove(path)
  end)

  it("alone recover a relay's thresholds from noisy switching times within 3 standard errors", function()
    local sigma = 0.01
    local off, on = switches(0.5, 8, 19, 21, 12)
    local L = salta.lsq{ model = H.relay(), event_data = { off = { times = noisy(off, sigma, 21), sigma = sigma },
      on = { times = noisy(on, sigma, 22), sigma = sigma } }, free = { "T_lo", "T_hi" }, rtol = 1e-9, atol = 1e-11 }
    local fit = salta.fit{ loss = L, start = { 18.5, 21.5 }, print_every = 0 }
    local se = fit:std_errors()
    assert.is_true(math.abs(fit.x[1] - 19) <= 3 * se.T_lo, ("T_lo %g +- %g"):format(fit.x[1], se.T_lo))
    assert.is_true(math.abs(fit.x[2] - 21) <= 3 * se.T_hi, ("T_hi %g +- %g"):format(fit.x[2], se.T_hi))
    assert.is_true(se.T_lo < 0.05 and se.T_hi < 0.05)
  end)
end)
