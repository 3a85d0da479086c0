-- Simulation truth: every event found, every branch followed, or a clear
-- error, on every integrator. Each case has a closed form: a schedule of
-- time events on a slow model (steps far longer than the guard's period),
-- a guard that starts on its firing side and comes back, a cascade at the
-- end of a step, relays (a sliding mode is an error; hysteresis works),
-- and ERK and BDF agreeing on every shipped model's events.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

local METHODS = { "erk", "bdf", "auto" }

local function names_and_times(tr)
  local out = {}
  for k, e in ipairs(tr:events()) do out[k] = { e.name, e.t } end
  return out
end

describe("event location", function()
  -- a room whose temperature barely moves, with a 1 Hz schedule
  local room = salta.dae{ name = "room", states = { { "T", 20 }, { "n", 0 } }, params = { { "a", 0.01 } },
    f = function(t, x, z, p) return { -p.a * (x.T - 10), 0 } end,
    events = { { name = "tick", direction = "up", guard = function(t) return salta.sin(2 * math.pi * t) end,
      reset = function(t, x) return { n = x.n + 1 } end } } }

  it("finds every crossing of a guard much faster than the states (a schedule)", function()
    for _, method in ipairs(METHODS) do
      local tr = room:simulate{ tf = 19.5, method = method }
      local ev = tr:events()
      assert.are.equal(19, #ev, method)
      for k, e in ipairs(ev) do assert(math.abs(e.t - k) < 1e-9, ("%s: event %d at %.17g"):format(method, k, e.t)) end
      assert.are.equal(19, tr.y.n[#tr.t])
    end
  end)

  it("arms a guard along a step: one starting on its firing side fires where it comes back", function()
    -- x = (1 - t)^2; up on x - 0.5 at 1 + sqrt(1/2) (ERK steps the whole run at once: x is a polynomial)
    local par = salta.dae{ name = "parabola", states = { { "x", 1 }, { "k", 0 } },
      f = function(t) return { -2 * (1 - t), 0 } end,
      events = { { name = "up", direction = "up", guard = function(t, x) return x.x - 0.5 end,
        reset = function(t, x) return { k = x.k + 1 } end } } }
    for _, method in ipairs(METHODS) do
      local ev = par:simulate{ tf = 2, method = method, rtol = 1e-10, atol = 1e-12 }:events()
      assert.are.equal(1, #ev, method)
      assert.is_near(1 + math.sqrt(0.5), ev[1].t, 1e-9)
    end
  end)

  it("locates a guard that reads a state only through floor, sign or a condition (derivatives 0)", function()
    -- x = t: floor(x) - 2.5 steps across zero at t = 3, sign(x - 1.5) at
    -- 1.5, and the condition x > 4.25 turns its guard at 4.25; y counts
    local guards = {
      { 3, function(t, x) return salta.floor(x.x) - 2.5 end },
      { 1.5, function(t, x) return salta.sign(x.x - 1.5) + 0.5 * x.y end },
      { 4.25, function(t, x) return salta.ifelse(salta.gt(x.x, 4.25), 1, -1) end },
    }
    for _, g in ipairs(guards) do
      local m = salta.dae{ name = "steps", states = { { "x", 0 }, { "y", 0 } }, f = function() return { 1, 0 } end,
        events = { { name = "step", direction = "up", guard = g[2],
          reset = function(t, x) return { y = x.y + 1 } end } } }
      for _, method in ipairs(METHODS) do
        local ev = m:simulate{ tf = 5, method = method, rtol = 1e-8, atol = 1e-10 }:events()
        assert.are.equal(1, #ev, method)
        assert.is_near(g[1], ev[1].t, 1e-9)
      end
    end
  end)

  it("fires a guard that left its firing side inside the step ending at another event in its cascade", function()
    local m = salta.dae{ name = "cascade", states = { { "x", 0 }, { "y", 1 }, { "nb", 0 } },
      f = function() return { 1, -1, 0 } end,
      events = {
        { name = "A", direction = "up", guard = function(t, x) return x.x - 1 end,
          reset = function() return { y = 1 } end },
        { name = "B", direction = "up", guard = function(t, x) return x.y - 0.5 end,
          reset = function(t, x) return { nb = x.nb + 1 } end },
      } }
    for _, method in ipairs(METHODS) do
      for _, max_step in ipairs({ 0, 0.1 }) do
        local tr = m:simulate{ tf = 1.2, method = method, max_step = max_step }
        assert.are.same({ { "A", 1 }, { "B", 1 } }, (function()
          local out = names_and_times(tr)
          for _, e in ipairs(out) do e[2] = math.floor(e[2] * 1e9 + 0.5) / 1e9 end
          return out
        end)(), method)
        assert.are.equal(1, tr.y.nb[#tr.t])
      end
    end
  end)
end)

describe("relays", function()
  it("switching straight back across their own surface are a sliding mode: an error saying so", function()
    local ifexpr = salta.dae{ name = "relay", states = { { "x", 1 } },
      f = function(t, x) return { salta.ifelse(salta.gt(x.x, 0), -1, 1) } end }
    local hand = salta.dae{ name = "hand_relay", states = { { "x", -1 } }, discrete = { { "on", true } },
      f = function(t, x) return { salta.ifelse(x.on, 1, -1) } end,
      events = {
        { name = "off", direction = "up", guard = function(t, x) return x.x end, reset = function() return { on = false } end },
        { name = "on", direction = "down", guard = function(t, x) return x.x end, reset = function() return { on = true } end },
      } }
    for _, m in ipairs({ ifexpr, hand }) do
      for _, method in ipairs(METHODS) do
        local e = err_of(m.simulate, m, { tf = 2, method = method })
        has(e, "model '" .. m.name .. "'", "sliding mode at t = 1.0000000", "both sides push toward the surface")
      end
    end
  end)

  it("with hysteresis switch back and forth at the closed form's times", function()
    local m = salta.dae{ name = "hysteresis", states = { { "x", -1 } }, discrete = { { "on", true } },
      f = function(t, x) return { salta.ifelse(x.on, 1, -1) } end,
      events = {
        { name = "off", direction = "up", guard = function(t, x) return x.x - 0.1 end,
          reset = function() return { on = false } end },
        { name = "on", direction = "down", guard = function(t, x) return x.x + 0.1 end,
          reset = function() return { on = true } end },
      } }
    for _, method in ipairs(METHODS) do
      local ev = m:simulate{ tf = 3, method = method }:events()
      assert.are.equal(10, #ev, method)   -- 1.1, 1.3, ..., 2.9
      for k, e in ipairs(ev) do
        assert.are.equal(k % 2 == 1 and "off" or "on", e.name)
        assert.is_near(1.1 + 0.2 * (k - 1), e.t, 1e-9)
      end
    end
  end)
end)

describe("ERK and BDF", function()
  -- every shipped model's event list, by both integrators at a tight tolerance
  local cases = {
    { "cauer", function() return H.model("cauer") end, 20 },
    { "spring_latch", function() return H.model("spring_latch") end, 10 },
    { "rectifier", function() return H.model("rectifier") end, 0.1 },
    { "thermostat", function() return H.model("thermostat") end, 72 },
    { "bouncing_balls N = 3", function() return H.model("bouncing_balls", { N = 3 }) end, 1.9 },
    { "rc_network N = 5", function() return H.model("rc_network", { N = 5 }) end, 10 },
    { "cauer_ladder N = 6", function() return H.model("cauer_ladder", { N = 6 }) end, 20 },
    { "balls N7 spec", function() return H.spec_model("dae_specification_bouncing_balls_N7.yaml") end, 1.9 },
  }
  for _, c in ipairs(cases) do
    it("find the same events on " .. c[1], function()
      local m = c[2]()
      local a = m:simulate{ tf = c[3], method = "erk", rtol = 1e-10, atol = 1e-12 }:events()
      local b = m:simulate{ tf = c[3], method = "bdf", rtol = 1e-10, atol = 1e-12 }:events()
      assert.are.equal(#a, #b)
      for k = 1, #a do
        assert.are.equal(a[k].name, b[k].name)
        assert(math.abs(a[k].t - b[k].t) <= 1e-6 * math.max(1, math.abs(a[k].t)),
          ("%s: event %d '%s' at %.12g (erk) and %.12g (bdf)"):format(c[1], k, a[k].name, a[k].t, b[k].t))
      end
    end)
  end
end)
