-- The Cauer low-pass ladder with one state-dependent reinit (the seed
-- paper's first experiment): the Modelica CauerLowPassAnalog circuit with a smooth tanh step
-- source and a `when C3_v > 0.5 then reinit(C3_v, 0)` clause. Written in
-- the Lua DSL; the exported spec of the same model loads with
-- salta.load_spec and evaluates identically.
--
--   local m = dofile("models/cauer.lua")()      -- or (opts) for backend=...
local salta = require("salta")

-- All 35 parameters of the exported spec, in its order. Most are unused:
-- the flattened Modelica model keeps dead aliases (c1..c5, l1, l2 of
-- C1_C..C5_C, L1_L, L2_L; R1_R, R2_R of R*_R_actual) and the heat-port
-- and source parameters the equations do not read.
local PARAMS = {
  {"R1_T_ref", 300.15}, {"R1_T", 300.15}, {"R1_T_heatPort", 300.15},
  {"R2_T_ref", 300.15}, {"R2_T", 300.15}, {"R2_T_heatPort", 300.15},
  {"V_startTime", 1.0}, {"V_offset", 0.0}, {"V_signalSource_startTime", 1.0},
  {"V_signalSource_offset", 0.0}, {"V_V", 1.0}, {"V_signalSource_height", 1.0},
  {"R2_useHeatPort", 0.0}, {"R2_alpha", 0.0}, {"R2_R", 1.0},
  {"R1_useHeatPort", 0.0}, {"R1_alpha", 0.0}, {"R1_R", 1.0},
  {"l2", 0.8586}, {"L2_L", 0.8586}, {"l1", 1.304}, {"L1_L", 1.304},
  {"c5", 0.7262}, {"C5_C", 0.7262}, {"c4", 0.8365378334947966}, {"C4_C", 0.8365378334947966},
  {"c3", 1.682}, {"C3_C", 1.682}, {"c2", 0.26380177746657757}, {"C2_C", 0.26380177746657757},
  {"c1", 1.072}, {"C1_C", 1.072}, {"G_p_v", 0.0}, {"R1_R_actual", 1.0}, {"R2_R_actual", 1.0},
}

return function(opts)
  opts = opts or {}
  return salta.dae{
    name = "cauer", backend = opts.backend,
    states = {"L2_i", "L1_i", "C5_v", "C3_v", "C1_v"},
    -- derivative aliases left by index reduction: z5 = C5_v', z3, z1
    algebraics = {"DER_C5_v", "DER_C3_v", "DER_C1_v"},
    params = PARAMS,
    f = function(t, x, z, p)
      return {
        (x.C3_v - x.C5_v) / p.L2_L,
        (x.C1_v - x.C3_v) / p.L1_L,
        z.DER_C5_v,
        z.DER_C3_v,
        z.DER_C1_v,
      }
    end,
    g = function(t, x, z, p)
      local V = p.V_signalSource_offset
        + p.V_signalSource_height * (1 + salta.tanh(50 * (t - p.V_signalSource_startTime))) / 2
      return {
        -- KCL at node 5: L2 current + C4 current = C5 current + R2 current
        -(p.C5_C * z.DER_C5_v - p.C4_C * (z.DER_C3_v - z.DER_C5_v) - x.L2_i) - x.C5_v / p.R2_R_actual,
        -- KCL at node 1
        -(x.L1_i + p.C2_C * (z.DER_C1_v - z.DER_C3_v) + p.C1_C * z.DER_C1_v) + (V - x.C1_v) / p.R1_R_actual,
        -- KCL at node 3
        x.L2_i + p.C4_C * (z.DER_C3_v - z.DER_C5_v) + p.C3_C * z.DER_C3_v
          - p.C2_C * (z.DER_C1_v - z.DER_C3_v) - x.L1_i,
      }
    end,
    events = {
      { name = "C3_v>0.5", direction = "up",
        guard = function(t, x, z, p) return x.C3_v - 0.5 end,
        reset = function(t, x, z, p) return { C3_v = 0 } end },
    },
  }
end
