-- Outputs that jump at events: which do (salta.jumps, structurally and at
-- a run), the warning a fit gives when its data hold one, and the two
-- treatments of salta.lsq (robust losses, event windows) against their
-- formulas computed here from the predictions, with every gradient route
-- checked against differences.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of
local jumps = require("salta.jumps")

local motor = dofile("models/dcmotor.lua")()
local ref = dofile("examples/dcmotor_reference.lua")
local FREE = { "K", "R", "J", "b", "dlt", "w0" }
local AT = { K = 0.051, R = 0.98, J = 0.0202, b = 2.1e-4, dlt = 5.1, w0 = 149 }

local function times_to(tf, n)
  local out = {}
  for k = 1, n do out[k] = k * tf / n end
  return out
end

local TIMES = times_to(4, 400)
local DATA = ref.measure(5, TIMES)

local function motor_loss(extra, rtol)
  local spec = { model = motor, times = TIMES, data = DATA, free = FREE, transform = "log", sigma = ref.SIGMA,
    rtol = rtol or 1e-9, atol = rtol or 1e-9 }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return salta.lsq(spec)
end

-- J as "event: outputs" lines, by name.
local function jump_text(m)
  local J, lines = jumps.structural(m), {}
  for e, row in ipairs(J) do
    local outs = {}
    for y, v in ipairs(row) do if v then outs[#outs + 1] = m.outputs[y] end end
    lines[#lines + 1] = m.events[e] .. ": " .. table.concat(outs, ",")
  end
  return table.concat(lines, "\n")
end

describe("salta.jumps", function()
  it("finds the outputs a reset moves, directly or through the algebraic equations", function()
    -- the current follows the relay through g; the speed is a state no reset writes; a linear
    -- table's breakpoints and the setpoint's (read in the guards alone) move no output
    assert.are.equal("off: i\non: i\ninput T_load(t) next piece: \ninput w_set(t) next piece: ", jump_text(motor))
    local rect = dofile("models/rectifier.lua")()
    assert.are.equal("on: i\noff: i", jump_text(rect))
    assert.are.equal("off: \non: \ninput Tout(t) next piece: ", jump_text(dofile("models/thermostat.lua")()))
  end)

  it("counts a step table's breakpoints where an output reads it, and a reset state", function()
    local m = salta.dae{ name = "stepread", states = { { "x", 0 }, { "c", 0 } },
      inputs = { u = salta.table{ t = { 0, 1, 2, 3 }, v = { 0, 1, 3, 2 }, interp = "step" } },
      params = { a = 1 },
      f = function(t, x, z, p) return { x = -p.a * x.x, c = 1 } end,
      h = function(t, x, z, p, u) return { y = x.x + u.u(t), c = x.c } end,
      events = { { name = "kick", direction = "up", guard = function(t, x) return x.c - 0.5 end,
        reset = function(t, x) return { x = x.x + 1, c = 0 } end } } }
    has(jump_text(m), "kick: c,y", "input u(t) next piece: y")
  end)

  it("measures the jumps of a run, and leaves out the events that move nothing", function()
    local list = motor_loss():jumps(AT)
    assert.are.equal(2, #list)
    for _, j in ipairs(list) do
      assert.are.equal("i", j.output)
      assert.is_true(j.count >= 2 and j.size > 20 and j.size < 30, j.event)
    end
    -- the "on" event at the setpoint's step fires with the relay on: no jump there
    local tr = motor:simulate{ tf = 4, params = motor:vector("params", AT, motor.params, motor.p0) }
    local on = 0
    for _, e in ipairs(tr:events()) do if e.name == "on" then on = on + 1 end end
    local counted
    for _, j in ipairs(list) do if j.event == "on" then counted = j.count end end
    assert.are.equal(on - 1, counted)
  end)
end)

-- scipy's rho (z = (u / C)^2) and the quintic window phi, as the formulas say.
local RHO = {
  soft_l1 = function(z) return 2 * (math.sqrt(1 + z) - 1) end,
  huber = function(z) return z <= 1 and z or 2 * math.sqrt(z) - 1 end,
  cauchy = function(z) return math.log(1 + z) end,
}
local function phi(a, b, d)
  if d <= a then return 0 end
  if d >= a + b then return 1 end
  local s = (d - a) / b
  return s ^ 3 * (10 - 15 * s + 6 * s * s)
end

-- The loss from the predictions at p: sum v^2 C^2 rho((u / C)^2) / N.
local function expected(loss, p, kind, C, width, ramp)
  local pred = loss:predict(p)
  local tr = motor:simulate{ tf = TIMES[#TIMES], params = motor:vector("params", p, motor.params, motor.p0),
    rtol = 1e-9, atol = 1e-9 }
  local L, N = 0, 0
  for k, t in ipairs(TIMES) do
    for _, n in ipairs({ "w", "i" }) do
      local u = (pred[n][k] - DATA[n][k]) / ref.SIGMA[n]
      local v = 1
      if width and n == "i" then   -- the current jumps at every relay event
        for _, e in ipairs(tr:events()) do v = v * phi(width, ramp, math.abs(t - e.t)) end
      end
      local r = kind and C * C * RHO[kind](u * u / (C * C)) or u * u
      L, N = L + v * v * r, N + 1
    end
  end
  return L / N
end

describe("salta.lsq robust losses and event windows", function()
  for _, kind in ipairs({ "soft_l1", "huber", "cauchy" }) do
    it(("%s: the loss is scipy's, its residuals square-sum to it, 2 J^T r is its gradient"):format(kind), function()
      local loss = motor_loss{ robust = kind, robust_scale = 2.5 }
      local v = loss:value(AT)
      assert.is_true(math.abs(v - expected(loss, AT, kind, 2.5)) <= 1e-6 * v, kind)
      assert.is_true(v < motor_loss():value(AT))   -- the jumps' outliers count less
      local r, J, g = loss:residuals(AT), loss:jacobian(AT), loss:grad(AT)
      local ss = 0
      for _, x in ipairs(r) do ss = ss + x * x end
      assert.is_true(math.abs(ss - v) <= 1e-6 * v)
      for c = 1, #FREE do
        local s = 0
        for q = 1, #r do s = s + 2 * r[q] * J[q][c] end
        assert.is_true(math.abs(s - g[c]) <= 1e-5 * math.abs(g[c]) + 1e-6, FREE[c])
      end
    end)
  end

  it("event windows drop the current near each relay event, following the events", function()
    local loss = motor_loss{ event_window = true }
    -- the default: 2 target spacings dropped, then a ramp as wide
    assert.is_true(math.abs(loss.windows.width - 0.02) < 1e-12 and loss.windows.ramp == loss.windows.width)
    local v = loss:value(AT)
    assert.is_true(math.abs(v - expected(loss, AT, nil, nil, loss.windows.width, loss.windows.ramp)) <= 1e-6 * v)
    local wide = motor_loss{ event_window = { width = 0.05, ramp = 0.01, outputs = { "i" } } }
    assert.is_true(math.abs(wide:value(AT) - expected(wide, AT, nil, nil, 0.05, 0.01)) <= 1e-6 * v)
    -- windows on the speed, which never jumps, change nothing
    assert.are.equal(motor_loss():value(AT), motor_loss{ event_window = { outputs = { "w" } } }:value(AT))
  end)

  for _, extra in ipairs({ { robust = "soft_l1", robust_scale = 3 }, { robust = "huber", robust_scale = 2 },
    { robust = "cauchy", robust_scale = 2 }, { event_window = true },
    { event_window = true, robust = "soft_l1", robust_scale = 3 } }) do
    local label = ("%s%s"):format(extra.robust or "", extra.event_window and " with event windows" or "")
    it(label .. ": every route agrees with the differences", function()
      -- tolerance 5e-6: the discrete adjoint's trapezoid is 1.2-1.6e-6
      -- off here at rtol 1e-9 on BDF's steps and 2.9-3.8e-6 on ERK's (its
      -- mesh's contract, 10 (atol + rtol |x|) per node; the others are
      -- within 9e-7)
      local rep = motor_loss(extra):check_gradient{ at = AT, tol = 5e-6 }
      assert.are.equal("ok", rep.verdict, tostring(rep))
      assert.are.equal(8, #rep.routes)
      for _, r in ipairs(rep.routes) do
        if r.name == "adjoint_cont" and extra.event_window then   -- windows are sens's
          assert.truthy(r.error:find("does not follow event windows", 1, true))
        else
          assert.is_true(r.ok, tostring(rep))
        end
      end
    end)
  end

  it("predicts as the plain loss does", function()
    local a, b = motor_loss():predict(AT), motor_loss{ robust = "cauchy", event_window = true }:predict(AT)
    for k = 1, #TIMES, 37 do assert.are.equal(a.i[k], b.i[k]) end
  end)

  it("refuses what it cannot do, naming it", function()
    has(err_of(motor_loss, { robust = "l1" }), "robust must be \"linear\", \"soft_l1\", \"huber\" or \"cauchy\"",
      "got l1")
    has(err_of(motor_loss, { robust_scale = 2 }), "robust_scale is the scale of a robust loss")
    has(err_of(motor_loss, { robust = "huber", robust_scale = -1 }), "robust_scale")
    has(err_of(motor_loss, { event_window = { outputs = { "v" } } }), "event_window names output 'v'")
    has(err_of(motor_loss, { event_window = { events = { "stop" } } }), "names event 'stop'", "off, on")
    has(err_of(motor_loss, { event_window = { width = -1 } }), "width")
    has(err_of(motor_loss, { event_window = "yes" }), "option 'event_window' must be a boolean or a number or a table")
  end)
end)

describe("salta.fit on outputs that jump", function()
  it("warns at the start, naming output and events, unless the loss treats them", function()
    local untreated = motor_loss(nil, 1e-7)
    local w = untreated:jump_warning(AT)
    has(w, "output 'i' jumps at event 'off'", "output 'i' jumps at event 'on'", "event_window = true",
      "robust = \"soft_l1\"")
    assert.is_nil(motor_loss({ event_window = true }, 1e-7):jump_warning(AT))
    assert.is_nil(motor_loss({ robust = "soft_l1" }, 1e-7):jump_warning(AT))
    local r = salta.fit{ loss = untreated, start = AT, print_every = 0, max_iter = 1 }
    assert.are.equal(1, #r.warnings)
    has(r.warnings[1], "output 'i' jumps at event 'off'")
    has(r:table(), "warning: output 'i' jumps")
  end)

  it("warns for each experiment of salta.experiments, and for multi-start", function()
    local E = salta.experiments{ losses = { motor_loss(nil, 1e-7), motor_loss({ event_window = true }, 1e-7),
      motor_loss(nil, 1e-7) }, shared = FREE }
    local r = salta.fit{ loss = E, start = AT, print_every = 0, max_iter = 1 }
    assert.are.equal(2, #r.warnings)
    local ms = salta.fit{ loss = motor_loss(nil, 1e-7), starts = { AT }, print_every = 0, max_iter = 1 }
    assert.are.equal(1, #ms.warnings)
  end)
end)
