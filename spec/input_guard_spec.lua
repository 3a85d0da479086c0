-- A guard that reads a step input jumps at the input's breakpoint: it
-- fires there, in its direction (event iteration after the breakpoint),
-- with either integrator; a guard the jump takes across zero and back
-- within a short piece is found too. Event times against closed forms.
local salta = require("salta")

-- T' = -a (T - Ta) + P heating; the heater switches off where T rises
-- through the setpoint and on where it falls 1 below it.
local function thermostat(set, T0, heating, a, P)
  return salta.dae{ name = "setpoint", states = { { "T", T0 } }, discrete = { { "heating", heating } },
    inputs = { set = set }, params = { { "a", a }, { "P", P }, { "Ta", 10 } },
    f = function(t, x, z, p) return { -p.a * (x.T - p.Ta) + salta.ifelse(x.heating, p.P, 0) } end,
    events = {
      { name = "off", direction = "up", guard = function(t, x, z, p, u) return x.T - u.set(t) end,
        reset = function() return { heating = false } end },
      { name = "on", direction = "down", guard = function(t, x, z, p, u) return x.T - u.set(t) + 1 end,
        reset = function() return { heating = true } end },
    } }
end

-- The time T(t) = Tinf + (T1 - Tinf) exp(-a (t - t1)) takes to reach T2.
local function reach(a, Tinf, T1, T2) return math.log((T1 - Tinf) / (T2 - Tinf)) / a end

local function check_events(tr, expected, label)
  local ev = tr:events()
  assert.are.equal(#expected, #ev, label .. ": number of events")
  for k, e in ipairs(expected) do
    assert.are.equal(e[1], ev[k].name, ("%s: event %d"):format(label, k))
    assert(math.abs(ev[k].t - e[2]) <= e[3], ("%s: event %d '%s' at t = %.17g, closed form %.17g"):format(label,
      k, e[1], ev[k].t, e[2]))
  end
end

describe("a guard reading a step input", function()
  for _, method in ipairs({ "bdf", "erk" }) do
    it(("fires at the breakpoint that takes it across zero, in its direction (%s)"):format(method), function()
      -- heated, falling from 25 toward 22, below the setpoint 30 until it
      -- drops to 18 at t = 8: 'off' at exactly 8 although T falls there
      -- (its guard jumps up); then the hysteresis cycle 17..18
      local set = salta.table{ t = { 0, 8, 30 }, v = { 30, 18, 18 }, interp = "step" }
      local m = thermostat(set, 25, true, 0.5, 6)
      local tr = m:simulate{ tf = 12, rtol = 1e-11, atol = 1e-12, method = method }
      local T8 = 22 + 3 * math.exp(-4)
      local expected, t = { { "off", 8, 1e-12 } }, 8 + reach(0.5, 10, T8, 17)
      expected[2] = { "on", t, 1e-8 }
      while true do
        t = t + reach(0.5, 22, 17, 18)
        if t > 12 then break end
        expected[#expected + 1] = { "off", t, 1e-8 }
        t = t + reach(0.5, 10, 18, 17)
        if t > 12 then break end
        expected[#expected + 1] = { "on", t, 1e-8 }
      end
      check_events(tr, expected, method)
      assert.are.equal(1, tr:events()[1].cascade)   -- fired as the breakpoint's event iteration
      assert.are.same({ 8 }, { tr:breakpoints()[1].t })
    end)

    it(("fires where a short piece takes it across zero and back (%s)"):format(method), function()
      -- cooling slowly from 19.5; the setpoint 19 is 21 on [8, 8.001):
      -- 'on' (T < set - 1) holds only there, and fires at 8
      local set = salta.table{ t = { 0, 8, 8.001, 30 }, v = { 19, 21, 19, 19 }, interp = "step" }
      local m = thermostat(set, 19.5, false, 0.01, 1)
      local tr = m:simulate{ tf = 9, rtol = 1e-11, atol = 1e-12, method = method }
      local T8 = 10 + 9.5 * math.exp(-0.08)
      check_events(tr, { { "on", 8, 1e-12 }, { "off", 8 + reach(0.01, 110, T8, 19), 1e-8 } }, method)
      assert.are.equal(1, tr:events()[1].cascade)
    end)
  end
end)
