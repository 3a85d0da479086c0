-- Inputs from data: salta.table{ t =, v =, interp = } read as u.name(arg).
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

local T_PTS, V_PTS = { 0, 1, 2, 3, 4, 5, 6 }, { 0, 2, 1, 3, 3, 0, 1 }

-- x' = -a (x - k u(t - delay)): a first-order lag following the input.
local function lag(interp)
  return salta.dae{ name = "lag_" .. interp, states = { { "x", 0 } },
    params = { { "a", 2 }, { "k", 1.5 }, { "delay", 0.3 } },
    inputs = { u = salta.table{ t = T_PTS, v = V_PTS, interp = interp } },
    f = function(t, x, z, p, u) return { -p.a * (x.x - p.k * u.u(t - p.delay)) } end }
end

-- The closed form for a step input: on each constant piece x relaxes to k v.
local function lag_step_at(P, t, t0)
  local x, s = 0, t0
  for i = 1, #T_PTS do
    local lo = T_PTS[i] + P.delay
    local hi = (T_PTS[i + 1] or math.huge) + P.delay
    if hi > s then
      local e = math.min(t, hi)
      if e > s then
        x = P.k * V_PTS[i] + (x - P.k * V_PTS[i]) * math.exp(-P.a * (e - s))
        s = e
      end
      if s >= t then return x end
    end
    if lo > t then return x end
  end
  return x
end

-- Gradients of every parameter: sens against central differences of a
-- tighter loss (no Richardson step: the loss is only C1 in the delay where
-- the input has a kink), the adjoint on a uniform mesh against differences
-- of its own discrete loss.
local function check_gradients(label, make_loss, free, p, rel)
  local L = make_loss(1e-10)
  local adjoint = { method = "adjoint", mesh = 100 }
  local fd = { method = "fd", h = 1e-5, richardson = false }
  local checks = {
    { "sens", L:grad(p), make_loss(1e-12):grad(p, fd) },
    { "adjoint", L:grad(p, adjoint), L:grad(p, { method = "fd", h = 1e-5, richardson = false, of = adjoint }) },
  }
  for _, c in ipairs(checks) do
    for k, n in ipairs(free) do
      assert(math.abs(c[2][k] - c[3][k]) <= rel * math.abs(c[3][k]) + 1e-10,
        ("%s, %s: dL/d%s = %.12g, differences %.12g"):format(label, c[1], n, c[2][k], c[3][k]))
    end
  end
end

