-- The exported specs and their Lua DSL twins in models/ are the same
-- models: same names and start values, and the same f, g, guards (with
-- directions) and resets at random points.
local H = require("helpers")

local function same_vectors(a, b, what)
  assert.are.equal(#a, #b, what .. ": lengths differ")
  for i = 1, #a do
    assert(math.abs(a[i] - b[i]) <= 1e-13 * (1 + math.abs(a[i])),
      ("%s[%d]: %.17g vs %.17g"):format(what, i, a[i], b[i]))
  end
end

local function check_twins(dsl, spec)
  assert.are.same(dsl.states, spec.states)
  assert.are.same(dsl.algebraics, spec.algebraics)
  assert.are.same(dsl.params, spec.params)
  assert.are.same(dsl.core:info().e_dir, spec.core:info().e_dir)
  for _, n in ipairs(dsl.states) do assert.are.equal(dsl.x0[n], spec.x0[n], "start of " .. n) end
  for _, n in ipairs(dsl.params) do assert.are.equal(dsl.p0[n], spec.p0[n], "value of " .. n) end
  local rnd = H.rng(7)
  for k = 1, 3 do
    local t, x, z, p = H.random_point(dsl, rnd)
    for _, fn in ipairs({ "f", "g", "guard" }) do
      same_vectors(dsl:eval(fn, t, x, z, p), spec:eval(fn, t, x, z, p), fn .. " at point " .. k)
    end
    for j = 1, #dsl.events do
      same_vectors(dsl:eval("reset", t, x, z, p, j), spec:eval("reset", t, x, z, p, j),
        "reset of " .. dsl.events[j] .. " at point " .. k)
    end
  end
end

describe("DSL twins of the exported specs", function()
  it("Cauer ladder", function()
    check_twins(H.model("cauer"), H.spec_model("dae_specification_cauer_events.json"))
  end)
  for _, N in ipairs({ 3, 7, 15 }) do
    it("bouncing balls N = " .. N, function()
      check_twins(H.model("bouncing_balls", { N = N }),
        H.spec_model(("dae_specification_bouncing_balls_N%d.yaml"):format(N)))
    end)
  end
end)
