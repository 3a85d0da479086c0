-- The event semantics every route shares: an event group's resets read the
-- left limits (checked against closed forms and central differences of
-- the loss for every parameter, by sensitivities, blended and adjoint), two
-- resets of one state at one instant are an error, a group that splits
-- changes the blended loss continuously, event location at the cost of the
-- event, and tolerances that scale with |t|.
local H = require("helpers")
local salta = require("salta")
local exact = dofile("spec/support/balls_exact.lua")

local TIGHT = { rtol = 1e-12, atol = 1e-14 }

-- Two balls mirrored about 0: x1 falls from 1 onto a floor at 0, x2 rises
-- from -1 (gravity up, tilted by a factor 1 + tilt) onto a ceiling at 0, so
-- with tilt = 0 their events fire together whatever g. Each reset reads the
-- velocity the other one resets; at the left limits v1 + v2 = 0, so eta
-- cannot act at the first group.
local function mirror(extra)
  local spec = {
    name = "mirror",
    states = { { "x1", 1 }, { "v1", 0 }, { "x2", -1 }, { "v2", 0 } },
    params = { { "g", 9.81 }, { "tilt", 0 }, { "e", 0.8 }, { "k", 0.3 }, { "eta", 0.4 } },
    f = function(t, x, z, p) return { x.v1, -p.g, x.v2, p.g * (1 + p.tilt) } end,
    events = {
      { name = "floor", direction = "down", guard = function(t, x) return x.x1 end,
        reset = function(t, x, z, p) return { v1 = -p.e * x.v1 + p.k * x.v2 } end },
      { name = "ceiling", direction = "up", guard = function(t, x) return x.x2 end,
        reset = function(t, x, z, p) return { v2 = -p.e * x.v2 + p.eta * (x.v1 + x.v2) } end },
    },
  }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return salta.dae(spec)
end

local uniform = H.uniform

-- A loss on the mirror's four states, data from the nominal parameters.
local function mirror_loss(m, tf, free, opts)
  local times = uniform(tf, 60)
  local tr = m:simulate{ tf = tf, times = times, rtol = TIGHT.rtol, atol = TIGHT.atol }
  local spec = { model = m, times = times, free = free, rtol = TIGHT.rtol, atol = TIGHT.atol,
    data = { x1 = tr.y.x1, v1 = tr.y.v1, x2 = tr.y.x2, v2 = tr.y.v2 } }
  for k, v in pairs(opts or {}) do spec[k] = v end
  return salta.lsq(spec)
end

-- Every component against central differences (with one Richardson step)
-- of the same loss: within rel relative, or abs absolute near zero.
local function check_fd(label, L, p, g, fd_opts, rel, abs)
  local fd = L:grad(p, fd_opts or { method = "fd" })
  for k, n in ipairs(L.free) do
    local err = math.abs(g[k] - fd[k])
    assert(err <= (rel or 1e-6) * math.abs(fd[k]) or err <= (abs or 1e-9),
      ("%s: dL/d%s = %.12g, by differences %.12g (relative error %.2e)"):format(label, n, g[k], fd[k],
        err / math.abs(fd[k])))
  end
  return fd
end

