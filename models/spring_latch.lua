-- A mass on a stiffening spring with a two-sided latch: a small hybrid DAE
-- whose algebraic variable appears in the guards and in the resets, with a
-- parameter inside the guards.
--
--   x' = v,  v' = (-F - d v + A sin(w t)) / m
--   0  = F + c F^3 - k x            (spring force, defined implicitly)
--   when F rises through F_max:  v+ = -e v- - a F-   (the latch kicks back)
--   when F falls through -F_max: v+ = -e v- - a F-
--
--   local m = dofile("models/spring_latch.lua")()
local salta = require("salta")

return function(opts)
  opts = opts or {}
  local function kick(t, x, z, p) return { v = -p.e * x.v - p.a * z.F } end
  return salta.dae{
    name = "spring_latch", backend = opts.backend,
    states = { { "x", 0.0 }, { "v", 2.0 } },
    algebraics = { { "F", 0.0 } },
    params = { { "k", 4.0 }, { "c", 0.1 }, { "d", 0.2 }, { "m", 1.0 }, { "A", 0.5 },
               { "w", 1.3 }, { "F_max", 1.5 }, { "e", 0.7 }, { "a", 0.1 } },
    f = function(t, x, z, p)
      return { x.v, (-z.F - p.d * x.v + p.A * salta.sin(p.w * t)) / p.m }
    end,
    g = function(t, x, z, p) return { z.F + p.c * z.F ^ 3 - p.k * x.x } end,
    events = {
      { name = "latch_high", direction = "up",
        guard = function(t, x, z, p) return z.F - p.F_max end, reset = kick },
      { name = "latch_low", direction = "down",
        guard = function(t, x, z, p) return z.F + p.F_max end, reset = kick },
    },
  }
end
