-- An N-bus RC network with switched loads: a family for scaling, shaped
-- like a flat connection-equation export. Bus k has a capacitor to ground
-- (state v_k), a line to bus k + 1 (resistance Rl, current i_k) and a load
-- (resistance Rload) that a hysteresis switch connects: on when v_k rises
-- through Von, off when it falls through Voff (a discrete variable per
-- bus). A current source drives bus 1, and a bias current charges every
-- bus, a little more towards the far end, so the far buses switch too, at
-- distinct times.
--
--   C v_k' = Ib (1 + k / N) + in_k - out_k - load_k     (in_1 = Is (1 + sin(w t)))
--   0 = i_k - (v_k - v_{k+1}) / Rl        k < N   (explicit)
--   0 = in_{k+1} - i_k, 0 = out_k - i_k            (connections: aliases)
--   0 = load_k - on_k v_k / Rload                  (explicit)
--   when v_k rises through Von: on_k := 1; falls through Voff: on_k := 0
--
--   local m = dofile("models/rc_network.lua"){ N = 100 }   -- 5N - 2 equations, 2N events
local salta = require("salta")

return function(opts)
  opts = opts or {}
  local N = opts.N or 10
  local states, algebraics, discrete, events = {}, {}, {}, {}
  for k = 1, N do
    states[k] = { "v" .. k, 0 }
    discrete[k] = { "on" .. k, false }
    algebraics[#algebraics + 1] = { "load" .. k, 0 }
    if k < N then
      algebraics[#algebraics + 1] = { "i" .. k, 0 }
      algebraics[#algebraics + 1] = { "out" .. k, 0 }
      algebraics[#algebraics + 1] = { "in" .. (k + 1), 0 }
    end
    events[#events + 1] = { name = "on" .. k, direction = "up",
      guard = function(t, x, z, p) return x["v" .. k] - p.Von end,
      reset = function() return { ["on" .. k] = true } end }
    events[#events + 1] = { name = "off" .. k, direction = "down",
      guard = function(t, x, z, p) return x["v" .. k] - p.Voff end,
      reset = function() return { ["on" .. k] = false } end }
  end
  return salta.dae{
    name = "rc_network_N" .. N, backend = opts.backend,
    states = states, discrete = discrete, algebraics = algebraics,
    params = { { "Is", 1 }, { "Ib", 0.05 }, { "w", 2 }, { "C", 0.2 }, { "Rl", 0.05 }, { "Rload", 2 },
      { "Von", 0.8 }, { "Voff", 0.6 } },
    f = function(t, x, z, p)
      local d = {}
      for k = 1, N do
        local inflow = k == 1 and p.Is * (1 + salta.sin(p.w * t)) or z["in" .. k]
        local outflow = k < N and z["out" .. k] or 0
        d["v" .. k] = (p.Ib * (1 + k / N) + inflow - outflow - z["load" .. k]) / p.C
      end
      return d
    end,
    g = function(t, x, z, p)
      local r = {}
      for k = 1, N do
        r[#r + 1] = z["load" .. k] - x["on" .. k] * x["v" .. k] / p.Rload
        if k < N then
          r[#r + 1] = z["i" .. k] - (x["v" .. k] - x["v" .. (k + 1)]) / p.Rl
          r[#r + 1] = z["out" .. k] - z["i" .. k]
          r[#r + 1] = z["in" .. (k + 1)] - z["i" .. k]
        end
      end
      return r
    end,
    h = function(t, x) return { v1 = x.v1, vN = x["v" .. N] } end,
    events = events,
  }
end
