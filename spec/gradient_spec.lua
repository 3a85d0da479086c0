-- Gradients of the least-squares loss by forward sensitivities through the
-- events, against central finite differences (with one Richardson step) of
-- the same loss from independently tightened simulations (rtol 1e-12), for
-- every free parameter on its own: within 1e-6 relative, or 1e-9 absolute
-- for components near zero. The residual Jacobian and the blended loss too.
local H = require("helpers")
local salta = require("salta")

local SENS = { rtol = 1e-12, atol = 1e-14 }
local FD = { rtol = 1e-12, atol = 1e-14 }

local uniform = H.uniform

-- Data from the model at its nominal parameters.
local function truth(m, tf, outputs, n)
  local times = uniform(tf, n or 80)
  local tr = m:simulate{ tf = tf, times = times, rtol = 1e-12, atol = 1e-14 }
  local data = {}
  for _, o in ipairs(outputs) do data[o] = tr.y[o] end
  return times, data
end

local function loss(m, times, data, free, tol, extra)
  local spec = { model = m, times = times, data = data, free = free, rtol = tol.rtol, atol = tol.atol }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return salta.lsq(spec)
end

local function check_grad(label, m, tf, outputs, free, p, extra)
  local times, data = truth(m, tf, outputs)
  local g = loss(m, times, data, free, SENS, extra):grad(p)
  local fd = loss(m, times, data, free, FD, extra):grad(p, { method = "fd" })
  for k, n in ipairs(free) do
    local err = math.abs(g[k] - fd[k])
    assert(err <= 1e-6 * math.abs(fd[k]) or err <= 1e-9,
      ("%s: dL/d%s = %.12g by sensitivities, %.12g by differences (relative error %.2e)"):format(
        label, n, g[k], fd[k], err / math.abs(fd[k])))
  end
  return g
end

local positions = H.positions

