-- Discrete variables and if-expressions (salta.ifelse with salta.lt, ...).
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

-- Every free parameter's gradient: by forward sensitivities against
-- central differences of a tighter loss, and by the adjoint (on a uniform
-- mesh, so that its discrete loss is smooth in p) against central
-- differences of the discrete loss it differentiates.
local function check_gradients(label, make_loss, free, p, rel, fd_h)
  local L = make_loss(1e-10)
  local adjoint = { method = "adjoint", mesh = 200 }
  local checks = {
    { "sens", L:grad(p), make_loss(1e-12):grad(p, { method = "fd", h = fd_h }) },
    { "adjoint", L:grad(p, adjoint), L:grad(p, { method = "fd", h = fd_h, of = adjoint }) },
  }
  for _, c in ipairs(checks) do
    local g, fd = c[2], c[3]
    for k, n in ipairs(free) do
      assert(math.abs(g[k] - fd[k]) <= rel * math.abs(fd[k]) + 1e-12,
        ("%s, %s: dL/d%s = %.12g, differences %.12g"):format(label, c[1], n, g[k], fd[k]))
    end
  end
end

-- A thermostat: T' = -a (T - Tout) + P on, the heater switched off above
-- Thi and on below Tlo (hysteresis in a boolean discrete variable).
local function thermostat()
  return salta.dae{ name = "thermostat", states = { { "T", 15 } }, discrete = { { "on", true } },
    params = { { "a", 0.5 }, { "Tout", 5 }, { "P", 10 }, { "Tlo", 18 }, { "Thi", 22 } },
    f = function(t, x, z, p) return { -p.a * (x.T - p.Tout) + p.P * x.on } end,
    events = {
      { name = "off", direction = "up", guard = function(t, x, z, p) return x.T - p.Thi end,
        reset = function() return { on = false } end },
      { name = "on", direction = "down", guard = function(t, x, z, p) return x.T - p.Tlo end,
        reset = function() return { on = true } end },
    } }
end

