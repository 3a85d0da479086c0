-- A relay-controlled charger behind a fast source filter: a stiff hybrid
-- DAE. The source's parasitic time constant tau_s (0.1 ms) is four orders
-- of magnitude below the charging time constant, so an explicit method
-- must step at the filter's scale while the trajectory moves at the
-- capacitor's: method = "auto" detects it and integrates with BDF.
--
--   w' = (Vs on - w) / tau_s          (the filtered source, on in {0, 1})
--   v' = (i - v / Rl) / C             (the capacitor and its load)
--   0  = R i - (w - v)                (the charging current)
--   the relay switches off when v rises through v_hi and on when it falls
--   through v_lo (a discrete boolean)
--
-- examples/bench/floor_idas_stiff.c writes the same model by hand against
-- IDAS; change both together.
--
--   local m = dofile("models/stiff_relay.lua")()
local salta = require("salta")

return function(opts)
  opts = opts or {}
  return salta.dae{
    name = "stiff_relay", backend = opts.backend,
    states = { { "w", 0.0 }, { "v", 0.0 } },
    algebraics = { { "i", 0.0 } },
    discrete = { { "on", true } },
    params = { { "Vs", 10.0 }, { "R", 1.0 }, { "C", 1.0 }, { "Rl", 10.0 }, { "v_lo", 4.0 }, { "v_hi", 6.0 },
               { "tau_s", 1e-4 } },
    f = function(t, x, z, p)
      return { (salta.ifelse(x.on, p.Vs, 0) - x.w) / p.tau_s, (z.i - x.v / p.Rl) / p.C }
    end,
    g = function(t, x, z, p) return { p.R * z.i - (x.w - x.v) } end,
    h = function(t, x, z) return { v = x.v, i = z.i } end,
    events = {
      { name = "off", direction = "up", guard = function(t, x, z, p) return x.v - p.v_hi end,
        reset = function() return { on = false } end },
      { name = "on", direction = "down", guard = function(t, x, z, p) return x.v - p.v_lo end,
        reset = function() return { on = true } end },
    },
  }
end
