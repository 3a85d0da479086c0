-- A fit's status is honest: a misfit with sigma known is flagged, a failed
-- horizon stage fails the fit and is named, a stage short of convergence
-- is told, and each optimiser's own stopping reason is kept as it is.
local salta = require("salta")
local H = require("spec.helpers")

local m = salta.dae{ name = "decay_status", states = { { "x", 1 } }, params = { { "k", 0.8 }, { "b", 0.3 } },
  f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
local T = H.uniform(4, 200)
local tr = m:simulate{ tf = 4, times = T, rtol = 1e-12, atol = 1e-14 }
local noisy = {}
local g = salta.gaussian(11)
for i, v in ipairs(tr.y.x) do noisy[i] = v + 0.05 * g() end

local function loss(sigma)
  return salta.lsq{ model = m, times = T, data = { x = noisy }, free = { "k", "b" }, sigma = sigma, rtol = 1e-10,
    atol = 1e-12 }
end

describe("a fit's status", function()
  it("flags a misfit when chi2/dof exceeds its 0.999 quantile with sigma known", function()
    local good = salta.fit{ loss = loss(0.05), start = { 0.6, 0.5 }, print_every = 0 }
    assert.is_true(good.ok, good.status)
    assert.is_false(good.goodness.misfit)
    assert.truthy(good.status:find("^converged: lmder info %d: "), good.status)
    -- sigma claimed 5 times too small: chi2/dof near 25
    local bad = salta.fit{ loss = loss(0.01), start = { 0.6, 0.5 }, print_every = 0 }
    assert.is_true(bad.converged)
    assert.is_false(bad.ok)
    assert.is_true(bad.goodness.reduced_chi2 > 15, bad.goodness.reduced_chi2)
    -- the threshold: the 0.999 quantile of chi2 with 198 dof (mpmath: 265.2309), over 198
    assert.is_near(265.23087419689003 / 198, bad.goodness.misfit_threshold, 1e-10)
    H.has(bad.status, "converged to a misfit: chi2/dof = ", "the 0.999 quantile of chi2/dof for 198 dof")
    assert.truthy(bad:table():find("converged to a misfit", 1, true))
    -- without sigma there is no test: chi2/dof is the residual variance
    local unknown = salta.fit{ loss = loss(nil), start = { 0.6, 0.5 }, print_every = 0 }
    assert.is_nil(unknown.goodness.misfit)
    assert.is_near(0.05 ^ 2, unknown.goodness.reduced_chi2, 0.3 * 0.05 ^ 2)
  end)

  it("fails the fit at a failed horizon stage, naming it", function()
    -- a loss of the interface whose evaluations fail past t = 3 where k > 0.75
    -- (as a model that breaks in part of its parameter space)
    local function fragile(L)
      local w = setmetatable({}, { __index = function(_, key)
        local v = L[key]
        if type(v) ~= "function" then return v end
        return function(_, p, ...)
          if key ~= "window" and type(p) == "table" and L.times[#L.times] > 3 and (p[1] or 0) > 0.75 then
            error("parameter 'k' is inf", 0)
          end
          if key == "window" then return fragile(L:window(p)) end
          return v(L, p, ...)
        end
      end })
      return w
    end
    local r = salta.fit{ loss = fragile(loss(0.05)), start = { 0.6, 0.5 }, horizon = { 1.5, 3.5 }, print_every = 0 }
    assert.is_false(r.converged)
    assert.is_false(r.ok)
    assert.are.equal(2, #r.stages)
    assert.truthy(r.status:find("^stopped: horizon stage 2 of 3 %(t <= 3.5%) failed: stopped: the loss failed at "),
      r.status)
    H.has(r.status, "parameter 'k' is inf")
  end)

  it("tells a stage that ended short of convergence, and keeps L-BFGS-B's own words", function()
    local r = salta.fit{ loss = loss(0.05), start = { 0.6, 0.5 }, method = "lbfgsb", horizon = { 1 }, max_iter = 2,
      print_every = 0 }
    H.has(r.status, "not converged: maximum iterations", "horizon stage 1 of 2 (t <= 1) ended unconverged: "
      .. "maximum iterations")
    local c = salta.fit{ loss = loss(0.05), start = { 0.6, 0.5 }, method = "lbfgsb", print_every = 0 }
    assert.truthy(c.reason:find("^CONVERGENCE: "), c.reason)
    assert.are.equal("converged: " .. c.reason, c.status)
  end)

  it("prints no NaN step in its progress", function()
    local lines = {}
    salta.fit{ loss = loss(0.05), start = { 0.6, 0.5 }, print_every = 1, log = function(l) lines[#lines + 1] = l end }
    for _, l in ipairs(lines) do assert.is_falsy(l:lower():find("nan"), l) end
  end)
end)