describe("an event group", function()
  local m = mirror()
  local tau = math.sqrt(2 / 9.81)

  it("applies every reset to the left limits (closed form)", function()
    local tr = m:simulate{ tf = 0.6, rtol = 1e-10, atol = 1e-12 }
    local ev = tr:events()
    assert.are.equal(2, #ev)
    assert.are.equal(2, ev[1].group_size)
    for _, e in ipairs(ev) do assert.is_near(tau, e.t, 1e-12) end
    local gt = 9.81 * tau
    -- v1+ = -e v1- + k v2-, v2+ = -e v2- + eta (v1- + v2-), with v1- = -g tau, v2- = g tau
    assert.is_near((0.8 + 0.3) * gt, ev[2].x_plus.v1, 1e-9)
    assert.is_near(-0.8 * gt, ev[2].x_plus.v2, 1e-9)
  end)

  for _, method in ipairs({ "bdf", "erk" }) do
    it(("has sensitivities through its composite reset: eta cannot act before the next events (%s)"):format(method),
      function()
        local L = mirror_loss(m, 0.6, { "g", "e", "k", "eta" }, { method = method })
        local p = { 9.7, 0.78, 0.32, 0.45 }
        local g = L:grad(p)
        local fd = check_fd("mirror to 0.6, " .. method, L, p, g)
        -- the loss does not depend on eta here: both routes say so
        assert.is_true(math.abs(g[4]) <= 1e-12 * math.abs(g[1]) and math.abs(fd[4]) <= 1e-9 * math.abs(g[1]),
          ("dL/deta = %.3g by sensitivities, %.3g by differences"):format(g[4], fd[4]))
      end)

    it(("differentiates through later events that read the other's reset (%s)"):format(method), function()
      local L = mirror_loss(m, 2.0, { "g", "e", "k", "eta" }, { method = method })
      local p = { 9.7, 0.78, 0.32, 0.45 }
      local g = L:grad(p)
      check_fd("mirror to 2, " .. method, L, p, g)
      assert.is_true(math.abs(g[4]) > 1e-6, "eta acts at the separate events after the group")
    end)
  end

  it("differentiates the blended loss through it (beta = 50)", function()
    local L = mirror_loss(m, 2.0, { "g", "e", "k", "eta" }, { blend = 50 })
    local p = { 9.7, 0.78, 0.32, 0.45 }
    check_fd("mirror blended", L, p, L:grad(p))
  end)

  it("has the adjoint's event block of the composite reset: exact against differences of the discrete loss", function()
    local L = mirror_loss(m, 2.0, { "g", "e", "k", "eta" }, { rtol = 1e-10, atol = 1e-12 })
    local p = { 9.7, 0.78, 0.32, 0.45 }
    local ga = L:grad(p, { method = "adjoint", mesh = 20 })
    check_fd("mirror adjoint", L, p, ga, { method = "fd", of = { method = "adjoint", mesh = 20 }, h = 1e-5 })
    -- the trapezoid is exact on ballistic flight: the discrete loss is the loss
    local gs = L:grad(p)
    for k = 1, 4 do assert.is_near(gs[k], ga[k], 1e-8 * math.abs(gs[1])) end
  end)

  it("refuses two resets of one state at one instant, naming both events", function()
    local clash = salta.dae{ name = "clash", states = { { "x", 1 }, { "v", -1 } },
      f = function(t, x) return { x.v, 0 * x.v } end,
      events = {
        { name = "first", direction = "down", guard = function(t, x) return x.x end,
          reset = function(t, x) return { v = 1 } end },
        { name = "second", direction = "down", guard = function(t, x) return 2 * x.x end,
          reset = function(t, x) return { v = 2 } end } } }
    local ok, err = pcall(clash.simulate, clash, { tf = 2 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("model 'clash': events 'first' and 'second' fire together at t = 1", 1, true),
      tostring(err))
    assert.truthy(tostring(err):find("both reset state 'v'", 1, true), tostring(err))
  end)
end)

describe("a group that splits under a parameter change", function()
  -- independent resets (k = eta = 0): the plain loss is continuous where
  -- the ceiling's gravity is tilted away from the floor's and the two
  -- events part
  local m = mirror()
  local function at(L, d) return L:value({ d }) end
  for _, beta in ipairs({ 0, 20 }) do
    it(("changes the %s loss continuously"):format(beta > 0 and "blended" or "plain"), function()
      local times = uniform(2.0, 200)
      local tr = m:simulate{ tf = 2, times = times, params = { g = 9.7, k = 0, eta = 0 }, rtol = 1e-12, atol = 1e-14 }
      local L = salta.lsq{ model = m, times = times, free = { "tilt" }, params = { k = 0, eta = 0 }, blend = beta,
        data = { x1 = tr.y.x1, v1 = tr.y.v1, x2 = tr.y.x2, v2 = tr.y.v2 }, rtol = 1e-12, atol = 1e-14 }
      local L0 = at(L, 0)
      local d1 = math.abs(at(L, 1e-4) - L0) + math.abs(at(L, -1e-4) - L0)
      for _, d in ipairs({ 1e-6, 1e-8 }) do
        local dd = math.abs(at(L, d) - L0) + math.abs(at(L, -d) - L0)
        -- Lipschitz: the change shrinks with the step, no jump as the group parts
        assert(dd <= 10 * d1 * d / 1e-4 + 1e-12 * L0,
          ("beta %g: L moves by %.3g at a step of %g, by %.3g at 1e-4"):format(beta, dd, d, d1))
      end
    end)
  end
end)

describe("event location", function()
  it("costs a few guard evaluations per event: balls N = 15 with erk, the closed form's events", function()
    local m = H.model("bouncing_balls", { N = 15 })
    local tr = m:simulate{ tf = 1.9, rtol = 1e-6, atol = 1e-8, method = "erk" }
    local ev = tr:events()
    local x0 = {}
    for i, n in ipairs(m.states) do x0[i] = m.x0[n] end
    local p = {}
    for _, n in ipairs(m.params) do p[n] = m.p0[n] end
    local ref = exact.simulate(15, x0, p, 1.9)
    assert.are.equal(#ref, #ev)
    for k, e in ipairs(ev) do
      assert(math.abs(e.t - ref[k].t) <= 1e-12, ("event %d at %.17g, closed form %.17g"):format(k, e.t, ref[k].t))
      assert.are.equal(ref[k].index, e.index - 1)
    end
    -- 5 samples and an end rate per step, halving where a guard could hide a crossing (the
    -- resolution bound of doc/guide.md), the refinement: 2223 for 43 events when written
    assert(tr:stats().guard_evals <= 2500, ("%d guard evaluations for %d events"):format(tr:stats().guard_evals, #ev))
  end)
end)

describe("tolerances that scale with |t|", function()
  local function ball(g)
    return salta.dae{ name = "ball", states = { { "h", 1.0 }, { "v", 0.0 } }, params = { { "g", g }, { "e", 0.8 } },
      f = function(t, x, z, p) return { x.v, -p.g } end,
      events = { { name = "floor", direction = "down", guard = function(t, x) return x.h end,
        reset = function(t, x, z, p) return { v = -p.e * x.v } end } } }
  end
  for _, method in ipairs({ "erk", "bdf" }) do
    it(("give the events of a run from t0 = 0 when started at t0 = 1e6 (%s)"):format(method), function()
      local m = ball(9.81)
      local ref = m:simulate{ tf = 2, method = method, rtol = 1e-8, atol = 1e-10 }
      local tr = m:simulate{ t0 = 1e6, tf = 1e6 + 2, method = method, rtol = 1e-8, atol = 1e-10 }
      assert.are.equal(#ref:events(), #tr:events())
      for k, e in ipairs(tr:events()) do
        assert(math.abs(e.t - 1e6 - ref:events()[k].t) <= 1e-8, ("bounce %d at %.12f after t0"):format(k, e.t - 1e6))
      end
      assert.is_near(ref.y.h[#ref.t], tr.y.h[#tr.t], 1e-6)
    end)
    it(("give the same bounces and the Zeno limit from t0 = 1e5 (g = 981, %s)"):format(method), function()
      -- the bounces accumulate at t0 + tau (1 + 2 e / (1 - e)) = t0 + 0.406371
      local m = ball(981)
      local zeno = math.sqrt(2 / 981) * (1 + 2 * 0.8 / 0.2)
      local ref = m:simulate{ tf = 0.4, method = method, rtol = 1e-8, atol = 1e-10 }:events()
      local ev = m:simulate{ t0 = 1e5, tf = 1e5 + 0.4, method = method, rtol = 1e-8, atol = 1e-10 }:events()
      assert.are.equal(#ref, #ev)
      for k, e in ipairs(ev) do
        assert(math.abs(e.t - 1e5 - ref[k].t) <= 1e-9, ("bounce %d at %.12f after t0"):format(k, e.t - 1e5))
      end
      for _, t0 in ipairs({ 0, 1e5 }) do
        local ok, err = pcall(m.simulate, m, { t0 = t0, tf = t0 + 2, method = method, rtol = 1e-8, atol = 1e-10 })
        assert.is_false(ok)
        err = tostring(err)
        assert.truthy(err:find("Zeno limit", 1, true), err)
        local at = tonumber(err:match("fired at t = ([%d%.e+-]+)"))
        assert(at and math.abs(at - t0 - zeno) <= 1e-5, err)
      end
    end)
  end
end)

describe("guards reaching zero a few ulps apart", function()
  -- x_k' = 1 + k eps, reset to 0 at 1: each crosses at 1 / (1 + k eps) and
  -- 2 / (1 + k eps); with eps = 1e-12 the crossings are ~1e-12 apart, each
  -- its own group, and none may be lost to the band of the one before
  local N = 20
  local states, events = {}, {}
  for k = 1, N do
    states[k] = { "x" .. k, 0 }
    events[k] = { name = "hit" .. k, direction = "up", guard = function(t, x) return x["x" .. k] - 1 end,
      reset = function() return { ["x" .. k] = 0 } end }
  end
  local m = salta.dae{ name = "near", states = states, params = { { "eps", 1e-12 } },
    f = function(t, x, z, p)
      local d = {}
      for k = 1, N do d[k] = 1 + k * p.eps end
      return d
    end, events = events }
  for _, method in ipairs({ "erk", "bdf" }) do
    it("fires every one of them, in order of their closed-form times (" .. method .. ")", function()
      local tr = m:simulate{ tf = 2.5, method = method }
      local count = {}
      for _, e in ipairs(tr:events()) do
        count[e.name] = (count[e.name] or 0) + 1
        local k = tonumber(e.name:match("%d+"))
        local want = count[e.name] / (1 + k * 1e-12)
        assert.is_true(math.abs(e.t - want) <= 1e-9, ("%s at %.17g, closed form %.17g"):format(e.name, e.t, want))
      end
      for k = 1, N do assert.are.equal(2, count["hit" .. k]) end
    end)
  end
end)
