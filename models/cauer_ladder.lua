-- A Cauer ladder of N LC sections: a family for scaling (issue: structural
-- compiler), shaped like a flat-Modelica export: each capacitor's
-- derivative is an algebraic variable defined by its own equation (an
-- explicit equation a structural compiler eliminates), and each section has
-- a reinit event (as the seed's single C3_v reinit).
--
--   source:  vs = V tanh(t)                       (a smooth step)
--   section k = 1..N:  L i_k' = v_{k-1} - v_k     (v_0 = vs)
--                      C v_k' = i_k - i_{k+1}     (i_{N+1} = v_N / R)
--   algebraic dv_k = v_k', from 0 = C dv_k - (i_k - i_{k+1})
--   when v_k rises through vmax: v_k := 0
--
--   local m = dofile("models/cauer_ladder.lua"){ N = 100 }   -- 3N equations, N events
--   { N = 500, local_params = true }: each section its own L_k and C_k (2N + 3 parameters)
local salta = require("salta")

return function(opts)
  opts = opts or {}
  local N = opts.N or 10
  local states, algebraics, events = {}, {}, {}
  local params = { { "V", 1 }, { "R", 1 }, { "vmax", 1.1 } }
  local Lk, Ck = {}, {}   -- the parameter names of section k's inductance and capacitance
  for k = 1, N do
    Lk[k], Ck[k] = opts.local_params and "L" .. k or "L", opts.local_params and "C" .. k or "C"
    if opts.local_params then
      params[#params + 1] = { Lk[k], 0.5 }
      params[#params + 1] = { Ck[k], 0.5 }
    end
  end
  if not opts.local_params then
    table.insert(params, 2, { "L", 0.5 })
    table.insert(params, 3, { "C", 0.5 })
  end
  for k = 1, N do
    states[#states + 1] = { "i" .. k, 0 }
    states[#states + 1] = { "v" .. k, 0 }
    algebraics[k] = { "dv" .. k, 0 }
    events[k] = { name = "clamp" .. k, direction = "up",
      guard = function(t, x, z, p) return x["v" .. k] - p.vmax end,
      reset = function() return { ["v" .. k] = 0 } end }
  end
  return salta.dae{
    name = "cauer_ladder_N" .. N, backend = opts.backend,
    states = states, algebraics = algebraics,
    params = params,
    f = function(t, x, z, p)
      local d = {}
      for k = 1, N do
        local prev = k == 1 and p.V * salta.tanh(t) or x["v" .. (k - 1)]
        d[#d + 1] = (prev - x["v" .. k]) / p[Lk[k]]
        d[#d + 1] = z["dv" .. k]
      end
      return d
    end,
    g = function(t, x, z, p)
      local r = {}
      for k = 1, N do
        local out = k == N and x["v" .. N] / p.R or x["i" .. (k + 1)]
        r[k] = p[Ck[k]] * z["dv" .. k] - (x["i" .. k] - out)
      end
      return r
    end,
    h = function(t, x) return { vN = x["v" .. N], v1 = x.v1 } end,
    events = events,
  }
end
