-- A half-wave diode rectifier with a smoothing capacitor: a hybrid DAE with
-- a discrete diode mode and an algebraic current.
--
--   source   vs = V sin(2 pi f t)
--   diode    conducting: i = (vs - v - Vf) / Ron;  blocking: i = 0
--   load     C v' = i - v / R
--   the diode turns on when vs - v rises through Vf (forward voltage) and
--   off when its current falls through 0
--
--   local m = dofile("models/rectifier.lua")()
local salta = require("salta")

return function(opts)
  opts = opts or {}
  return salta.dae{
    name = "rectifier", backend = opts.backend,
    states = { { "v", 0.0 } },
    algebraics = { { "i", 0.0 } },
    discrete = { { "conducting", false } },
    params = { { "V", 10.0 }, { "f", 50.0 }, { "Vf", 0.7 }, { "Ron", 2.0 }, { "R", 200.0 }, { "C", 1.0e-4 } },
    f = function(t, x, z, p) return { (z.i - x.v / p.R) / p.C } end,
    g = function(t, x, z, p)
      local vs = p.V * salta.sin(2 * math.pi * p.f * t)
      return { z.i - salta.ifelse(x.conducting, (vs - x.v - p.Vf) / p.Ron, 0) }
    end,
    h = function(t, x, z, p) return { v = x.v, i = z.i } end,
    events = {
      { name = "on", direction = "up",
        guard = function(t, x, z, p) return p.V * salta.sin(2 * math.pi * p.f * t) - x.v - p.Vf end,
        reset = function() return { conducting = true } end },
      { name = "off", direction = "down",
        guard = function(t, x, z) return z.i end,
        reset = function() return { conducting = false } end },
    },
  }
end
