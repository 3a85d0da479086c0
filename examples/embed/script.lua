-- A user script run by run_script.c: a bouncing ball with the parameters
-- the host passes in `input` (g, e); returns its height at t = 0.5, 1, 1.5
-- and the first bounce time.
local salta = require("salta")
local ball = salta.dae{
  name = "ball", states = { { "h", 1.0 }, { "v", 0.0 } }, params = { { "g", 9.81 }, { "e", 0.8 } },
  f = function(t, x, z, p) return { x.v, -p.g } end,
  events = { { name = "floor", direction = "down", guard = function(t, x) return x.h end,
    reset = function(t, x, z, p) return { v = -p.e * x.v } end } },
}
local tr = ball:simulate{ tf = 1.5, times = { 0.5, 1.0, 1.5 }, params = { g = input[1], e = input[2] },
  rtol = 1e-10, atol = 1e-12 }
return { tr.y.h[1], tr.y.h[2], tr.y.h[3], tr:events()[1].t }
