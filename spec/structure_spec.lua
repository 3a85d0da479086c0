-- The structural compiler (lua/salta/structure.lua): each transformation
-- against an independent reference (a closed form, the equations' own
-- residuals, the same model without the compiler), and gradients through
-- the transformed model against central differences of a tighter loss.
local H = require("helpers")
local salta = require("salta")

local TIGHT = { rtol = 1e-10, atol = 1e-12 }

local function max_diff(a, b)
  local m = 0
  for i = 1, #a do m = math.max(m, math.abs(a[i] - b[i])) end
  return m
end

-- sens and adjoint gradients of loss(make) against central differences of
-- the loss at rtol 1e-12, every free parameter: within tol relative.
local function check_grad(label, make, p, tol)
  local fd = make{ rtol = 1e-12, atol = 1e-14 }:grad(p, { method = "fd" })
  for _, method in ipairs({ "sens", "adjoint" }) do
    local opts = method == "adjoint" and { method = "adjoint", mesh = "steps" } or nil
    local g = make{ rtol = 1e-11, atol = 1e-13 }:grad(p, opts)
    for k = 1, #p do
      local err = math.abs(g[k] - fd[k])
      assert(err <= tol * math.abs(fd[k]) + 1e-9,
        ("%s (%s): component %d is %.12g, differences give %.12g (relative error %.2e)"):format(
          label, method, k, g[k], fd[k], err / math.abs(fd[k])))
    end
  end
end

