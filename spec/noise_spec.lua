-- Noise models estimated with the parameters (salta.noise), and the
-- goodness of fit every report gives: reduced chi2, AIC, BIC.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

local m = salta.dae{ name = "decay_noise", states = { { "x", 1 } }, params = { { "k", 0.8 }, { "b", 0.3 } },
  f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
local T = H.uniform(4, 400)
local tr = m:simulate{ tf = 4, times = T, rtol = 1e-12, atol = 1e-14 }

-- data with sigma = a + b |y|
local function data(seed, a, b)
  local g, x = salta.gaussian(seed), {}
  for i, v in ipairs(tr.y.x) do x[i] = v + (a + b * math.abs(v)) * g() end
  return x
end

local function lsq(x, sigma)
  return salta.lsq{ model = m, times = T, data = { x = x }, free = { "k", "b" }, sigma = sigma, rtol = 1e-10,
    atol = 1e-12 }
end

-- central differences of N's value in the optimiser's variables (log for log ones)
local function fd(N, p, k)
  local h, up, down = 1e-6, { table.unpack(p) }, { table.unpack(p) }
  if N.log[k] then up[k], down[k] = p[k] * math.exp(h), p[k] * math.exp(-h)
  else up[k], down[k] = p[k] + h, p[k] - h end
  return (N:value(up) - N:value(down)) / (2 * h)
end

describe("a noise model", function()
  it("has the likelihood's exact gradient (against central differences)", function()
    local x = data(5, 0.02, 0.05)
    for _, sigma in ipairs({ { x = "s" }, { x = { a = "sa", b = "sb" } }, { x = { a = 0.01, b = "sb" } } }) do
      local N = salta.noise{ loss = lsq(x), sigma = sigma }
      local p = { 0.7, 0.35 }
      for k = 3, #N.free do p[k] = 0.03 + 0.01 * k end
      local _, g = N:value_and_grad(p)
      for k = 1, #N.free do
        local d = fd(N, p, k)
        assert(math.abs(g[k] - d) <= 1e-6 * math.abs(d) + 1e-6, ("%s: %.10g vs %.10g"):format(N.free[k], g[k], d))
      end
    end
  end)

  it("estimates sigma = a + b |y| within 3 standard errors, by LM and L-BFGS-B", function()
    for seed = 1, 3 do
      local N = salta.noise{ loss = lsq(data(seed, 0.02, 0.05)), sigma = { x = { a = "sa", b = "sb" } },
        start = { sa = 0.1, sb = 0.1 } }
      for _, method in ipairs({ "lm", "lbfgsb" }) do
        local r = salta.fit{ loss = N, method = method, start = { 0.7, 0.35, 0.1, 0.1 }, print_every = 0 }
        assert.is_true(r.converged, r.status)
        local se = r:std_errors()
        for n, truth in pairs({ k = 0.8, b = 0.3, sa = 0.02, sb = 0.05 }) do
          assert(math.abs(r.params[n] - truth) < 3 * se[n], ("seed %d %s: %s = %g +- %g, truth %g"):format(seed, method,
            n, r.params[n], se[n], truth))
        end
      end
    end
  end)

  it("from a far start rejects Levenberg-Marquardt's steps below sigma's floor instead of failing", function()
    -- at { 0.5, 0.5 } the model is far from the data: LM's second trial
    -- step takes sigma below 1e-4 of its start, where rho is 0
    local N = salta.noise{ loss = lsq(data(1, 0.01, 0.05)), sigma = { x = { a = "sa", b = "sb" } },
      start = { sa = 0.05, sb = 0.05 } }
    local r = salta.fit{ loss = N, method = "lm", start = { 0.5, 0.5, 0.05, 0.05 }, print_every = 0 }
    assert.is_true(r.ok, r.status)
    local se = r:std_errors()
    for n, truth in pairs({ k = 0.8, b = 0.3, sa = 0.01, sb = 0.05 }) do
      assert(math.abs(r.params[n] - truth) < 3 * se[n], ("%s = %g +- %g, truth %g"):format(n, r.params[n], se[n], truth))
    end
    -- the loss below the floor is chi2 alone, above the loss at the start
    local below = { 0.5, 0.5, 1e-7, 1e-9 }
    local parts = 0
    for _, v in ipairs(N:residuals(below)) do parts = parts + v * v end
    assert.is_true(N:value(below) > N:value({ 0.5, 0.5, 0.05, 0.05 }))
    assert.are.equal(parts, N:value(below))
    -- a result there has no goodness, so its fit is not ok
    has(err_of(N.goodness, N, below), "sigma of output 'x' is", "below the noise model's floor")
    local verdict = require("salta.fit_status").finish({ lsq = N, x = below, converged = true, status = "converged" })
    assert.is_false(verdict.ok)
    has(verdict.status, "no goodness of fit: salta.noise: sigma of output 'x'")
  end)

  it("with one constant sigma is least squares with sigma^2 = SSR / m, and the same likelihood", function()
    local x = data(8, 0.04, 0)
    local plain = salta.fit{ loss = lsq(x), start = { 0.7, 0.35 }, print_every = 0 }
    local r = salta.fit{ loss = salta.noise{ loss = lsq(x), sigma = { x = "s" } }, start = { 0.7, 0.35, 0.1 },
      print_every = 0 }
    assert.is_near(plain.params.k, r.params.k, 1e-6)
    assert.is_near(plain.params.b, r.params.b, 1e-6)
    local ssr = plain.goodness.chi2
    assert.is_near(math.sqrt(ssr / 400), r.params.s, 1e-7)
    assert.is_near(plain.goodness.neg2_log_likelihood, r.goodness.neg2_log_likelihood, 1e-6)
    assert.is_near(plain.goodness.aic, r.goodness.aic, 1e-6)   -- k = 3 both: sigma counted
  end)

  it("names what is wrong", function()
    local x = data(1, 0.02, 0)
    has(err_of(salta.noise, { loss = lsq(x, 0.1), sigma = { x = "s" } }), "salta.noise: the loss has sigma")
    has(err_of(salta.noise, { loss = lsq(x), sigma = { y = "s" } }), "sigma has no entry for output 'x'")
    has(err_of(salta.noise, { loss = lsq(x), sigma = { x = { a = "k" } } }), "noise parameter 'k' is a free parameter")
    has(err_of(salta.noise, { loss = lsq(x), sigma = { x = { c = 1 } } }), "has key 'c' (a noise model is a + b |y|)")
  end)
end)

describe("the goodness of fit", function()
  local x = data(3, 0.03, 0)

  -- the model at p on the targets, simulated apart from the loss
  local function pred(p)
    return m:simulate{ tf = 4, times = T, params = { k = p[1], b = p[2] }, rtol = 1e-12, atol = 1e-14 }.y.x
  end

  it("gives AIC and BIC by hand with sigma known and estimated", function()
    local r = salta.fit{ loss = lsq(x, 0.03), start = { 0.7, 0.35 }, print_every = 0 }
    local y, chi2 = pred(r.x), 0
    for i = 1, 400 do chi2 = chi2 + ((y[i] - x[i]) / 0.03) ^ 2 end
    local g = r.goodness
    assert.is_near(chi2, g.chi2, 1e-6 * chi2)
    assert.is_near(chi2 / 398, g.reduced_chi2, 1e-6)
    local n2ll = chi2 + 400 * math.log(2 * math.pi * 0.03 ^ 2)
    assert.is_near(n2ll + 2 * 2, g.aic, 1e-5)
    assert.is_near(n2ll + 2 * math.log(400), g.bic, 1e-5)
    assert.is_near(g.aic + 2 * 2 * 3 / (400 - 3), g.aicc, 1e-5)
    local u = salta.fit{ loss = lsq(x), start = { 0.7, 0.35 }, print_every = 0 }
    local yu, ssr = pred(u.x), 0
    for i = 1, 400 do ssr = ssr + (yu[i] - x[i]) ^ 2 end
    local n2u = 400 * (math.log(2 * math.pi * ssr / 400) + 1)
    assert.is_near(ssr / 398, u.goodness.reduced_chi2, 1e-9)
    assert.is_near(n2u + 2 * 3, u.goodness.aic, 1e-5)
    assert.is_near(n2u + 3 * math.log(400), u.goodness.bic, 1e-5)
    has(u:table(), "AIC", "BIC", "s^2 (SSR/dof)")
  end)
end)
