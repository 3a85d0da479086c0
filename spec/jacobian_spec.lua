-- Every generated Jacobian equals central finite differences of the
-- generated function, at three random points, for every shipped model and
-- every exported spec.
local H = require("helpers")

local TOL = 1e-7

local function check_model(m, label)
  local rnd = H.rng(42)
  local fns = { "f", "g", "h", "guard" }
  for k = 1, 3 do
    local t, x, z, p = H.random_point(m, rnd)
    local function check(fn, event)
      for _, wrt in ipairs({ "x", "z", "p", "t" }) do
        local J = m:jacobian(fn, wrt, t, x, z, p, event)
        local F = H.fd_jacobian(m, fn, wrt, t, x, z, p, event)
        local err, where = H.max_rel_diff(J, F, 1)
        assert(err <= TOL, ("%s: d%s/d%s%s at point %d: relative error %.3g at %s"):format(
          label, fn, wrt, event and (" (event " .. event .. ")") or "", k, err,
          where and table.concat(where, ",") or "?"))
      end
    end
    for _, fn in ipairs(fns) do check(fn) end
    for j = 1, #m.events do check("reset", j) end
  end
end

describe("generated Jacobians match central differences", function()
  for _, name in ipairs({ "cauer", "spring_latch" }) do
    it("models/" .. name .. ".lua", function() check_model(H.model(name), name) end)
  end
  for _, N in ipairs({ 3, 7, 15 }) do
    it("models/bouncing_balls.lua N = " .. N, function()
      check_model(H.model("bouncing_balls", { N = N }), "balls N" .. N)
    end)
  end
  for _, file in ipairs(H.SPECS) do
    it("spec " .. file, function() check_model(H.spec_model(file), file) end)
  end
end)
