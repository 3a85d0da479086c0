-- A DC motor under a bang-bang speed controller with hysteresis, driven by
-- a measured speed setpoint (a step table) and a measured load torque (a
-- linear table), both from CSV.
--
--   J w' = K i - b w - T_load(t)                 (w in rad/s, t in s)
--   0    = u V - R i - K w - Vb tanh(i / i0)     the armature current i,
--          implicit (a brush drop); u = 1 while the relay is on, else 0
--          (the driver shorts the armature: the current brakes)
--   the relay switches off when w rises through w_set(t) + dlt and on
--   when it falls through w_set(t) - dlt; the motor starts at w0 (a
--   parameter) with the relay on
--
-- The current jumps at every switching of the relay; the speed does not.
--
--   local m = dofile("models/dcmotor.lua")()      -- examples/data/dcmotor_*.csv
--   local m = dofile("models/dcmotor.lua"){ setpoint = "sp.csv", load = "tl.csv" }
local salta = require("salta")

return function(opts)
  opts = opts or {}
  local setpoint = salta.table{ csv = opts.setpoint or salta.resource("examples/data/dcmotor_setpoint.csv"),
    t = "t", v = "w_set", interp = "step" }
  local load = salta.table{ csv = opts.load or salta.resource("examples/data/dcmotor_load.csv"), t = "t",
    v = "torque", interp = "linear" }
  return salta.dae{
    name = "dcmotor", backend = opts.backend,
    states = { { "w", function(p) return p.w0 end } },
    algebraics = { { "i", 0.0 } },
    discrete = { { "on", true } },
    inputs = { w_set = setpoint, T_load = load },
    params = { { "K", 0.05 }, { "R", 1.0 }, { "J", 0.02 }, { "b", 2e-4 }, { "dlt", 5.0 }, { "w0", 150.0 },
      { "V", 24.0 }, { "Vb", 0.5 }, { "i0", 0.2 } },
    f = function(t, x, z, p, u) return { w = (p.K * z.i - p.b * x.w - u.T_load(t)) / p.J } end,
    g = function(t, x, z, p)
      return { x.on * p.V - p.R * z.i - p.K * x.w - p.Vb * salta.tanh(z.i / p.i0) }
    end,
    h = function(t, x, z) return { w = x.w, i = z.i } end,
    events = {
      { name = "off", direction = "up", guard = function(t, x, z, p, u) return x.w - (u.w_set(t) + p.dlt) end,
        reset = function() return { on = false } end },
      { name = "on", direction = "down", guard = function(t, x, z, p, u) return x.w - (u.w_set(t) - p.dlt) end,
        reset = function() return { on = true } end },
    },
  }
end