-- Its switching times in closed form: T relaxes to Tout + P on / a.
local function thermostat_events(p, tf)
  local out, t, T, on = {}, 0, 15, 1
  while true do
    local Teq = p.Tout + p.P * on / p.a
    local target = on == 1 and p.Thi or p.Tlo
    t = t - math.log((target - Teq) / (T - Teq)) / p.a
    if t > tf then return out end
    T, on = target, 1 - on
    out[#out + 1] = { on == 1 and "on" or "off", t }
  end
end

describe("discrete variables", function()
  local m = thermostat()
  local P0 = { a = 0.5, Tout = 5, P = 10, Tlo = 18, Thi = 22 }
  local times = H.uniform(12, 60)

  it("stay constant between events, change in resets, and show in the trajectory and the log", function()
    local tr = m:simulate{ tf = 12, times = times, rtol = 1e-11, atol = 1e-12 }
    local want, ev = thermostat_events(P0, 12), tr:events()
    assert.is_true(#want >= 4)
    assert.are.equal(#want, #ev)
    for i, w in ipairs(want) do
      assert.are.equal(w[1], ev[i].name)
      assert.is_near(w[2], ev[i].t, 1e-8)
      assert.are.equal(w[1] == "on" and 1 or 0, ev[i].x_plus.on)
    end
    for i, t in ipairs(tr.t) do
      local on = true
      for _, w in ipairs(want) do if w[2] <= t then on = w[1] == "on" end end
      assert.are.equal(on, tr.discrete.on[i])
    end
  end)

  local tr = m:simulate{ tf = 12, times = times, rtol = 1e-12, atol = 1e-13 }
  it("carry gradients through their switching, every parameter", function()
    local free = { "a", "Tout", "P", "Tlo", "Thi" }
    check_gradients("thermostat", function(rtol)
      return salta.lsq{ model = m, times = times, data = { T = tr.y.T }, free = free, rtol = rtol, atol = rtol }
    end, free, { 0.45, 5.5, 10.5, 17.5, 22.5 }, 1e-6)
  end)

  it("are refused in f, and need numbers or booleans", function()
    has(err_of(salta.dae, { name = "d", states = { { "x", 0 } }, discrete = { { "on", true } },
      f = function() return { x = 1, on = 0 } end }),
      "model 'd', f: gives a derivative for discrete variable 'on'", "resets of events")
    has(err_of(salta.dae, { name = "d", states = { { "x", 0 } }, discrete = { { "mode", "fast" } },
      f = function() return { 1 } end }), "discrete variable 'mode' needs a number, got string")
    has(err_of(salta.dae, { name = "d", states = { { "x", 0 } }, discrete = { { "x", 1 } },
      f = function() return { 1 } end }), "name 'x' is declared twice")
  end)
end)

describe("if-expressions", function()
  -- x' = a while sin(w t) > 0, else -b: x is piecewise linear with kinks
  -- at t = k pi / w; w lives only in the condition
  local function saw(noevent)
    return salta.dae{ name = "saw", states = { { "x", 0 } }, params = { { "a", 2 }, { "b", 1 }, { "w", 3 } },
      f = function(t, x, z, p)
        local c = salta.gt(salta.sin(p.w * t), 0)
        return { salta.ifelse(noevent and salta.noevent(c) or c, p.a, -p.b) }
      end }
  end
  local function saw_at(p, t)
    local half = math.pi / p.w
    local k = math.floor(t / half)
    local x = math.ceil(k / 2) * p.a * half - math.floor(k / 2) * p.b * half
    local r = t - k * half
    return x + (k % 2 == 0 and p.a or -p.b) * r
  end
  local m = saw()
  local times = H.uniform(5, 50)

  it("stop the integrator where the condition changes and switch branch there, against the closed form", function()
    local tr = m:simulate{ tf = 5, times = times, rtol = 1e-10, atol = 1e-12 }
    local ev = tr:events()
    assert.are.equal(math.floor(5 * 3 / math.pi), #ev)
    for k, e in ipairs(ev) do
      assert.is_near(k * math.pi / 3, e.t, 1e-9)
      assert.are.equal(k % 2 == 1 and "sin(t * w) <= 0" or "sin(t * w) > 0", e.name)
    end
    for i, t in ipairs(tr.t) do assert.is_near(saw_at({ a = 2, b = 1, w = 3 }, t), tr.y.x[i], 1e-8) end
  end)

  it("under salta.noevent create no event", function()
    local tr = saw(true):simulate{ tf = 5, times = times, rtol = 1e-10, atol = 1e-12 }
    assert.are.equal(0, #tr:events())
    assert.is_near(saw_at({ a = 2, b = 1, w = 3 }, 5), tr.y.x[#tr.t], 1e-4)
  end)

  local tr = m:simulate{ tf = 5, times = times, rtol = 1e-12, atol = 1e-13 }
  it("give gradients through the switching, including a parameter that lives only in the condition", function()
    local free = { "a", "b", "w" }
    check_gradients("saw", function(rtol)
      return salta.lsq{ model = m, times = times, data = { x = tr.y.x }, free = free, rtol = rtol, atol = rtol }
    end, free, { 2.1, 0.9, 3.1 }, 1e-6)
  end)

  it("in an algebraic equation: a diode's current, and a start where the compared values are equal", function()
    -- half-wave rectifier: C v' = i - v / R, i = (vs - v) / Ron while vs > v, else 0
    local rect = salta.dae{ name = "rect", states = { { "v", 0 } }, algebraics = { { "i", 0 } },
      params = { { "V", 10 }, { "w", 100 * math.pi }, { "Ron", 1 }, { "R", 100 }, { "C", 1e-4 } },
      f = function(t, x, z, p) return { (z.i - x.v / p.R) / p.C } end,
      g = function(t, x, z, p)
        local vs = p.V * salta.sin(p.w * t)
        return { z.i - salta.ifelse(salta.gt(vs, x.v), (vs - x.v) / p.Ron, 0) }
      end }
    local rt = H.uniform(0.05, 100)
    local sim = rect:simulate{ tf = 0.05, times = rt, rtol = 1e-10, atol = 1e-12 }
    for i in ipairs(sim.t) do assert.is_true(sim.y.v[i] >= -1e-9) end   -- the diode blocks
    assert.is_true(#sim:events() >= 4)
    local data = rect:simulate{ tf = 0.05, times = rt, rtol = 1e-12, atol = 1e-13 }.y.v
    local free = { "V", "Ron", "R", "C" }
    check_gradients("rectifier", function(rtol)
      -- in log space, so that the difference steps are relative (C is 1e-4)
      return salta.lsq{ model = rect, times = rt, data = { v = data }, free = free, rtol = rtol, atol = rtol * 1e-2,
        transform = "log" }
    end, free, { 9.5, 1.2, 110, 0.9e-4 }, 1e-5)
  end)

  it("are refused with a condition that is not one", function()
    has(err_of(salta.dae, { name = "c", states = { { "x", 0 } },
      f = function(t, x) return { salta.ifelse("yes", 1, 0) } end }),
      "salta.ifelse: the condition must be a comparison", "got string")
    has(err_of(salta.lt, "a", 1), "salta.lt: compares numbers or expressions")
  end)
end)
