-- A room heated by a thermostat with hysteresis, driven by the measured
-- outdoor temperature (an input table from CSV, hourly).
--
--   T' = -a (T - Tout(t)) + P heating       (T in deg C, t in hours)
--   the heater switches off when T rises through T_hi and on when it falls
--   through T_lo (a discrete boolean); the room starts at T0 (a parameter)
--
--   local m = dofile("models/thermostat.lua")()                -- examples/data/outdoor.csv
--   local m = dofile("models/thermostat.lua"){ csv = "my.csv" }   -- columns hour, Tout
local salta = require("salta")

return function(opts)
  opts = opts or {}
  local outdoor = salta.table{ csv = opts.csv or "examples/data/outdoor.csv", t = "hour", v = "Tout",
    interp = "linear" }
  return salta.dae{
    name = "thermostat", backend = opts.backend,
    states = { { "T", function(p) return p.T0 end } },
    discrete = { { "heating", true } },
    inputs = { Tout = outdoor },
    params = { { "a", 0.15 }, { "P", 3.0 }, { "T0", 16.0 }, { "T_lo", 19.0 }, { "T_hi", 21.0 } },
    f = function(t, x, z, p, u)
      return { -p.a * (x.T - u.Tout(t)) + salta.ifelse(x.heating, p.P, 0) }
    end,
    h = function(t, x) return { T = x.T } end,
    events = {
      { name = "off", direction = "up", guard = function(t, x, z, p) return x.T - p.T_hi end,
        reset = function() return { heating = false } end },
      { name = "on", direction = "down", guard = function(t, x, z, p) return x.T - p.T_lo end,
        reset = function() return { heating = true } end },
    },
  }
end
