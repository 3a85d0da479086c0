-- Gradient truth on every shipped model: each route (sensitivities on the
-- default integrator, on ERK and on BDF; the discrete adjoint on the
-- default, ERK's and BDF's steps; the continuous adjoint; differences) within
-- 1e-6 of the largest component of Richardson differences of a twin at
-- rtol 1e-13, at rtol 1e-10 (loss:check_gradient), but for the routes a
-- case lists as ill-conditioned (helpers.lua: the stiff relay's BDF). The
-- Cauer ladder family is left to the note: its 136 clamp events amplify
-- the sensitivities' error to 2e-6 (ERK) and 6.5e-5 (BDF) at rtol 1e-10.
local H = require("spec.helpers")

describe("every route on every shipped model at rtol 1e-10", function()
  for _, c in ipairs(H.GRADIENT_CASES) do
    it("agrees with the reference within 1e-6: " .. c[1], function()
      local opts = { tol = 1e-6 }
      for k, v in pairs(c[6] or {}) do opts[k] = v end
      local rep = H.gradient_case_loss(c, 1e-10):check_gradient(opts)
      if not c.ill_conditioned then
        assert.are.equal("ok", rep.verdict, tostring(rep))
      else
        assert.are.equal(#opts.routes, #rep.routes)
        for _, e in ipairs(rep.routes) do
          assert(e.ok or (c.ill_conditioned[e.name] and e.ill_conditioned), e.name .. "\n" .. tostring(rep))
        end
      end
    end)
  end
end)
