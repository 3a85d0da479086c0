-- Derived values (salta_kernel.h: np_derived, derive): the kernels read
-- the subexpressions of the parameters alone from p[np ..], computed once
-- per parameter vector, and divide by one as a product with its derived
-- reciprocal. Against the same model compiled without them
-- (codegen.DERIVE = false): every function and Jacobian within rounding,
-- at the nominal parameters and at others; and a loss evaluated at one
-- point and then at another gives, by every route, what it gives at the
-- second alone (nothing derived is kept from the first).
local H = require("helpers")
local salta = require("salta")
local codegen = require("salta.codegen")

local function without(make) return H.with_field(codegen, "DERIVE", false, make) end

local MODELS = {
  { "cauer", {} }, { "spring_latch", {} }, { "rectifier", {} }, { "stiff_relay", {} }, { "pendulum", {} },
  { "thermostat", {} }, { "dcmotor", {} }, { "bouncing_balls", { N = 3 } }, { "cauer_ladder", { N = 4 } },
}

-- A point of m: its start, t = 0.3, and the parameters scaled by s.
local function point(m, s)
  local x, z, p = {}, {}, {}
  for k, n in ipairs(m.states) do x[k] = m.x0[n] + 0.1 * k end
  for k, n in ipairs(m.algebraics) do z[k] = (m.z0 and m.z0[n] or 0) + 0.05 * k end
  for k, n in ipairs(m.params) do p[k] = m.p0[n] * (1 + s * ((k % 3) - 1) / 7) end
  return 0.3, x, z, p
end

local function close(a, b, what)
  assert(math.abs(a - b) <= 1e-12 * math.max(1, math.abs(a), math.abs(b)) or (a ~= a and b ~= b),
    ("%s: %.17g against %.17g"):format(what, a, b))
end

describe("derived parameter values", function()
  it("are generated for the Cauer's parameter subexpressions, and not without DERIVE", function()
    local m = dofile("models/cauer.lua")()
    local with = codegen.generate(m.symbolic, "", "def")
    assert.truthy(with:find(".derive = k_derive", 1, true))
    assert.is_true(m.core:info().np_derived > 0)
    local plain = without(function() return codegen.generate(m.symbolic, "", "def") end)
    assert.is_nil(plain:find("k_derive", 1, true))
    assert.is_nil(plain:find("p[35]", 1, true))   -- the Cauer has 35 parameters
    assert.are.equal(0, without(function() return dofile("models/cauer.lua")() end).core:info().np_derived)
  end)

  for _, c in ipairs(MODELS) do
    it("leave every kernel's value within rounding: " .. c[1], function()
      local file = "models/" .. c[1] .. ".lua"
      local a = dofile(file)(c[2])
      local b = without(function() return dofile(file)(c[2]) end)
      for _, s in ipairs({ 0, 1 }) do
        local t, x, z, p = point(a, s)
        for _, fn in ipairs({ "f", "g", "h", "e" }) do
          local va, vb = a:eval(fn, t, x, z, p), b:eval(fn, t, x, z, p)
          assert.are.equal(#vb, #va)
          for i = 1, #va do close(va[i], vb[i], ("%s[%d] at scale %d"):format(fn, i, s)) end
          for _, wrt in ipairs({ "x", "z", "p", "t" }) do
            local Ja, Jb = a:jacobian(fn, wrt, t, x, z, p), b:jacobian(fn, wrt, t, x, z, p)
            for i = 1, #Ja do
              for j = 1, #Ja[i] do close(Ja[i][j], Jb[i][j], ("d%s[%d]/d%s[%d]"):format(fn, i, wrt, j)) end
            end
          end
        end
      end
    end)
  end

  it("are derived again for each evaluation's parameters, by every route", function()
    local m = dofile("models/cauer.lua")()
    local free = { "R1_R", "C3_C", "L1_L" }
    local times = H.uniform(20, 25)
    local tr = m:simulate{ tf = 20, times = times, rtol = 1e-10, atol = 1e-10 }
    local data = { C1_v = {}, L2_i = {} }
    for n, d in pairs(data) do for i, v in ipairs(tr.y[n]) do d[i] = v * 1.01 + 0.01 end end
    local function loss() return salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-8, tf = 20 } end
    local p1, p2 = { 1, 1.682, 1.304 }, { 1.2, 1.5, 1.1 }
    for _, method in ipairs({ "sens", "adjoint", "adjoint_cont", "fd" }) do
      local L, fresh = loss(), loss()
      L:grad(p1, { method = method })
      local v, g = L:value(p2), L:grad(p2, { method = method })
      local v0, g0 = fresh:value(p2), fresh:grad(p2, { method = method })
      assert.are.equal(v0, v, method .. ": the loss")
      for k = 1, #free do assert.are.equal(g0[k], g[k], ("%s: dL/d%s"):format(method, free[k])) end
    end
  end)
end)