describe("loss gradient by forward sensitivities", function()
  it("Cauer ladder: the 7 capacitances and inductances", function()
    local m = H.model("cauer")
    check_grad("cauer", m, 20, { "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" },
      { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" },
      -- the seed paper's biased start: p_true exp(0.1 u), u = numpy's default_rng(0).uniform(-1, 1, 7)
      { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 })
  end)

  -- N3 (12 unknowns) and N7 (forced) on dense LU, N15 on KLU (auto)
  for _, N in ipairs({ 3, 7, 15 }) do
    it(("bouncing balls N = %d: g, e_g, e_b through %s events"):format(N, N == 3 and "4" or "many"), function()
      local m = H.model("bouncing_balls", { N = N })
      -- a start near the truth, so that the event sequence is the same
      check_grad("balls N" .. N, m, 1.9, positions(N), { "g", "e_g", "e_b" }, { 9.7, 0.51, 0.61 },
        N == 7 and { linear_solver = "dense" } or nil)
    end)
  end

  it("spring latch: parameters only in g, only in a guard, only in a reset, and an initial state", function()
    local m = H.model("spring_latch")
    check_grad("spring_latch", m, 6, { "x", "v", "F" },
      { "k", "c", "d", "m", "A", "w", "F_max", "e", "a", "x0.v" },
      { 4.1, 0.11, 0.21, 1.02, 0.52, 1.31, 1.48, 0.71, 0.105, 2.02 })
  end)

  it("a parameter only in h, and a parameter only in a guard with algebraic variables", function()
    local m = salta.dae{ name = "sensor", states = { { "x", 0 }, { "v", 1.5 } }, algebraics = { { "F", 0 } },
      params = { { "k", 3 }, { "gain", 2 }, { "offset", 0.1 }, { "F_max", 1 }, { "e", 0.8 } },
      f = function(t, x, z, p) return { x.v, -z.F } end,
      g = function(t, x, z, p) return { z.F + 0.2 * z.F ^ 3 - p.k * x.x } end,
      h = function(t, x, z, p) return { reading = p.gain * x.x + p.offset, force = z.F } end,
      outputs = { "reading", "force" },
      events = { { name = "stop", direction = "up", guard = function(t, x, z, p) return z.F - p.F_max end,
        reset = function(t, x, z, p) return { v = -p.e * x.v } end } } }
    check_grad("sensor", m, 4, { "reading", "force" }, { "k", "gain", "offset", "F_max", "e" },
      { 3.1, 2.1, 0.12, 0.97, 0.78 })
  end)

  it("log transform gives d/d log p = p d/dp", function()
    local m = H.model("bouncing_balls", { N = 3 })
    local times, data = truth(m, 1.9, positions(3))
    local p = { 9.7, 0.51, 0.61 }
    local g = loss(m, times, data, { "g", "e_g", "e_b" }, SENS):grad(p)
    local gl = loss(m, times, data, { "g", "e_g", "e_b" }, SENS, { transform = "log" }):grad(p)
    for k = 1, 3 do assert.is_near(g[k] * p[k], gl[k], 1e-12 * math.abs(gl[k])) end
    local fdl = loss(m, times, data, { "g", "e_g", "e_b" }, FD, { transform = "log" }):grad(p, { method = "fd" })
    for k = 1, 3 do assert.is_near(fdl[k], gl[k], 1e-6 * math.abs(fdl[k])) end
  end)
end)

describe("loss gradient with the explicit Runge-Kutta integrator", function()
  it("Cauer ladder", function()
    check_grad("cauer erk", H.model("cauer"), 20, { "L2_i", "C3_v", "C1_v" }, { "C1_C", "C3_C", "C5_C", "L2_L" },
      { 1.10177047, 1.53445960, 0.77315497, 0.87710816 }, { method = "erk" })
  end)
  it("bouncing balls N = 15", function()
    check_grad("balls N15 erk", H.model("bouncing_balls", { N = 15 }), 1.9, positions(15),
      { "g", "e_g", "e_b" }, { 9.7, 0.51, 0.61 }, { method = "erk" })
  end)
  it("spring latch (algebraic guard and reset)", function()
    check_grad("spring_latch erk", H.model("spring_latch"), 6, { "x", "v", "F" },
      { "k", "c", "F_max", "e", "a", "x0.v" }, { 4.1, 0.11, 1.48, 0.71, 0.105, 2.02 }, { method = "erk" })
  end)
end)

describe("blended loss (sigmoid across event boundaries)", function()
  it("balls N = 3, beta = 300", function()
    check_grad("balls N3 blended", H.model("bouncing_balls", { N = 3 }), 1.9, positions(3),
      { "g", "e_g", "e_b" }, { 9.7, 0.51, 0.61 }, { blend = 300 })
  end)
  it("Cauer ladder, beta = 150", function()
    check_grad("cauer blended", H.model("cauer"), 20, { "C3_v", "C1_v" }, { "C3_C", "L1_L" },
      { 1.60, 1.35 }, { blend = 150 })
  end)
  it("is the plain loss far from events and differs near them", function()
    local m = H.model("bouncing_balls", { N = 3 })
    local times, data = truth(m, 1.9, positions(3))
    local p = { 9.7, 0.51, 0.61 }
    local plain = loss(m, times, data, { "g", "e_g", "e_b" }, SENS):value(p)
    local blended = loss(m, times, data, { "g", "e_g", "e_b" }, SENS, { blend = 300 }):value(p)
    assert.is_true(math.abs(plain - blended) > 1e-12 and math.abs(plain - blended) < 0.1 * plain)
  end)
end)

describe("residuals and their Jacobian", function()
  it("the loss is the sum of squared residuals and the Jacobian matches differences", function()
    local m = H.model("spring_latch")
    local times, data = truth(m, 4, { "x", "F" }, 30)
    local free = { "k", "F_max", "e" }
    local L = loss(m, times, data, free, SENS)
    local p = { 4.1, 1.48, 0.71 }
    local r = L:residuals(p)
    local sum = 0
    for _, v in ipairs(r) do sum = sum + v * v end
    assert.is_near(L:value(p), sum, 1e-14)
    local J = L:jacobian(p)
    local Lfd = loss(m, times, data, free, FD)
    for k = 1, #free do
      local h = 2e-5 * math.abs(p[k])
      local function at(d)
        local q = { table.unpack(p) }
        q[k] = p[k] + d
        return Lfd:residuals(q)
      end
      local r1p, r1m, r2p, r2m = at(h), at(-h), at(2 * h), at(-2 * h)
      -- central differences with one Richardson step; entries compared
      -- relative to the column's largest entry (1e-6)
      local fd, scale = {}, 0
      for i = 1, #r do
        fd[i] = (4 * (r1p[i] - r1m[i]) / (2 * h) - (r2p[i] - r2m[i]) / (4 * h)) / 3
        scale = math.max(scale, math.abs(fd[i]))
      end
      for i = 1, #r do
        assert(math.abs(J[i][k] - fd[i]) <= 1e-6 * scale,
          ("dr%d/d%s: %.10g vs %.10g (column scale %.3g)"):format(i, free[k], J[i][k], fd[i], scale))
      end
    end
  end)
end)

describe("the gradient of a run by ERK, kept per step", function()
  -- A gradient alone keeps the outputs' derivatives as each step's
  -- interpolant and sums the residuals' weights on its basis; the Jacobian
  -- interpolates them at every target. On one run both give 2 J^T r, to
  -- rounding, on every shipped model, with a missing datum per output and
  -- targets at the start and at events.
  it("is 2 J^T r of the Jacobian's rows, on every shipped model", function()
    for _, c in ipairs(H.GRADIENT_CASES) do
      local m, free, outs = H.gradient_case_parts(c)
      local times = H.uniform(c[3], 40)
      local tr = m:simulate{ tf = c[3], times = times, rtol = 1e-10, atol = 1e-10 }
      for _, e in ipairs(tr:events()) do times[#times + 1] = e.t end   -- a target at each firing
      table.sort(times)
      local data = {}
      tr = m:simulate{ tf = c[3], times = times, rtol = 1e-10, atol = 1e-10 }
      for j, n in ipairs(outs) do
        data[n] = {}
        for i, v in ipairs(tr.y[n]) do data[n][i] = v * 1.01 + 0.01 end
        data[n][5 + j] = 0 / 0
      end
      local L = salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-7, atol = 1e-7,
        tf = c[3], method = "erk" }
      local p = {}
      for k = 1, #free do p[k] = L:nominal(k) * 1.02 end
      local P, x0 = L:point(p)
      local _, g = L.core:eval(P, x0, "g")       -- the gradient alone: kept per step
      local _, r, J = L.core:eval(P, x0, "rj")   -- the same run's residuals and Jacobian
      local big = 0
      for k = 1, #free do
        local jr = 0
        for i = 1, #r do jr = jr + 2 * J[i][k] * r[i] end
        big = math.max(big, math.abs(jr))
        assert(math.abs(g[k] - jr) <= 1e-11 * math.max(big, 1e-300) + 1e-300,
          ("%s: dL/d%s = %.17g kept per step, %.17g as 2 J^T r"):format(c[1], free[k], g[k], jr))
      end
      assert(big > 0, c[1] .. ": a gradient of zero tests nothing")
    end
  end)
end)

describe("lsq input checks", function()
  local m = H.model("spring_latch")
  it("names what is wrong", function()
    local function err(spec)
      local ok, e = pcall(salta.lsq, spec)
      assert.is_false(ok)
      return tostring(e)
    end
    assert.truthy(err{ model = m, times = { 1, 2 }, data = { x = { 1 } }, free = { "k" } }:find("data for 'x' has 1 values, expected 2", 1, true))
    assert.truthy(err{ model = m, times = { 1, 2 }, data = { q = { 1, 2 } } }:find("names none of the outputs", 1, true))
    assert.truthy(err{ model = m, times = { 1, 2 }, data = { x = { 1, 2 } }, free = { "kk" } }:find("free 'kk' is not a parameter", 1, true))
    assert.truthy(err{ model = m, times = { 1, 2 }, data = { x = { 1, 2 } }, rtoll = 1 }:find("unknown option 'rtoll'", 1, true))
  end)
  it("reads data from CSV and reports a bad row with file and line", function()
    local path = H.temp_file("t,x,F\n0.5,0.1,0.4\n1.0,,0.2\n1.5,0.3,0.1\n")
    local L = salta.lsq{ model = m, data = path, free = { "k" } }
    assert.are.same({ 0.5, 1.0, 1.5 }, L.times)
    assert.are.same({ "x", "F" }, L.outputs)
    assert.are.equal(5, #L:residuals({ 4 }))        -- the empty field is missing data
    os.remove(path)
    path = H.temp_file("t,x\n0.5,0.1\n1.0,abc\n")
    local ok, e = pcall(salta.lsq, { model = m, data = path })
    assert.is_false(ok)
    assert.truthy(tostring(e):find(path .. ":3: column 'x' holds 'abc'", 1, true), tostring(e))
    os.remove(path)
  end)
end)

describe("grazing events", function()
  it("are reported with the event and time instead of a meaningless gradient", function()
    -- x = t + c - (t - 1)^3 with c = 1e-12: the guard x - t crosses zero at
    -- t = 1 + 1e-4 with rate -3e-8, its terms (-1 and x' = 1) cancelling:
    -- the event time's derivative is ill-defined there
    local m = salta.dae{ name = "graze", states = { { "x", 1 + 1e-12 } }, params = { { "b", 1.0 } },
      f = function(t, x, z, p) return { p.b - 3 * (t - 1) ^ 2 } end,
      events = { { name = "touch", direction = "down", guard = function(t, x) return x.x - t end,
        reset = function(t, x) return { x = x.x + 1 } end } } }
    local tr = m:simulate{ tf = 1.8, rtol = 1e-10, atol = 1e-12 }
    assert.are.equal(1, #tr:events())        -- the simulation itself is fine
    local L = salta.lsq{ model = m, times = { 0.5, 1.5, 1.8 }, data = { x = { 0, 0, 0 } }, free = { "b" },
      rtol = 1e-10, atol = 1e-12 }
    local ok, err = pcall(L.grad, L, { 1.0 })
    assert.is_false(ok)
    -- near t = 1 + 1e-4 (BDF's interpolant puts it at 0.9995, ERK's at 1.0001)
    assert.truthy(tostring(err):find("^model .graze.: grazing event .touch. at t = [01]%.[09]"), tostring(err))
  end)
end)