describe("an input table", function()
  local times = H.uniform(5.5, 50)
  for i = 1, #times do times[i] = times[i] + 0.5 * (1 - i / #times) end   -- inside [0.5, 5.5]

  it("interpolates linearly, by steps or by a natural cubic spline", function()
    local lin = salta.table{ t = T_PTS, v = V_PTS }
    assert.are.equal(1.5, lin:at(1.5 + 0) + 0 == 1.5 and 1.5 or lin:at(1.5))
    assert.is_near(1.5, lin:at(1.5), 1e-15)
    assert.are.equal(2, salta.table{ t = T_PTS, v = V_PTS, interp = "step" }:at(1.5))
    local cub = salta.table{ t = T_PTS, v = V_PTS, interp = "cubic" }
    for i, t in ipairs(T_PTS) do assert.is_near(V_PTS[i], cub:at(t), 1e-12) end
    -- C2 at an interior point: one-sided second derivatives agree
    assert.is_near(cub:at(2 - 1e-9, 2), cub:at(2 + 1e-9, 2), 1e-6)
    assert.is_true(lin:at(7) ~= lin:at(7))   -- outside: NaN
  end)

  it("steps: the integrator stops at each breakpoint, against the closed form", function()
    local m = lag("step")
    local tr = m:simulate{ t0 = 0.5, tf = 5.5, times = times, rtol = 1e-11, atol = 1e-13 }
    assert.are.equal(0, #tr:events())                  -- breakpoints are not listed as events
    assert.is_true(tr:stats().events >= 5)
    for i, t in ipairs(tr.t) do
      assert.is_near(lag_step_at({ a = 2, k = 1.5, delay = 0.3 }, t, 0.5), tr.y.x[i], 1e-8)
    end
  end)

  for _, interp in ipairs({ "linear", "step", "cubic" }) do
    it(("%s: gradients through the input, its scale and its delay, every parameter"):format(interp), function()
      local m = lag(interp)
      local data = m:simulate{ t0 = 0.5, tf = 5.5, times = times, rtol = 1e-12, atol = 1e-14 }.y.x
      local free = { "a", "k", "delay" }
      check_gradients(interp, function(rtol)
        return salta.lsq{ model = m, t0 = 0.5, times = times, data = { x = data }, free = free, rtol = rtol,
          atol = rtol * 1e-2 }
      end, free, { 2.1, 1.4, 0.35 }, 1e-5)
    end)
  end

  it("reads a CSV file", function()
    local path = H.temp_file("hour,Tout\n0,5\n1,7\n2,4\n", ".csv")
    local tab = salta.table{ csv = path, t = "hour", v = "Tout" }
    assert.is_near(6, tab:at(0.5), 1e-15)
    has(err_of(salta.table, { csv = path, t = "hour", v = "Tin" }), "has no column 'Tin'", "hour, Tout")
    os.remove(path)
  end)

  it("lets blending's margin past the last target stop at the end of an input table", function()
    local m = H.model("thermostat")
    local times = H.uniform(72, 100)
    local tr = m:simulate{ tf = 72, times = times }
    local L = salta.lsq{ model = m, times = times, data = { T = tr.y.T }, free = { "a", "P" }, blend = 50 }
    assert.are.equal(72, L.tf)
    local explicit = salta.lsq{ model = m, times = times, data = { T = tr.y.T }, free = { "a", "P" }, blend = 50,
      tf = 72 }
    assert.are.equal(explicit:value({ 0.15, 3.0 }), L:value({ 0.15, 3.0 }))
    local short = salta.lsq{ model = m, times = { 1, 2, 60 }, data = { T = { 1, 2, 3 } }, blend = 50 }
    assert.is_near(60 + 30 / 50, short.tf, 1e-12)
  end)

  it("refuses bad tables and reads outside them, naming the input and the time", function()
    has(err_of(salta.table, { t = { 0, 1, 1 }, v = { 1, 2, 3 } }), "salta.table: t must increase: t[3] = 1")
    has(err_of(salta.table, { t = { 0, 1 }, v = { 1, 0 / 0 } }), "v[2] (at t = 1) is", "not a finite number")
    has(err_of(salta.table, { t = { 0, 1 }, v = { 1, 2 }, interp = "spline" }), "interp must be")
    local m = lag("linear")
    has(err_of(m.simulate, m, { t0 = 0, tf = 5 }), "model 'lag_linear': input 'u' is read at t - delay = -0.3",
      "(at t = 0)", "outside its table [0, 6]")
    has(err_of(m.simulate, m, { t0 = 0.5, tf = 6.5 }), "input 'u' is read at t - delay = 6.2", "(at t = 6.5)")
    local thermo = H.model("thermostat")
    local msg = err_of(thermo.simulate, thermo, { tf = 73 })
    has(msg, "input 'Tout' is read at t = 73, outside its table [0, 72]")
    assert.is_nil(msg:find("(at t", 1, true))   -- the time once when the argument is t
    has(err_of(salta.dae, { name = "q", states = { { "x", 0 } }, inputs = { u = { 1, 2 } },
      f = function() return { 0 } end }), "input 'u' must be a salta.table")
    has(err_of(salta.dae, { name = "q", states = { { "x", 0 } }, inputs = { u = salta.table{ t = T_PTS, v = V_PTS } },
      f = function(t, x, z, p, u) return { u.w(t) } end }), "unknown input 'w'")
  end)
end)

describe("an explicit start state on a model with held inputs", function()
  it("starts the held pieces at t0 as the model's own start does", function()
    local m = lag("step")
    local times = { 2.5, 3.5, 4.5 }
    local a = m:simulate{ t0 = 2.2, tf = 5, times = times, rtol = 1e-10, atol = 1e-12 }
    local b = m:simulate{ t0 = 2.2, tf = 5, times = times, rtol = 1e-10, atol = 1e-12, x0 = { x = 0 } }
    for i = 1, 3 do assert.is_near(a.y.x[i], b.y.x[i], 1e-12) end
    local l = lag("linear")
    local c = l:simulate{ t0 = 2.2, tf = 5, times = times, rtol = 1e-10, atol = 1e-12 }
    local e = l:simulate{ t0 = 2.2, tf = 5, times = times, rtol = 1e-10, atol = 1e-12, x0 = { x = 0 } }
    for i = 1, 3 do assert.is_near(c.y.x[i], e.y.x[i], 1e-12) end
  end)
end)
