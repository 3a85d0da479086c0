-- The directional kernels (salta_kernel.h: dirs_x, dirs_z of f and g) are
-- the sparse products of the Jacobian kernels unrolled, with the same
-- terms summed in the same order: a model compiled with them and the same
-- model compiled without (codegen_dirs.MAX_ENTRIES = 0) give the same
-- loss and forward-sensitivity gradient to the last bit, on ERK (every
-- stage multiplies by f_x, f_z and g_x) and on BDF (the derivatives at
-- each restart and the z rows after each event).
local H = require("helpers")
local codegen = require("salta.codegen")
local codegen_dirs = require("salta.codegen_dirs")

-- the reduced right-hand side's kernels off: they sum other terms
-- (spec/reduced_rhs_spec.lua)
local function with_limit(limit, make)
  return H.with_field(codegen, "REDUCED", false, function()
    return H.with_field(codegen_dirs, "MAX_ENTRIES", limit, make)
  end)
end

-- the ladder of 150 sections: 300 rows of f, kernels cut into parts when
-- the limit lets them be generated at all
local CASES = {
  { "cauer", {}, 20, { "R1_R", "C3_C", "L1_L" } },
  { "cauer", {}, 20, { "C1_C", "C2_C", "C4_C" } },   -- g's columns share the source's tanh (k_g_dp_shared)
  { "spring_latch", {}, 10 },
  { "rectifier", {}, 0.1 },
  { "bouncing_balls", { N = 3 }, 1.9, { "g", "e_g", "e_b" } },
  { "cauer_ladder", { N = 4 }, 10 },
  { "pendulum", {}, 5 },
  { "cauer_ladder", { N = 150 }, 5, nil, 1e6 },
}

local function loss_of(m, c)
  local free = c[4] or { m.params[1], m.params[2] }
  return H.distorted_loss(m, c[3], free), free
end

describe("directional kernels", function()
  it("are generated for f and g, and not beyond MAX_ENTRIES", function()
    local m = dofile("models/cauer.lua")()
    local with = codegen.generate(m.symbolic, "", "def")
    assert.truthy(with:find("k_f_dx(", 1, true) and with:find("k_g_dx(", 1, true) and with:find(".dirs_z = k_f_dz", 1, true))
    assert.is_nil(with:find("k_h_dx(", 1, true))
    assert.is_nil(with:find("k_g_dz(", 1, true))   -- g_z is factorised, never multiplied
    assert.truthy(with:find("k_g_dp_shared(", 1, true))   -- the source's tanh, read by several columns
    local big = dofile("models/cauer_ladder.lua"){ N = 150 }
    assert.is_nil(codegen.generate(big.symbolic, "", "def"):find("k_f_dx(", 1, true))
    local cut = with_limit(1e6, function() return codegen.generate(big.symbolic, "", "def") end)
    assert.truthy(cut:find("k_f_dx_part2(", 1, true))
    local without = with_limit(0, function() return codegen.generate(m.symbolic, "", "def") end)
    assert.is_nil(without:find("dirs_x", 1, true))
  end)

  for _, c in ipairs(CASES) do
    it("give the sparse products' bits: " .. c[1] .. (c[2].N and " N = " .. c[2].N or ""), function()
      local file = "models/" .. c[1] .. ".lua"
      local a = with_limit(c[5] or codegen_dirs.MAX_ENTRIES, function() return dofile(file)(c[2]) end)
      local b = with_limit(0, function() return dofile(file)(c[2]) end)
      local La, free = loss_of(a, c)
      local Lb = loss_of(b, c)
      local p = {}
      for k = 1, #free do p[k] = La:nominal(k) end
      for _, method in ipairs({ "erk", "bdf" }) do
        local va, ga = La:twin{ method = method }:value_and_grad(p)
        local vb, gb = Lb:twin{ method = method }:value_and_grad(p)
        assert.are.equal(vb, va, method .. ": the loss")
        for k = 1, #free do
          assert.are.equal(gb[k], ga[k], ("%s: dL/d%s"):format(method, free[k]))
        end
      end
    end)
  end
end)
