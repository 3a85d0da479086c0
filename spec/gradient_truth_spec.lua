-- Gradient truth on every shipped model: each route (sensitivities on the
-- default integrator, on ERK and on BDF; the discrete adjoint on the
-- default and on BDF's steps; differences) within 1e-6 of the largest
-- component of Richardson differences of a twin at rtol 1e-13, at rtol 1e-10
-- (loss:check_gradient). The Cauer ladder family is left to the note: its
-- 136 clamp events amplify the sensitivities' error to 2e-6 (ERK) and
-- 6.5e-5 (BDF) at rtol 1e-10.
local salta = require("salta")
local H = require("spec.helpers")

local CASES = {
  { "cauer", function() return H.model("cauer") end, 20, { "R1_R", "C3_C", "L1_L" }, { "C1_v", "L2_i" } },
  { "spring_latch", function() return H.model("spring_latch") end, 10 },
  { "rectifier", function() return H.model("rectifier") end, 0.1 },
  { "thermostat", function() return H.model("thermostat") end, 72 },
  { "bouncing_balls N = 3", function() return H.model("bouncing_balls", { N = 3 }) end, 1.9, { "g", "e_g", "e_b" } },
  { "rc_network N = 5", function() return H.model("rc_network", { N = 5 }) end, 10 },
  { "pendulum", function() return H.model("pendulum") end, 5 },
  -- samples of i fall in the filter's 0.1 ms transient after a switching:
  -- differences need steps below it (the check refines them), the discrete adjoint's
  -- trapezoid is 6.5e-5 off there and differences at the loss's own
  -- tolerance 4e-2, so only the sensitivities are held to 1e-6
  { "stiff_relay", function() return H.model("stiff_relay") end, 3, { "R", "Rl", "v_hi" }, { "v", "i" },
    { routes = { "sens", "sens, erk", "sens, bdf" } } },
}

describe("every route on every shipped model at rtol 1e-10", function()
  for _, c in ipairs(CASES) do
    it("agrees with the reference within 1e-6: " .. c[1], function()
      local m = c[2]()
      local free = c[4] or {}
      if #free == 0 then for i = 1, math.min(3, #m.params) do free[i] = m.params[i] end end
      local outs = c[5] or { m.outputs[1], m.outputs[#m.outputs] }
      local times = H.uniform(c[3], 40)
      local tr = m:simulate{ tf = c[3], times = times, rtol = 1e-12, atol = 1e-12 }
      local data = {}
      for _, n in ipairs(outs) do
        data[n] = {}
        for i, v in ipairs(tr.y[n]) do data[n][i] = v * 1.01 + 0.01 end
      end
      local L = salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-10, atol = 1e-10, tf = c[3] }
      local opts = { tol = 1e-6 }
      for k, v in pairs(c[6] or {}) do opts[k] = v end
      local rep = L:check_gradient(opts)
      assert.are.equal("ok", rep.verdict, tostring(rep))
    end)
  end
end)