describe("alias elimination", function()
  -- a = b, b = -c, c = x: a chain of three aliases; d = 2 a is explicit.
  -- x' = -k x + d = -(k + 2) x
  local spec = { name = "aliases", states = { { "x", 1 } }, params = { { "k", 1 } },
    algebraics = { { "a", 0 }, { "b", 0 }, { "c", 0 }, { "d", 0 } },
    f = function(t, x, z, p) return { -p.k * x.x + z.d } end,
    g = function(t, x, z) return { z.a - z.b, z.b + z.c, z.c - x.x, z.d - 2 * z.a } end }
  local m = salta.dae(spec)

  it("merges the chain into the state and keeps one explicit algebraic, with no Newton", function()
    assert.are.same({ "d" }, m.algebraics)
    assert.are.equal(3, #m.structure.aliases)
    assert.are.equal(1, m.structure.explicit)
    assert.are.same({}, m.structure.blocks)
    local tr = m:simulate{ tf = 2, rtol = 1e-10, atol = 1e-12 }
    assert.are.equal(0, tr:stats().algebraic_newton_iters)
    assert.are.same({}, tr:stats().blocks)
    for i, t in ipairs(tr.t) do
      local x = math.exp(-3 * t)   -- closed form
      assert.is_near(x, tr.x.x[i], 1e-8)
      assert.is_near(-x, tr.z.a[i], 1e-8)
      assert.is_near(-x, tr.z.b[i], 1e-8)
      assert.is_near(x, tr.z.c[i], 1e-8)
      assert.is_near(-2 * x, tr.z.d[i], 1e-8)
      assert.is_near(-x, tr.y.a[i], 1e-8)   -- the default outputs keep every name
    end
  end)

  it("gives the trajectory of the model without the compiler, and exact gradients of a loss on an alias", function()
    local plain = salta.dae(setmetatable({ structural = false, name = "aliases_plain" }, { __index = spec }))
    local a = m:simulate{ tf = 2, rtol = 1e-10, atol = 1e-12 }
    local b = plain:simulate{ tf = 2, rtol = 1e-10, atol = 1e-12 }
    assert.is_true(max_diff(a.y.b, b.y.b) <= 1e-10)
    local times = H.uniform(2, 20)
    local data = { b = {} }
    for i, t in ipairs(times) do data.b[i] = -math.exp(-3.2 * t) end
    check_grad("alias loss", function(tol)
      return salta.lsq{ model = m, times = times, data = data, free = { "k" }, rtol = tol.rtol, atol = tol.atol }
    end, { 1.1 }, 1e-6)
  end)
end)

describe("tearing", function()
  -- a loop of three equations, each with two unknowns: no assignment
  -- starts it until a is torn; then b and c are assignments and the loop
  -- is one residual in a, nonlinear: a Newton block of size 1.
  local spec = { name = "torn", states = { { "x", 0.5 } }, params = { { "q", 0.7 }, { "r", 1.0 } },
    algebraics = { { "a", 0 }, { "b", 0 }, { "c", 0 } },
    f = function(t, x, z, p) return { p.r * (z.b - x.x) + 0.3 * salta.sin(t) } end,
    g = function(t, x, z, p)
      return { z.a - 0.5 * z.c - x.x, z.b - 0.3 * z.a * z.a, z.c + 0.2 * z.b * z.b * z.b - p.q }
    end }
  local m = salta.dae(spec)

  it("tears the loop of 3 to one variable, the engine's only Newton block", function()
    assert.are.equal(1, #m.structure.loops)
    assert.are.equal(3, m.structure.loops[1].size)
    assert.are.equal(1, m.structure.loops[1].tearing)
    assert.are.same({ 1 }, m.structure.blocks)
    local tr = m:simulate{ tf = 3, rtol = 1e-10, atol = 1e-12 }
    assert.are.same({ 1 }, tr:stats().blocks)
    assert.is_true(tr:stats().algebraic_newton_iters > 0)
    for i = 1, #tr.t do   -- the original equations hold
      local a, b, c, x = tr.z.a[i], tr.z.b[i], tr.z.c[i], tr.x.x[i]
      assert.is_true(math.abs(a - 0.5 * c - x) <= 1e-12)
      assert.is_true(math.abs(b - 0.3 * a * a) <= 1e-12)
      assert.is_true(math.abs(c + 0.2 * b ^ 3 - 0.7) <= 1e-12)
    end
    local plain = salta.dae(setmetatable({ structural = false, name = "torn_plain" }, { __index = spec }))
    local b = plain:simulate{ tf = 3, rtol = 1e-10, atol = 1e-12 }
    assert.is_true(max_diff(tr.x.x, b.x.x) <= 1e-10)
    assert.is_true(max_diff(tr.z.c, b.z.c) <= 1e-10)
  end)

  it("keeps gradients through the torn loop exact", function()
    local times = H.uniform(3, 30)
    local data = { c = {} }
    for i = 1, #times do data.c[i] = 0.6 end
    check_grad("torn loss", function(tol)
      return salta.lsq{ model = m, times = times, data = data, free = { "q", "r" }, rtol = tol.rtol, atol = tol.atol }
    end, { 0.72, 0.9 }, 1e-6)
  end)

  it("solves a loop whose one residual is linear in its tearing variable explicitly: the Cauer spec runs no Newton", function()
    local cauer = H.spec_model("dae_specification_cauer_events.json")
    assert.are.equal(3, cauer.structure.explicit)
    assert.are.same({}, cauer.structure.blocks)
    assert.is_true(cauer.structure.loops[1].explicit)
    local tr = cauer:simulate{ tf = 20, rtol = 1e-10, atol = 1e-12 }
    assert.are.equal(0, tr:stats().algebraic_newton_iters)
    local L = salta.lsq{ model = cauer, times = tr.t, data = { C3_v = tr.y.C3_v }, free = { "C1_C" } }
    L:grad({ 1.1 })
    assert.are.equal(0, L:stats().algebraic_newton_iters)
    assert.are.same({}, L:stats().blocks)
    assert.are.equal(3, L:stats().explicit_algebraics)
  end)
end)

describe("index reduction", function()
  -- the Cartesian pendulum: index 3 (the constraint reads positions only)
  local L, G, th0 = 1.0, 9.81, 0.01
  local function pendulum()
    return salta.dae{ name = "pendulum",
      states = { { "x", L * math.sin(th0) }, { "y", -L * math.cos(th0) }, { "vx", 0 }, { "vy", 0 } },
      algebraics = { { "lam", 0 } }, params = { { "L", L }, { "g", G } },
      f = function(t, x, z, p) return { x.vx, x.vy, -z.lam * x.x, -z.lam * x.y - p.g } end,
      g = function(t, x, z, p) return { x.x * x.x + x.y * x.y - p.L * p.L } end }
  end
  local m = pendulum()

  it("differentiates the constraint twice and makes y and vy dummy derivatives", function()
    assert.are.same({ "y", "vy" }, m.structure.dummies)
    assert.are.equal(2, #m.structure.differentiated)
    assert.are.same({ "x", "vx" }, m.states)
    H.has(H.err_of(m.simulate, m, { tf = 1, x0 = { y = -1 } }), "x0 has unknown name 'y'",
      "index reduction made it algebraic", "set the states x, vx")
  end)

  it("follows the small-angle closed form and keeps the constraint without drift", function()
    local w = math.sqrt(G / L)
    local tr = m:simulate{ tf = 10, rtol = 1e-10, atol = 1e-12, times = H.uniform(10, 400) }
    for i, t in ipairs(tr.t) do
      local x, y, vx, vy = tr.y.x[i], tr.y.y[i], tr.y.vx[i], tr.y.vy[i]
      -- small angle: x = L th0 cos(w t); the period's own amplitude error is ~ th0^3
      assert.is_true(math.abs(x - L * th0 * math.cos(w * t)) <= 2e-6, ("x at t = %g: %.10g"):format(t, x))
      assert.is_true(math.abs(x * x + y * y - L * L) <= 1e-12, ("position drift at t = %g"):format(t))
      assert.is_true(math.abs(x * vx + y * vy) <= 1e-12, ("velocity drift at t = %g"):format(t))
    end
  end)

  it("keeps sensitivities and the adjoint exact on the reduced system", function()
    local times = H.uniform(3, 30)
    local tr = m:simulate{ times = times, rtol = 1e-12, atol = 1e-14 }
    check_grad("pendulum loss", function(tol)
      return salta.lsq{ model = m, times = times, data = { x = tr.y.x }, free = { "L", "g" },
        rtol = tol.rtol, atol = tol.atol }
    end, { 1.05, 9.7 }, 1e-6)
  end)
end)

describe("index reduction at index 2", function()
  it("makes one of two capacitors in parallel algebraic and follows the closed form", function()
    -- a source V through R into C1 and C2 in parallel: v1 = v2, a constraint on states
    local m = salta.dae{ name = "parallel_caps", states = { { "v1", 0 }, { "v2", 0 } },
      algebraics = { { "i", 0 }, { "i1", 0 }, { "i2", 0 } },
      params = { { "V", 1 }, { "R", 1 }, { "C1", 1 }, { "C2", 2 } },
      f = function(t, x, z, p) return { z.i1 / p.C1, z.i2 / p.C2 } end,
      g = function(t, x, z, p) return { z.i - (p.V - x.v1) / p.R, z.i - z.i1 - z.i2, x.v1 - x.v2 } end }
    assert.are.same({ "v1" }, m.structure.dummies)
    assert.are.same({}, m.structure.blocks)
    local tr = m:simulate{ tf = 3, rtol = 1e-10, atol = 1e-12 }
    for q, t in ipairs(tr.t) do
      local v = 1 - math.exp(-t / 3)   -- V (1 - exp(-t / (R (C1 + C2))))
      assert.is_near(v, tr.y.v1[q], 1e-9)
      assert.is_near(v, tr.y.v2[q], 1e-9)
    end
  end)
end)

describe("an alias of a state that index reduction makes algebraic", function()
  it("stays addressable by name, with the dummy's values", function()
    local m = salta.dae{ name = "pendulum_alias", states = { { "x", 0.1 }, { "y", -math.sqrt(0.99) }, { "vx", 0 },
      { "vy", 0 } }, algebraics = { { "lam", 0 }, { "height", 0 } }, params = { { "L", 1 }, { "g", 9.81 } },
      f = function(t, x, z, p) return { x.vx, x.vy, -z.lam * x.x, -z.lam * x.y - p.g } end,
      g = function(t, x, z, p) return { x.x * x.x + x.y * x.y - p.L * p.L, z.height - x.y } end }
    assert.are.same({ name = "height", of = "y", kind = "z", sign = 1 }, m.structure.aliases[1])
    local tr = m:simulate{ tf = 1, rtol = 1e-10, atol = 1e-12 }
    for q = 1, #tr.t do
      assert.are.equal(tr.z.y[q], tr.z.height[q])
      assert.is_true(math.abs(tr.x.x[q] ^ 2 + tr.z.height[q] ^ 2 - 1) <= 1e-12)
    end
  end)
end)

describe("a dummy derivative whose pivot vanishes", function()
  it("fails with a message naming the dummy, its constraint, the time and the pivot", function()
    -- started above the horizontal, x is chosen; the swing passes x = 0
    local m = dofile("models/pendulum.lua"){ angle = 2.0 }
    assert.are.same({ "x", "vx" }, m.structure.dummies)
    H.has(H.err_of(m.simulate, m, { tf = 3 }), "model 'pendulum'", "index reduction's dummy derivative 'x' "
      .. "(of the constraint 0 = x * x + y * y - L * L) fails", "its pivot, the derivative of its constraint by 'x'")
  end)
end)

describe("a structurally singular model", function()
  it("is an error naming the variable no equation determines and the equations", function()
    local msg = H.err_of(salta.dae, { name = "singular", states = { { "x", 1 } },
      algebraics = { { "a", 0 }, { "b", 0 } },
      f = function(t, x, z) return { z.a + z.b } end,
      g = function(t, x, z) return { z.a * z.a - x.x, salta.sin(z.a) - x.x } end })
    H.has(msg, "model 'singular'", "structurally singular", "determine 'b'", "g[2]")
  end)
end)

describe("every shipped model", function()
  -- salta.dae without the structural compiler, for the models' own files
  local function plain(build)
    local dae = salta.dae
    return H.with_field(salta, "dae", function(spec) spec.structural = false; return dae(spec) end, build)
  end
  local cases = {
    { "cauer", function() return dofile("models/cauer.lua")() end, 20 },
    { "cauer_ladder", function() return dofile("models/cauer_ladder.lua"){ N = 6 } end, 10 },
    { "spring_latch", function() return dofile("models/spring_latch.lua")() end, 10 },
    { "rectifier", function() return dofile("models/rectifier.lua")() end, 0.05 },
    { "thermostat", function() return dofile("models/thermostat.lua")() end, 10 },
    { "rc_network", function() return dofile("models/rc_network.lua"){ N = 5 } end, 4 },
  }
  for _, file in ipairs(H.SPECS) do
    cases[#cases + 1] = { file, function(structural)
      return salta.load_spec(H.spec_path(file), { structural = structural })
    end, file:find("balls") and 1.9 or 3 }
  end
  for _, c in ipairs(cases) do
    it(("gives the same trajectory and gradient with and without the structural compiler: %s"):format(c[1]), function()
      local a = c[2](true)
      local b = c[1]:find("^dae_") and c[2](false) or plain(c[2])
      local ta = a:simulate{ tf = c[3], rtol = 1e-10, atol = 1e-12 }
      local tb = b:simulate{ tf = c[3], rtol = 1e-10, atol = 1e-12 }
      assert.are.equal(#ta:events(), #tb:events())
      for _, n in ipairs(a.outputs) do
        local d = max_diff(ta.y[n], tb.y[n])
        assert(d <= 1e-10, ("%s: output '%s' differs by %.3g"):format(c[1], n, d))
      end
      -- and the same gradient of a loss on every output, by every parameter
      local times, data = H.uniform(c[3], 20), {}
      local tr = a:simulate{ tf = c[3], times = times, rtol = 1e-10, atol = 1e-12 }
      for _, n in ipairs(a.outputs) do data[n] = tr.y[n] end
      local p = {}
      for i, n in ipairs(a.params) do p[i] = a.p0[n] * 1.01 end
      local function grad(m)
        return salta.lsq{ model = m, times = times, data = data, free = a.params, rtol = 1e-10, atol = 1e-12 }:grad(p)
      end
      local ga, gb, big = grad(a), grad(b), 0
      for i = 1, #ga do big = math.max(big, math.abs(ga[i])) end
      for i = 1, #ga do
        assert(math.abs(ga[i] - gb[i]) <= 1e-6 * big, ("%s: dL/d%s is %.12g with the compiler, %.12g without"):format(
          c[1], a.params[i], ga[i], gb[i]))
      end
    end)
  end
end)

describe("a large model's kernels, split into parts of 256 rows", function()
  -- the ladder of 300 sections: f has 600 rows, 300 guards, 300 assignments
  local m = dofile("models/cauer_ladder.lua"){ N = 300 }
  local expr = require("salta.expr")
  it("agree with the expressions they were generated from", function()
    local d, rnd = m.symbolic, H.rng(11)
    local t, x, z, env = 0.3, {}, {}, { [d.vars.t] = 0.3 }
    for i, v in ipairs(d.vars.x) do x[i] = rnd() - 0.5; env[v] = x[i] end
    for i, v in ipairs(d.vars.z) do z[i] = rnd() - 0.5; env[v] = z[i] end
    for i, v in ipairs(d.vars.p) do env[v] = d.p_nominal[i] end
    for _, fn in ipairs({ { "f", d.f }, { "g", d.g }, { "guard", d.e } }) do
      local got = m:eval(fn[1], t, x, z, d.p_nominal)
      for i, e in ipairs(fn[2]) do
        local want = expr.eval(e, env)
        assert(math.abs(got[i] - want) <= 1e-12 * (1 + math.abs(want)), ("%s row %d: %.17g, want %.17g"):format(
          fn[1], i, got[i], want))
      end
    end
  end)
  it("assign every algebraic so that g = 0 along the trajectory", function()
    local tr = m:simulate{ tf = 20, rtol = 1e-8, atol = 1e-10, times = H.uniform(20, 20) }
    assert.is_true(#tr:events() > 0)
    for k = 1, 300 do
      local out = k == 300 and nil or tr.x["i" .. (k + 1)]
      for q = 1, #tr.t do
        local o = out and out[q] or tr.x.v300[q] / 1.0
        local res = 0.5 * tr.z["dv" .. k][q] - (tr.x["i" .. k][q] - o)
        assert(math.abs(res) <= 1e-12, ("dv%d at t = %g: residual %g"):format(k, tr.t[q], res))
      end
    end
  end)
end)

describe("Newton blocks in stages", function()
  -- N springs, each force defined implicitly (F + c F^3 = k x): N scalar
  -- blocks that do not read each other, one stage; and a second force
  -- that reads the first (G + c G^3 = F1): a second stage
  local N = 40
  local function spec(structural)
    local states, alg = {}, {}
    for k = 1, N do
      states[#states + 1] = { "x" .. k, 0.2 * k / N }
      states[#states + 1] = { "v" .. k, 1 }
      alg[k] = { "F" .. k, 0 }
    end
    alg[N + 1] = { "G", 0 }
    return { name = "springs", states = states, algebraics = alg, params = { { "k", 4 }, { "c", 0.1 } },
      structural = structural,
      f = function(t, x, z, p)
        local d = {}
        for k = 1, N do d["x" .. k], d["v" .. k] = x["v" .. k], -z["F" .. k] - (k == 1 and 0.1 * z.G or 0) end
        return d
      end,
      g = function(t, x, z, p)
        local r = {}
        for k = 1, N do r[k] = z["F" .. k] + p.c * z["F" .. k] ^ 3 - p.k * x["x" .. k] end
        r[N + 1] = z.G + p.c * z.G ^ 3 - z.F1
        return r
      end }
  end
  local m = salta.dae(spec(true))

  it("solves the independent blocks as one stage and the dependent one after it", function()
    assert.are.equal(N + 1, #m.structure.blocks)
    assert.are.equal(2, m.structure.stages)
    local a = m:simulate{ tf = 3, rtol = 1e-10, atol = 1e-12 }
    local b = salta.dae(spec(false)):simulate{ tf = 3, rtol = 1e-10, atol = 1e-12 }
    assert.is_true(a:stats().algebraic_newton_iters > 0)
    for _, n in ipairs({ "x1", "x" .. N, "F1", "G" }) do
      local d = max_diff(a.y[n], b.y[n])
      assert(d <= 1e-10, ("output '%s' differs by %.3g"):format(n, d))
    end
    for q = 1, #a.t do   -- the equations hold
      local F, G = a.z.F1[q], a.z.G[q]
      assert.is_true(math.abs(F + 0.1 * F ^ 3 - 4 * a.x.x1[q]) <= 1e-12)
      assert.is_true(math.abs(G + 0.1 * G ^ 3 - F) <= 1e-12)
    end
  end)
end)
