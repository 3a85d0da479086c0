-- Profile likelihoods that are right: steps that follow the standard
-- errors, ends by bisection, any level, jumps of chi^2 reported with each
-- point's re-fit status.
local salta = require("salta")
local stats = require("salta.stats")
local H = require("spec.helpers")

describe("a profile likelihood", function()
  it("on a linear model is the Wald interval exactly, at any level, sigma known or estimated", function()
    -- y = a + b t: chi^2 is quadratic, so the profile interval is est -+
    -- sqrt(q) se with sigma known (q the chi^2_1 quantile) and est -+ t se
    -- with sigma estimated (t with m - 2 dof)
    local m = salta.dae{ name = "line", states = { { "s", 0 } }, params = { { "a", 1 }, { "b", 0.5 } },
      f = function() return { 1 } end, h = function(t, x, z, p) return { y = p.a + p.b * x.s } end }
    local T = H.uniform(2, 20)
    local g, y = salta.gaussian(7), {}
    for i, t in ipairs(T) do y[i] = 1 + 0.5 * t + 0.1 * g() end
    for _, sigma in ipairs({ 0.1, false }) do
      local L = salta.lsq{ model = m, times = T, data = { y = y }, free = { "a", "b" }, sigma = sigma or nil,
        rtol = 1e-12, atol = 1e-12 }
      local r = salta.fit{ loss = L, start = { 0.5, 1 }, print_every = 0 }
      local se = r:std_errors().a
      for _, level in ipairs({ 0.5, 0.9, 0.99 }) do
        local c = sigma and math.sqrt(stats.chi2_quantile(level, 1)) or stats.t_quantile((1 + level) / 2, 18)
        local pr = r:profile("a", { level = level, xtol = 1e-7 })
        assert.is_true(pr.bounded[1] and pr.bounded[2])
        assert.is_near(r.params.a - c * se, pr.interval[1], 1e-5 * se)
        assert.is_near(r.params.a + c * se, pr.interval[2], 1e-5 * se)
        local ci = r:confidence(level)
        assert.is_near(r.params.a + c * se, ci.a[2], 1e-9 * se)
      end
    end
  end)

  local m = salta.dae{ name = "decay_profile", states = { { "x", 1 } }, params = { { "k", 0.8 }, { "b", 0.3 } },
    f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
  local T = H.uniform(4, 40)
  local tr = m:simulate{ tf = 4, times = T, rtol = 1e-12, atol = 1e-14 }

  it("on a smooth nonlinear loss agrees with Wald within 20 % and holds the truth", function()
    for seed = 1, 4 do
      local g, x = salta.gaussian(seed), {}
      for i, v in ipairs(tr.y.x) do x[i] = v + 0.05 * g() end
      local L = salta.lsq{ model = m, times = T, data = { x = x }, free = { "k", "b" }, sigma = 0.05, rtol = 1e-10,
        atol = 1e-12 }
      local r = salta.fit{ loss = L, start = { 0.6, 0.5 }, print_every = 0 }
      local ci = r:confidence(0.95)
      for _, name in ipairs({ "k", "b" }) do
        local pr = r:profile(name)
        local w = ci[name][2] - ci[name][1]
        assert.is_near(ci[name][1], pr.interval[1], 0.2 * w / 2)
        assert.is_near(ci[name][2], pr.interval[2], 0.2 * w / 2)
        local truth = m.p0[name]
        assert(pr.interval[1] < truth and truth < pr.interval[2], ("seed %d: %s = %g outside [%g, %g]"):format(seed,
          name, truth, pr.interval[1], pr.interval[2]))
        assert.are.equal(0, #pr.jumps)
        for _, pt in ipairs(pr.points) do
          assert.is_boolean(pt.converged)
          assert.is_string(pt.status)
        end
        -- the ends are on the threshold, not interpolated over a coarse grid
        assert.is_true(#pr.points >= 10)
      end
    end
  end)

  it("reports jumps of chi^2 where an output jumps at an event, and an end at one", function()
    -- a kick at t = tk: moving tk across a sample moves that sample by 50 sigma
    local kick = salta.dae{ name = "kick_profile", states = { { "x", 1 } }, params = { { "k", 0.8 }, { "tk", 2.003 } },
      f = function(t, x, z, p) return { -p.k * x.x } end,
      events = { { name = "kick", direction = "up", guard = function(t, x, z, p) return t - p.tk end,
        reset = function(t, x) return { x = x.x + 0.5 } end } } }
    local T4 = H.uniform(4, 400)
    local ktr = kick:simulate{ tf = 4, times = T4, rtol = 1e-12, atol = 1e-14 }
    local g, x = salta.gaussian(4), {}
    for i, v in ipairs(ktr.y.x) do x[i] = v + 0.01 * g() end
    local L = salta.lsq{ model = kick, times = T4, data = { x = x }, free = { "k", "tk" }, sigma = 0.01, rtol = 1e-10,
      atol = 1e-12 }
    local r = salta.fit{ loss = L, start = { 0.7, 2.003 }, print_every = 0 }
    local pr = r:profile("tk")
    assert.is_true(#pr.jumps >= 1)
    for _, j in ipairs(pr.jumps) do assert.is_true(j.rise > 100) end
    assert.is_true(pr.end_at_jump[1] or pr.end_at_jump[2])
    H.has(pr:table(), "warning: chi2 jumps by", "at a jump of chi2")
  end)

  it("plots over the interval's region, not its outliers", function()
    local g, x = salta.gaussian(2), {}
    for i, v in ipairs(tr.y.x) do x[i] = v + 0.05 * g() end
    local L = salta.lsq{ model = m, times = T, data = { x = x }, free = { "k", "b" }, sigma = 0.05 }
    local r = salta.fit{ loss = L, start = { 0.6, 0.5 }, print_every = 0 }
    local pr = r:profile("b", { span = 1, points = 7 })   -- a coarse grid far past the interval
    local path = os.tmpname() .. ".png"
    pr:plot(path)
    os.remove(path)
    local lo, hi = require("salta.plot").last_script:match("set yrange %[([^:]+):([^%]]+)%]")
    local height = pr.threshold - pr.chi2_min
    assert.is_near(pr.chi2_min + 3 * height, tonumber(hi), 1e-9 * height)
    assert.is_true(tonumber(lo) < pr.chi2_min)
  end)
end)
