-- The continuous adjoint (method = "adjoint_cont") at rtol 1e-8 against the
-- forward sensitivities and against Richardson differences of a twin at
-- rtol 1e-12: within 1e-6 of the largest component, on every shipped model
-- and on the truth fuzzer's families (event groups, cascades, terminal
-- events, inputs read at t - d, starts from the parameters, index 2, time
-- schedules, torn loops). The sensitivities are taken at rtol 1e-10: at
-- 1e-8 their own error reaches 3.2e-6 of the largest component (the
-- thermostat; the spring latch 2.6e-6), the adjoint's 3.1e-7. Both of
-- its backward solvers: Dormand-Prince after a run by ERK (the default
-- run of these models), IDAS after a run by BDF. And the route chooser:
-- "auto" takes sens below core.route_crossover free parameters and the
-- continuous adjoint from there on.
local H = require("helpers")
local salta = require("salta")

-- g within tol of ref, relative to ref's largest component
local function near(label, g, ref, tol)
  local big = 0
  for k = 1, #ref do big = math.max(big, math.abs(ref[k])) end
  for k = 1, #ref do
    assert(math.abs(g[k] - ref[k]) <= tol * big, ("%s: component %d = %.12g, reference %.12g (largest %.3g)"):format(
      label, k, g[k], ref[k], big))
  end
end

-- g against sens (tight) and the differences (with their error estimate)
local function agree(label, g, sens, fd, fd_err, tol)
  local big = 0
  tol = tol or 1e-6
  for k = 1, #sens do big = math.max(big, math.abs(sens[k])) end
  for k = 1, #sens do
    assert(math.abs(g[k] - sens[k]) <= tol * big,
      ("%s: component %d = %.12g by the continuous adjoint, %.12g by sens (largest %.3g)"):format(label, k, g[k],
        sens[k], big))
    assert(math.abs(g[k] - fd[k]) <= tol * big + 10 * fd_err[k],
      ("%s: component %d = %.12g by the continuous adjoint, %.12g by differences (error %.2g, largest %.3g)"):format(
        label, k, g[k], fd[k], fd_err[k], big))
  end
end

-- (the references from ref_loss, L's own by default; within tol of the
-- largest component, 1e-6 by default)
local function check(label, L, p, ref_loss, tol)
  local tight = (ref_loss or L):twin({ rtol = 1e-10, atol = 1e-12 })
  local ref = (ref_loss or L):twin({ rtol = 1e-12, atol = 1e-14 })
  local fd, err = ref:fd_grad(p, { error = true })
  agree(label, L:grad(p, { method = "adjoint_cont" }), tight:grad(p, { method = "sens" }), fd, err, tol)
end

-- The stiff relay by ERK runs (its default run is by BDF): its outputs
-- are sampled in a 0.1 ms transient after a switching, where BDF's
-- switching times carry BDF's global error and the transient multiplies
-- it: at rtol 1e-8 BDF's sensitivities are 5.3e-4 of the largest
-- component from the closed form's differences and the adjoint after a
-- BDF run 1.1e-5 (spec/stiff_relay_spec.lua holds every route to the
-- closed form); its BDF runs are pending here. Its differences are no
-- reference either (their own error estimate reaches 4 %): sens is.
local ERK_ONLY = { stiff_relay = true }

-- By each backward solver: the default runs (ERK), and runs by BDF within
-- 2e-6: their event times and states carry BDF's global error, about ten
-- times ERK's at one rtol (the spring latch: 1.13e-6); the references stay
-- the default runs'.
for _, run in ipairs({ { "", nil, 1e-6 }, { ", runs by BDF", "bdf", 2e-6 } }) do
  describe("continuous adjoint on the shipped models at rtol 1e-8" .. run[1], function()
    for _, c in ipairs(H.GRADIENT_CASES) do
      local erk_only = ERK_ONLY[c[1]]
      local case = (erk_only and run[2]) and pending or it
      case(c[1] .. (erk_only and not run[2] and ", by ERK" or ""), function()
        local L = H.gradient_case_loss(c, 1e-8, 1e-10)
        if erk_only then L = L:twin({ method = "erk" }) end
        local p = {}
        for k = 1, #L.free do p[k] = L:nominal(k) end
        check(c[1], run[2] and L:twin({ method = run[2] }) or L, p, L, run[3])
      end)
    end
  end)
