-- The reduced right-hand side's directional kernels (salta_kernel.h:
-- reduced_dx, reduced_dp): for a model whose algebraics are all assigned
-- explicitly, ERK's stages multiply by the Jacobians of F(t, x, p) =
-- f(t, x, z(t, x, p), p), built by the chain rule along the assignments,
-- instead of solving the sensitivities' z rows by g_z. The same derivative
-- summed otherwise: the loss and its forward-sensitivity gradient on ERK
-- agree with the model compiled without them (codegen.REDUCED =
-- false) to rounding, at the nominal point and at points away from it.
local H = require("helpers")
local salta = require("salta")
local codegen = require("salta.codegen")

local function without(make) return H.with_field(codegen, "REDUCED", false, make) end

local CASES = {
  { "cauer", {}, 20, { "R1_R", "C3_C", "L1_L" } },
  { "cauer", {}, 20, { "C1_C", "C2_C", "C4_C", "L2_L" } },   -- columns sharing the source's tanh
  { "rectifier", {}, 0.1 },
  { "rc_network", { N = 5 }, 10 },
  { "cauer_ladder", { N = 4 }, 10 },
  { "stiff_relay", {}, 3, { "R", "Rl", "v_hi" } },
}

-- A loss on case c's model m, on ERK; start-value directions too, where
-- the case lists none (their columns pass the parameters' kernel by).
local function loss_of(m, c)
  local free = c[4] or { m.params[1], m.params[2], "x0." .. m.states[1] }
  return H.distorted_loss(m, c[3], free, "erk"), free
end

describe("the reduced right-hand side", function()
  it("is generated where every algebraic is assigned, and only there", function()
    local m = dofile("models/cauer.lua")()
    local src = codegen.generate(m.symbolic, "", "def")
    assert.truthy(src:find(".reduced_dx = k_F_dx", 1, true) and src:find(".reduced_dp = k_F_dp", 1, true))
    assert.is_nil(without(function() return codegen.generate(m.symbolic, "", "def") end):find("reduced_d", 1, true))
    local newton = dofile("models/dcmotor.lua")()   -- one algebraic by Newton
    assert.are.equal(1, newton.symbolic.nblocks)
    assert.is_nil(codegen.generate(newton.symbolic, "", "def"):find("reduced_d", 1, true))
    local none = dofile("models/thermostat.lua")()   -- no algebraics
    assert.is_nil(codegen.generate(none.symbolic, "", "def"):find("reduced_d", 1, true))
    local big = dofile("models/cauer_ladder.lua"){ N = 150 }   -- beyond MAX_ENTRIES
    assert.is_nil(codegen.generate(big.symbolic, "", "def"):find("reduced_d", 1, true))
  end)

  it("is not generated where the chain fills F_x in beyond the solve by g_z", function()
    -- x_i' = s, 0 = s - (x_1 + ... + x_n): F_x is n x n, the stages'
    -- products read f_z, g_x and g_z (2 n + 1 entries)
    local function sum_model(n)
      local states = {}
      for i = 1, n do states[i] = { "x" .. i, i } end
      return salta.dae{ name = "sum" .. n, states = states, algebraics = { { "s", 0 } }, params = { { "k", 1 } },
        f = function(t, x, z, p)
          local d = {}
          for i = 1, n do d[i] = -p.k * z.s end
          return d
        end,
        g = function(t, x, z, p)
          local sum = x.x1
          for i = 2, n do sum = sum + x["x" .. i] end
          return { z.s - sum }
        end }
    end
    assert.truthy(sum_model(2).core:info().reduced)        -- F_x 4 entries against 5
    assert.falsy(sum_model(4).core:info().reduced)         -- 16 against 9
  end)

  for _, c in ipairs(CASES) do
    it("gives the solve by g_z's loss and gradient on ERK: " .. c[1] .. (c[2].N and " N = " .. c[2].N or "")
       .. " (" .. table.concat(c[4] or { "first two", "a start value" }, ", ") .. ")", function()
      local file = "models/" .. c[1] .. ".lua"
      local a = dofile(file)(c[2])
      local b = without(function() return dofile(file)(c[2]) end)
      assert.truthy(a.core:info().reduced)
      assert.falsy(b.core:info().reduced)
      local La, free = loss_of(a, c)
      local Lb = loss_of(b, c)
      local rnd = H.rng(7)
      for point = 1, 3 do
        local p = {}
        for k = 1, #free do
          local nom = La:nominal(k)
          p[k] = point == 1 and nom or nom * (0.9 + 0.2 * rnd()) + (nom == 0 and 0.05 * rnd() or 0)
        end
        local va, ga = La:value_and_grad(p)
        local vb, gb = Lb:value_and_grad(p)
        assert(math.abs(va - vb) <= 1e-10 * math.abs(vb), ("point %d: loss %.17g against %.17g"):format(point, va, vb))
        local big = 0
        for k = 1, #free do big = math.max(big, math.abs(gb[k])) end
        for k = 1, #free do
          assert(math.abs(ga[k] - gb[k]) <= 1e-9 * big,
            ("point %d: dL/d%s %.17g against %.17g (largest %g)"):format(point, free[k], ga[k], gb[k], big))
        end
      end
    end)
  end
end)
