-- Hybrid simulation on IDAS against independent references: the event
-- lists of spec/data/reference_events.lua (computed apart from salta), a
-- closed-form ball simulator, and the algebraic equations after every
-- reset.
local H = require("helpers")
local salta = require("salta")
local REF = dofile("spec/data/reference_events.lua")
local exact = dofile("spec/support/balls_exact.lua")

local TIGHT = { rtol = 1e-10, atol = 1e-10 }

local function sim(m, opts)
  local o = { tf = opts.tf, times = opts.times, rtol = TIGHT.rtol, atol = TIGHT.atol }
  for k, v in pairs(opts) do o[k] = v end
  return m:simulate(o)
end

local function check_event_list(events, ref, label)
  assert(#events == #ref, ("%s: %d events, expected %d"):format(label, #events, #ref))
  for k, e in ipairs(events) do
    assert(math.abs(e.t - ref[k][1]) <= 1e-6,
      ("%s: event %d at %.9f, expected %.6f"):format(label, k, e.t, ref[k][1]))
    assert(e.index - 1 == ref[k][2],
      ("%s: event %d is clause %d (%s), expected %d"):format(label, k, e.index - 1, e.name, ref[k][2]))
  end
end

local function param_table(m)
  local p = {}
  for _, n in ipairs(m.params) do p[n] = m.p0[n] end
  return p
end

describe("bouncing balls", function()
  for _, N in ipairs({ 3, 7, 15 }) do
    local file = ("dae_specification_bouncing_balls_N%d.yaml"):format(N)
    it(("N = %d from the spec: the analytic event list"):format(N), function()
      local tr = sim(H.spec_model(file), { tf = 1.9 })
      check_event_list(tr:events(), REF[N], "spec N" .. N)
    end)
    for _, method in ipairs({ "bdf", "erk" }) do
    it(("N = %d from models/bouncing_balls.lua, %s: events and closed-form positions"):format(N, method), function()
      local m = H.model("bouncing_balls", { N = N })
      local times = {}
      for k = 1, 50 do times[k] = 1.9 * (k - 0.5) / 50 end
      local tr = sim(m, { tf = 1.9, times = times, method = method })
      check_event_list(tr:events(), REF[N], "DSL N" .. N)
      local x0 = {}
      for i, n in ipairs(m.states) do x0[i] = m.x0[n] end
      local ev, state = exact.simulate(N, x0, param_table(m), 1.9)
      assert.are.equal(#REF[N], #ev)   -- the closed form agrees with the reference
      local worst = 0
      for k, t in ipairs(times) do
        local s = state(t)
        for i = 1, N do
          worst = math.max(worst, math.abs(tr.y["x" .. i][k] - s[4 * i - 3]),
            math.abs(tr.y["y" .. i][k] - s[4 * i - 2]))
        end
      end
      assert(worst <= 1e-7, ("N%d: positions differ from the closed form by %.3g"):format(N, worst))
    end)
    end
  end

  it("sees the post-event state at a target time equal to an event time", function()
    local m = H.model("bouncing_balls", { N = 3 })
    local ev = sim(m, { tf = 1.9 }):events()
    local tau = ev[1].t
    local tr = sim(m, { tf = 1.9, times = { 0.5, tau, 1.5 } })
    assert.are.equal(tau, tr:events()[1].t)
    assert.are.equal(tr:events()[1].x_plus.vy1, tr.y.vy1[2])
    assert.is_true(tr.y.vy1[2] > 0)
  end)
end)

describe("Cauer ladder", function()
  it("has the 10 events of the reference list, x- as listed, and g = 0 after each", function()
    local m = H.model("cauer")
    local tr = sim(m, { tf = 20, atol = 1e-12 })
    local ev = tr:events()
    assert.are.equal(10, #ev)
    local ref = REF.cauer
    for k, e in ipairs(ev) do
      assert(math.abs(e.t - ref[k][1]) <= 1e-6, ("event %d at %.9f, expected %.9f"):format(k, e.t, ref[k][1]))
      for i, n in ipairs(m.states) do
        assert(math.abs(e.x_minus[n] - ref[k][2][i]) <= 1e-5,
          ("event %d: %s- = %.7f, expected %.6f"):format(k, n, e.x_minus[n], ref[k][2][i]))
      end
      assert.are.equal(0, e.x_plus.C3_v)
      local g = m:eval("g", e.t, e.x_plus, e.z_plus)
      for j = 1, #g do
        assert(math.abs(g[j]) <= 1e-10, ("event %d: g[%d] = %.3g after the reset"):format(k, j, g[j]))
      end
    end
  end)
  it("has the same events with the explicit Runge-Kutta integrator", function()
    local m = H.model("cauer")
    local tr = sim(m, { tf = 20, atol = 1e-12, method = "erk" })
    local ev = tr:events()
    assert.are.equal(10, #ev)
    for k, e in ipairs(ev) do
      assert(math.abs(e.t - REF.cauer[k][1]) <= 1e-6, ("event %d at %.9f"):format(k, e.t))
      for j, v in ipairs(m:eval("g", e.t, e.x_plus, e.z_plus)) do
        assert(math.abs(v) <= 1e-10, ("event %d: g[%d] = %.3g"):format(k, j, v))
      end
    end
  end)
  it("gives the same events from the exported spec", function()
    local ev = sim(H.spec_model("dae_specification_cauer_events.json"), { tf = 20, atol = 1e-12 }):events()
    assert.are.equal(10, #ev)
    for k, e in ipairs(ev) do assert(math.abs(e.t - REF.cauer[k][1]) <= 1e-6) end
  end)
  it("solves an ill-conditioned g for z to round-off instead of failing", function()
    -- capacitances 1e5 apart (where a noisy fit once wandered): Newton's steps
    -- on g stall at the solve's round-off, far above 1e-13 |z|
    local m = H.model("cauer", { backend = "cc" })
    local p = { C3_C = -35983.81039, C4_C = 70065.12414, C5_C = 73985.58953, C2_C = 0.2719460973 }
    local times = {}
    for i = 0, 100 do times[i + 1] = 0.2 * i end
    local tr = m:simulate{ tf = 20, times = times, params = p, method = "erk", rtol = 1e-10, atol = 1e-12 }
    assert.is_true(#tr:events() > 10)
    local P = m:vector("params", p, m.params, m.p0)
    for i, t in ipairs(times) do
      local x, z = {}, {}
      for _, n in ipairs(m.states) do x[#x + 1] = tr.y[n][i] end
      for _, n in ipairs(m.algebraics) do z[#z + 1] = tr.y[n][i] end
      -- the terms of g are C z, up to 1e5 |z|: g is zero to their round-off
      for j, v in ipairs(m:eval("g", t, x, z, P)) do assert(math.abs(v) <= 1e-9, ("g[%d] = %g at t = %g"):format(j, v, t)) end
    end
  end)
end)

describe("linear solvers", function()
  it("auto (the default) takes KLU from 16 unknowns on, and says which it took", function()
    local small, big = H.model("bouncing_balls", { N = 3 }), H.model("bouncing_balls", { N = 7 })   -- 12, 28
    assert.are.equal("dense", small:simulate{ tf = 0.5, method = "bdf" }:stats().linear_solver)
    assert.are.equal("klu", big:simulate{ tf = 0.5, method = "bdf" }:stats().linear_solver)
    assert.are.equal("dense", big:simulate{ tf = 0.5, method = "bdf", linear_solver = "dense" }:stats().linear_solver)
    assert.are.equal("klu", small:simulate{ tf = 0.5, method = "bdf", linear_solver = "klu" }:stats().linear_solver)
    assert.are.equal("none", big:simulate{ tf = 0.5, method = "erk" }:stats().linear_solver)
  end)
  it("KLU (sparse) and LAPACK (dense) give the same events and states", function()
    for _, case in ipairs({ { "cauer", {}, 20 }, { "bouncing_balls", { N = 15 }, 1.9 }, { "spring_latch", {}, 10 } }) do
      local m = H.model(case[1], case[2])
      local a = sim(m, { tf = case[3], linear_solver = "dense" })
      local b = sim(m, { tf = case[3], linear_solver = "klu" })
      assert.are.equal(#a:events(), #b:events(), case[1])
      for k, e in ipairs(a:events()) do
        assert(math.abs(e.t - b:events()[k].t) <= 1e-8, case[1] .. ": event " .. k)
      end
      for _, n in ipairs(m.outputs) do
        for k = 1, #a.t do
          assert(math.abs(a.y[n][k] - b.y[n][k]) <= 1e-6 * (1 + math.abs(a.y[n][k])),
            ("%s: %s at t = %g: %.10g vs %.10g"):format(case[1], n, a.t[k], a.y[n][k], b.y[n][k]))
        end
      end
    end
  end)
end)

describe("event semantics", function()
  local function two_balls(extra)
    local spec = {
      name = "two_balls", states = { { "y1", 1 }, { "v1", 0 }, { "y2", 1 }, { "v2", 0 } },
      params = { { "g", 9.81 }, { "e", 0.5 } },
      f = function(t, x, z, p) return { x.v1, -p.g, x.v2, -p.g } end,
      events = {
        { name = "floor1", direction = "down", guard = function(t, x) return x.y1 end,
          reset = function(t, x, z, p) return { v1 = -p.e * x.v1, y1 = 0 } end },
        { name = "floor2", direction = "down", guard = function(t, x) return x.y2 end,
          reset = function(t, x, z, p) return { v2 = -p.e * x.v2, y2 = 0 } end },
      },
    }
    for k, v in pairs(extra or {}) do spec[k] = v end
    return salta.dae(spec)
  end

  it("applies both resets of guards crossing at the same instant and records them together", function()
    local tr = sim(two_balls(), { tf = 0.6 })
    local ev = tr:events()
    assert.are.equal(2, #ev)
    local tau = math.sqrt(2 / 9.81)
    for k, e in ipairs(ev) do
      assert.is_near(tau, e.t, 1e-9)
      assert.is_true(e.simultaneous)
      assert.are.equal(2, e.group_size)
      assert.are.equal(k, e.index)
    end
    assert.is_near(0.5 * 9.81 * tau, ev[1].x_plus.v1, 1e-7)
    assert.is_near(0.5 * 9.81 * tau, ev[2].x_plus.v2, 1e-7)
  end)

  it("does not re-fire a guard that a reset leaves at zero", function()
    local ev = sim(two_balls(), { tf = 1.0 }):events()
    -- bounce height e^2 h: the second bounce is at tau (1 + 2 e)
    local tau = math.sqrt(2 / 9.81)
    assert.are.equal(4, #ev)
    assert.is_near(tau * 2, ev[3].t, 1e-8)
  end)

  it("fires a one-shot event once: a guard the reset does not turn around stays disarmed", function()
    local m = salta.dae{ name = "switch", states = { { "x", 0 }, { "k", 1 } },
      f = function(t, x) return { x.k, 0 } end,
      events = { { name = "at_t1", direction = "up", guard = function(t) return t - 1 end,
        reset = function(t, x) return { k = -1 } end } } }
    for _, method in ipairs({ "bdf", "erk" }) do
      local tr = sim(m, { tf = 3, times = { 3 }, method = method })
      assert.are.equal(1, #tr:events())
      assert.is_near(1, tr:events()[1].t, 1e-9)
      assert.is_near(-1, tr.y.x[1], 1e-7)      -- up to 1 at t = 1, then down
    end
  end)

  it("ends cleanly with an event just before tf", function()
    local ball = salta.dae{ name = "drop", states = { { "h", 1 }, { "v", 0 } },
      f = function(t, x) return { x.v, -9.81 } end,
      events = { { name = "floor", direction = "down", guard = function(t, x) return x.h end,
        reset = function(t, x) return { v = -0.5 * x.v, h = 0 } end } } }
    local tau = math.sqrt(2 / 9.81)
    for _, method in ipairs({ "bdf", "erk" }) do
      local tr = sim(ball, { tf = tau + 1e-14, times = { tau + 1e-14 }, method = method })
      assert.are.equal(1, #tr:events())
      assert.is_true(tr.y.v[1] > 0)             -- the post-event state
    end
  end)

  it("uses the algebraic variables and parameters in guards and resets", function()
    local m = H.model("spring_latch")
    local tr = sim(m, { tf = 10 })
    local ev = tr:events()
    assert.is_true(#ev >= 3)
    for _, e in ipairs(ev) do
      local F_max = m.p0.F_max
      local guard = e.name == "latch_high" and e.z_minus.F - F_max or e.z_minus.F + F_max
      assert.is_near(0, guard, 1e-9)
      assert.is_near(-m.p0.e * e.x_minus.v - m.p0.a * e.z_minus.F, e.x_plus.v, 1e-12)
      assert.is_near(0, m:eval("g", e.t, e.x_plus, e.z_plus)[1], 1e-12)
    end
  end)
end)

describe("bad input gives a clear error", function()
  local err_of, has = H.err_of, H.has

  it("an inconsistent initial state names the equation", function()
    local m = salta.dae{ name = "nosol", states = { { "x", 1 } }, algebraics = { { "z", 0 } },
      f = function(t, x, z) return { -z.z } end,
      g = function(t, x, z) return { z.z * z.z + x.x } end }
    has(err_of(function() m:simulate{ tf = 1 } end), "model 'nosol'", "inconsistent initial state", "g[1]", "'z'")
  end)

  it("a Newton failure after a reset names the event and time", function()
    local m = salta.dae{ name = "jump", states = { { "x", 1 } }, algebraics = { { "z", 1 } },
      f = function(t, x, z) return { -1 } end,
      g = function(t, x, z) return { z.z * z.z - x.x } end,
      events = { { name = "flip", direction = "down", guard = function(t, x) return x.x - 0.5 end,
        reset = function(t, x) return { x = -1 } end } } }
    has(err_of(function() m:simulate{ tf = 1 } end), "model 'jump'", "after the reset of event 'flip'", "t = 0.5")
  end)

  it("a Zeno cascade stops with the event, time and count", function()
    local m = salta.dae{ name = "zeno", states = { { "h", 1 }, { "v", 0 } }, params = { { "e", 0.5 } },
      f = function(t, x) return { x.v, -9.81 } end,
      events = { { name = "bounce", direction = "down", guard = function(t, x) return x.h end,
        reset = function(t, x, z, p) return { v = -p.e * x.v, h = 0 } end } } }
    local msg = err_of(function() m:simulate{ tf = 5, zeno_count = 5, zeno_window = 0.05 } end)
    has(msg, "model 'zeno'", "Zeno cascade: 5 event instants within", "event 'bounce'", "event count")
    -- with the defaults, the accumulation point itself is caught: never a
    -- ball falling silently through the floor, with either integrator
    for _, method in ipairs({ "bdf", "erk" }) do
      msg = err_of(function() m:simulate{ tf = 5, method = method } end)
      has(msg, "model 'zeno'", "Zeno limit", "event 'bounce'", "t = 1.354", "event count")
    end
    -- zeno_count = 0 switches the cascade test off (the limit is still caught)
    msg = err_of(function() m:simulate{ tf = 5, zeno_count = 0 } end)
    has(msg, "Zeno limit")
  end)

  it("more than max_events stops with the count", function()
    local m = H.model("bouncing_balls", { N = 3 })
    has(err_of(function() m:simulate{ tf = 1.9, max_events = 2 } end),
      "more than max_events = 2", "Collision B1-B3", "number 3")
  end)

  it("a non-finite parameter is named", function()
    local m = H.model("bouncing_balls", { N = 3 })
    has(err_of(function() m:simulate{ tf = 1.9, params = { e_b = 0 / 0 } } end), "parameter 'e_b' is", "nan")
  end)

  it("a guard that is NaN is named with the time", function()
    local m = salta.dae{ name = "nanguard", states = { { "x", 1 } },
      f = function(t, x) return { -1 } end,
      events = { { name = "root", direction = "down", guard = function(t, x) return salta.sqrt(x.x - 0.5) end } } }
    has(err_of(function() m:simulate{ tf = 1 } end), "model 'nanguard'", "guard of event 'root'", "nan", "t = ")
  end)

  it("a guard that is NaN is named with the time, with the explicit integrator too", function()
    local m = salta.dae{ name = "nanguard", states = { { "x", 1 } },
      f = function(t, x) return { -1 } end,
      events = { { name = "root", direction = "down", guard = function(t, x) return salta.sqrt(x.x - 0.5) end } } }
    has(err_of(function() m:simulate{ tf = 1, method = "erk" } end), "model 'nanguard'", "guard of event 'root'", "nan")
  end)

  it("an unknown option is refused", function()
    local m = H.model("cauer")
    has(err_of(function() m:simulate{ tf = 1, rtoll = 1e-6 } end), "unknown option 'rtoll'")
  end)
end)