end

-- Seeds of spec/fuzz/models.lua and the constructs they hold (the spec
-- fails when the generator no longer builds them: pick seeds again).
local FAMILIES = {
  { 1, "u(t - d)" }, { 3, "terminal on its count" }, { 316, "balls(n=2, offset=0)" }, { 11, "cascade(across)" },
  { 20, "start(p)" }, { 25, "index 2" }, { 107, "cascade(across, terminal" }, { 28, "schedule" },
  { 32, "terminal(time)" }, { 36, "caps(index 2)" },
}

describe("continuous adjoint on the truth fuzzer's families at rtol 1e-8", function()
  local gen = dofile("spec/fuzz/models.lua")
  for _, f in ipairs(FAMILIES) do
    it(("seed %d (%s)"):format(f[1], f[2]), function()
      local d = gen.generate(f[1])
      local what = table.concat(d.constructs, " + ")
      assert(what:find(f[2], 1, true), ("seed %d builds %s now"):format(f[1], what))
      local m = salta.dae(d.spec)
      local free = {}
      for _, c in ipairs(d.free) do
        if #free < 4 and not (m.symbolic.start and c.name:match("^x0%.")) then free[#free + 1] = c.name end
      end
      local outs = { d.outputs[1], d.outputs[#d.outputs] ~= d.outputs[1] and d.outputs[#d.outputs] or nil }
      local tr = m:simulate{ tf = d.tf, times = d.times, rtol = 1e-12, atol = 1e-14 }
      local times, data = {}, {}
      for _, o in ipairs(outs) do data[o] = {} end
      for i, t in ipairs(d.times) do
        if t > 0 and t <= (tr.t_end or d.tf) then
          times[#times + 1] = t
          for _, o in ipairs(outs) do data[o][#times] = tr.y[o][i] * 1.01 + 0.01 end
        end
      end
      local L = salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-8, atol = 1e-10,
        after_end = d.terminal and "drop" or nil }
      local p = {}
      for k = 1, #free do p[k] = L:nominal(k) end
      check(("seed %d [%s]"):format(f[1], what), L, p)
    end)
  end
end)

describe("continuous adjoint on robust losses", function()
  it("follows the robust loss's weights as sens does, and leaves event windows to sens", function()
    local c = H.GRADIENT_CASES[2]   -- the spring latch
    local m = c[2]()
    local times = H.uniform(10, 40)
    local tr = m:simulate{ tf = 10, times = times, rtol = 1e-12, atol = 1e-12 }
    local y = m.outputs[1]
    local d = {}
    for i, v in ipairs(tr.y[y]) do d[i] = v * 1.01 + 0.01 + (i % 7 == 0 and 0.5 or 0) end   -- outliers
    for _, robust in ipairs({ "soft_l1", "huber", "cauchy" }) do
      local L = salta.lsq{ model = m, times = times, data = { [y] = d }, free = { "k", "c", "d" }, rtol = 1e-8,
        atol = 1e-10, robust = robust, robust_scale = 0.05 }
      local p = { L:nominal(1), L:nominal(2), L:nominal(3) }
      local fd, err = L:twin({ rtol = 1e-12, atol = 1e-14 }):fd_grad(p, { error = true })
      local vs = L:value(p)
      local vc, g = L:value_and_grad(p, { method = "adjoint_cont" })
      assert.is_near(vs, vc, 1e-6 * vs)
      agree(robust, g, L:twin({ rtol = 1e-10, atol = 1e-12 }):grad(p, { method = "sens" }), fd, err)
    end
    local W = salta.lsq{ model = m, times = times, data = { [y] = d }, free = { "k", "c", "d" }, rtol = 1e-8,
      event_window = true }
    assert.are.equal("sens", W:route())
    local ok, e = pcall(W.grad, W, { 4, 0.1, 0.1 }, { method = "adjoint_cont" })
    assert.is_false(ok)
    assert.truthy(tostring(e):find("does not follow event windows", 1, true))
  end)
end)

-- A datum at t0, one at an event's instant (the first of the segment after
-- it) and one at the end, through an algebraic: y = z = 2 x, x' = -a x,
-- x(0) = x0, x -> c x at t = 1, so y = 2 x0 e^(-a t) before 1 and
-- 2 c x0 e^(-a t) from 1 on. Against the closed form's gradient, on runs by
-- ERK and by BDF (each backward solver).
describe("continuous adjoint with data at t0, at an event and at the end", function()
  local times = { 0, 0.5, 1, 1.5, 2 }
  local data = { 1.7, 1.1, 0.4, 0.35, 0.2 }
  local m = salta.dae{ name = "decay_kick", states = { { "x", 1 } }, algebraics = { { "z", 2 } },
    params = { { "a", 0.8 }, { "c", 0.3 } },
    f = function(t, x, z, p) return { x = -p.a * x.x } end,
    g = function(t, x, z) return { z.z - 2 * x.x } end,
    h = function(t, x, z) return { y = z.z } end,
    events = { { name = "kick", direction = "up", guard = function(t) return t - 1 end,
      reset = function(t, x, z, p) return { x = p.c * x.x } end } } }
  -- the closed form's loss terms r_k = y(t_k) - d_k and their gradient by (a, c, x0)
  local function closed(a, c, x0)
    local L, g = 0, { 0, 0, 0 }
    for k, t in ipairs(times) do
      local f = t >= 1 and c or 1
      local y = 2 * f * x0 * math.exp(-a * t)
      local r = y - data[k]
      L = L + r * r
      g[1] = g[1] + 2 * r * (-t * y)
      g[2] = g[2] + 2 * r * (t >= 1 and y / c or 0)
      g[3] = g[3] + 2 * r * y / x0
    end
    return L, g
  end
  for _, method in ipairs({ "erk", "bdf" }) do
    it("by " .. method, function()
      local L = salta.lsq{ model = m, times = times, data = { y = data }, free = { "a", "c", "x0.x" }, rtol = 1e-8,
        atol = 1e-10, method = method }
      local p = { 0.8, 0.3, 1 }
      local v, g = L:value_and_grad(p, { method = "adjoint_cont" })
      local Lc, gc = closed(0.8, 0.3, 1)
      local scale = 1 / #times   -- the loss is the mean of the squares
      assert(math.abs(v - scale * Lc) <= 1e-7 * v, ("loss %.12g against the closed form's %.12g"):format(v, scale * Lc))
      for k = 1, 3 do gc[k] = scale * gc[k] end
      near(method .. " against the closed form", g, gc, 1e-6)
    end)
  end
end)

-- The explicit re-run checkpointed every checkpoint_steps steps: each
-- earlier interval is run again from its checkpoint when the backward
-- problem reaches it (or restarts in it), so these runs read other steps
-- than the run that keeps a whole segment, within the re-run's tolerance.
describe("continuous adjoint after a run by ERK, checkpointed", function()
  local function against_whole(L, p, label)
    local whole = L:twin({ checkpoint_steps = 1000000 }):grad(p, { method = "adjoint_cont" })
    for _, K in ipairs({ 1, 4 }) do
      near(("%s, checkpoint_steps = %d against none"):format(label, K),
        L:twin({ checkpoint_steps = K }):grad(p, { method = "adjoint_cont" }), whole, 1e-8)
    end
  end
  local CHECKPOINTED = { cauer = true, spring_latch = true, thermostat = true, ["rc_network N = 5"] = true }
  for _, c in ipairs(H.GRADIENT_CASES) do
    if CHECKPOINTED[c[1]] then
      it(c[1] .. ", with every step and every fourth step a checkpoint", function()
        local L = H.gradient_case_loss(c, 1e-8):twin({ method = "erk" })
        local p = {}
        for k = 1, #L.free do p[k] = L:nominal(k) end
        against_whole(L, p, c[1])
      end)
    end
  end
  it("restarts at data long before the segment's end (the adjoint zero until then): the closed form", function()
    local m = salta.dae{ name = "decay", states = { { "x", 1 } }, params = { { "a", 0.8 } },
      f = function(t, x, z, p) return { x = -p.a * x.x } end }
    local times, data = { 0.5, 1 }, { 0.5, 0.3 }
    local L = salta.lsq{ model = m, times = times, data = { x = data }, free = { "a", "x0.x" }, tf = 20, rtol = 1e-8,
      atol = 1e-10, method = "erk", checkpoint_steps = 2 }
    local a, x0, gc = 0.8, 1, { 0, 0 }
    for k, t in ipairs(times) do
      local y = x0 * math.exp(-a * t)
      gc[1] = gc[1] + (y - data[k]) * (-t * y)   -- the loss is the mean of the squares
      gc[2] = gc[2] + (y - data[k]) * y / x0
    end
    near("against the closed form", L:grad({ a, x0 }, { method = "adjoint_cont" }), gc, 1e-6)
  end)
end)

-- The bench's case where the discrete adjoint's trapezoid does not reach
-- a crossing the integrator found (spec/adjoint_spec.lua: bus 17 barely
-- switches): the continuous adjoint follows the integrator's run.
describe("continuous adjoint where the discrete adjoint fails", function()
  it("the RC network of 20 buses at rtol 1e-8, against sens at rtol 1e-11", function()
    local L, p = H.rc20_loss(1e-8)
    near("against sens at rtol 1e-11", L:grad(p, { method = "adjoint_cont" }),
      L:twin({ rtol = 1e-11, atol = 1e-13 }):grad(p, { method = "sens" }), 1e-6)
  end)
end)

describe("the route chooser", function()
  it("takes sens below core.route_crossover free parameters and the continuous adjoint from there", function()
    local n = require("salta.core").route_crossover
    local m = H.model("cauer_ladder", { N = n, local_params = true })
    local times = H.uniform(5, 10)
    local tr = m:simulate{ tf = 5, times = times }
    local function loss(nfree, method)
      local free = {}
      for k = 1, nfree do free[k] = m.params[3 + k] end
      return salta.lsq{ model = m, times = times, data = { vN = tr.y.vN }, free = free, rtol = 1e-8, atol = 1e-10,
        method = method }
    end
    local below, above = loss(n - 1), loss(n)
    assert.are.equal("sens", below:route())
    assert.are.equal("adjoint_cont", above:route())
    assert.are.equal("sens", loss(n - 1, "bdf"):route())
    assert.are.equal("adjoint_cont", loss(n, "bdf"):route())
    -- the default gradient is the chosen route's
    local p = {}
    for k = 1, n do p[k] = 0.5 * (1 + 0.01 * (k % 7)) end
    local g, gc = above:grad(p), above:grad(p, { method = "adjoint_cont" })
    for k = 1, n do assert.are.equal(gc[k], g[k]) end
    local q = { table.unpack(p, 1, n - 1) }
    local gb, gs = below:grad(q), below:grad(q, { method = "sens" })
    for k = 1, n - 1 do assert.are.equal(gs[k], gb[k]) end
    assert.are.equal("adjoint_cont", above:route())   -- 10 targets: fewer than its run's steps
  end)

  it("raises the crossover by the targets per step of the last run", function()
    local n = require("salta.core").route_crossover
    local m = H.model("cauer_ladder", { N = n, local_params = true })
    local times = H.uniform(5, 2000)
    local tr = m:simulate{ tf = 5, times = times }
    local free, p = {}, {}
    for k = 1, n do free[k], p[k] = m.params[3 + k], 0.5 * (1 + 0.01 * (k % 7)) end
    local L = salta.lsq{ model = m, times = times, data = { vN = tr.y.vN }, free = free, rtol = 1e-8, atol = 1e-10 }
    assert.are.equal("adjoint_cont", L:route())   -- no run yet
    local g = L:grad(p)
    local steps = L:stats().steps
    assert.is_true(#times > 2 * steps, ("%d targets, %d steps"):format(#times, steps))
    assert.are.equal("sens", L:route())
    -- and the gradient the next evaluation takes is the sensitivities'
    local g2, gs = L:grad(p), L:grad(p, { method = "sens" })
    for k = 1, n do assert.are.equal(gs[k], g2[k]) end
    assert.are.equal(n, #g)
  end)

  it("refuses an unknown route with the list of routes", function()
    local L = H.gradient_case_loss(H.GRADIENT_CASES[2], 1e-8)
    local ok, err = pcall(L.grad, L, { 1, 1, 1 }, { method = "adjoint_continuous" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find('"auto", "sens", "adjoint_cont", "adjoint", "fd"', 1, true))
  end)
end)
