-- method = "auto" (the default): ERK on a non-stiff model, BDF once ERK's
-- stability test finds a stiff one; the results are those of the method
-- that ran, which the stats name.
local H = require("helpers")
local salta = require("salta")

-- x' = -k (x - cos t), y' = x: a relaxation onto cos t, stiff for k = 1000
-- over [0, 10] (at rtol 1e-6 ERK's steps are held at h k = 3 by stability
-- alone: 3436 of them, against BDF's 169). At rtol 1e-8 and tighter ERK's
-- error test holds h k lower, where the stability test does not see it:
-- auto then stays with ERK (right, and slower).
local function relaxation(k)
  return salta.dae{ name = "relax", states = { { "x", 1 }, { "y", 0 } }, params = { { "k", k }, { "a", 1 } },
    f = function(t, x, z, p) return { -p.k * (x.x - p.a * salta.cos(t)), x.x } end }
end

-- Its closed form: x = a (k^2 cos t + k sin t) / (k^2 + 1) + C e^(-k t).
local function relaxation_x(k, a, t)
  local c = 1 - a * k * k / (k * k + 1)
  return a * (k * k * math.cos(t) + k * math.sin(t)) / (k * k + 1) + c * math.exp(-k * t)
end

describe("method = 'auto'", function()
  it("runs ERK on a non-stiff model, with ERK's results", function()
    local m = H.model("bouncing_balls", { N = 3 })
    local auto, erk = m:simulate{ tf = 1.9 }, m:simulate{ tf = 1.9, method = "erk" }
    assert.are.equal("erk", auto:stats().method)
    assert.is_false(auto:stats().stiff_restart)
    assert.are.same(erk.y.y1, auto.y.y1)
    local cauer = H.model("cauer")
    assert.are.equal("erk", cauer:simulate{ tf = 20 }:stats().method)
  end)

  it("restarts a stiff model with BDF, whose results it gives, and keeps BDF", function()
    local m = relaxation(1000)
    local times = H.uniform(10, 50)
    local auto = m:simulate{ tf = 10, times = times }   -- rtol 1e-6, atol 1e-8
    local st = auto:stats()
    assert.are.equal("bdf", st.method)
    assert.is_true(st.stiff_restart)
    local bdf = m:simulate{ tf = 10, times = times, method = "bdf" }
    assert.are.same(bdf.y.x, auto.y.x)
    for i, t in ipairs(times) do
      assert(math.abs(auto.y.x[i] - relaxation_x(1000, 1, t)) <= 1e-5, ("x(%g) = %.12g"):format(t, auto.y.x[i]))
    end
  end)

  it("lets a loss keep BDF after its first run found the model stiff, with a right gradient", function()
    local m = relaxation(1000)
    local times = H.uniform(10, 40)
    local data = { y = {} }
    for i, t in ipairs(times) do data.y[i] = math.sin(t) * 1.1 end
    local L = salta.lsq{ model = m, times = times, data = data, free = { "k", "a" } }   -- rtol 1e-6
    local p = { 900, 1.05 }
    local g = L:grad(p)
    local st = L:stats()
    assert.are.equal("bdf", st.method)
    assert.is_true(st.stiff_restart)
    L:grad(p)
    assert.is_false(L:stats().stiff_restart)   -- kept: no ERK attempt on the second run
    assert.are.equal("bdf", L:stats().method)
    local tight = salta.lsq{ model = m, times = times, data = data, free = { "k", "a" }, rtol = 1e-12, atol = 1e-14,
      method = "bdf" }
    local fd = tight:grad(p, { method = "fd" })
    for k, n in ipairs({ "k", "a" }) do
      local err = math.abs(g[k] - fd[k])
      assert(err <= 1e-3 * math.abs(fd[k]) or err <= 1e-9,   -- rtol 1e-6 against a tight reference
        ("dL/d%s = %.12g (auto), %.12g by differences"):format(n, g[k], fd[k]))
    end
  end)

  it("is named in the option's errors with the other choices", function()
    local m = relaxation(1)
    H.has(H.err_of(m.simulate, m, { tf = 1, method = "rk45" }), "option 'method' must be one of \"bdf\", \"erk\", \"auto\"")
  end)
end)
