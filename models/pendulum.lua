-- The Cartesian pendulum, an index-3 DAE: a mass on a rod of length L,
-- positions x, y, velocities vx, vy and the rod's force per length lam.
-- salta's structural compiler differentiates the constraint twice and makes
-- y and vy algebraic (dummy derivatives), so x and vx are the states and
-- the constraint holds without drift.
--
--   x' = vx,  y' = vy,  vx' = -lam x,  vy' = -lam y - g
--   0 = x^2 + y^2 - L^2
--
--   local m = dofile("models/pendulum.lua"){ angle = 0.1 }   -- start angle (rad) from hanging down
local salta = require("salta")

return function(opts)
  opts = opts or {}
  local L, angle = opts.L or 1.0, opts.angle or 0.1
  return salta.dae{
    name = "pendulum", backend = opts.backend,
    states = { { "x", L * math.sin(angle) }, { "y", -L * math.cos(angle) }, { "vx", 0 }, { "vy", 0 } },
    algebraics = { { "lam", 0 } },
    params = { { "L", L }, { "g", 9.81 } },
    f = function(t, x, z, p) return { x.vx, x.vy, -z.lam * x.x, -z.lam * x.y - p.g } end,
    g = function(t, x, z, p) return { x.x * x.x + x.y * x.y - p.L * p.L } end,
  }
end
