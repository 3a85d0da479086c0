-- The model DSL and the expression compiler: tracing, simplification,
-- symbolic derivatives, implicit resets, and errors for bad models.
local salta = require("salta")
local expr = require("salta.expr")

local function ball(over)
  local spec = {
    name = "ball", states = { { "h", 1.0 }, { "v", 0.0 } }, params = { g = 9.81, e = 0.8 },
    f = function(t, x, z, p) return { x.v, -p.g } end,
    events = { { name = "floor", direction = "down",
      guard = function(t, x, z, p) return x.h end,
      reset = function(t, x, z, p) return { v = -p.e * x.v } end } },
  }
  for k, v in pairs(over or {}) do spec[k] = v end
  return spec
end

local function error_of(fn)
  local ok, err = pcall(fn)
  assert(not ok, "expected an error")
  return tostring(err)
end

describe("salta.dae", function()
  it("compiles a model and evaluates f, guards and resets", function()
    local m = salta.dae(ball())
    assert.are.same({ "h", "v" }, m.states)
    assert.are.same({ "e", "g" }, m.params)       -- a map is sorted by name
    local f = m:eval("f", 0, { 2, 3 })
    assert.are.equal(3, f[1]); assert.are.equal(-9.81, f[2])
    assert.are.equal(2, m:eval("guard", 0, { 2, 3 })[1])
    local r = m:eval("reset", 0, { 0, -4 }, nil, nil, "floor")
    assert.are.equal(0, r[1]); assert.is_near(3.2, r[2], 1e-15)
  end)

  it("accepts name-keyed returns and default outputs of x and z", function()
    local m = salta.dae(ball({ f = function(t, x, z, p) return { v = -p.g, h = x.v } end }))
    local f = m:eval("f", 0, { 2, 3 })
    assert.are.same({ 3, -9.81 }, f)
    assert.are.same({ "h", "v" }, m.outputs)
  end)

  it("builds outputs from h with names", function()
    local m = salta.dae(ball({ h = function(t, x, z, p) return { energy = p.g * x.h + x.v ^ 2 / 2 } end }))
    assert.are.same({ "energy" }, m.outputs)
    assert.is_near(9.81 * 2 + 4.5, m:eval("h", 0, { 2, 3 })[1], 1e-12)
  end)

  it("runs plain Lua control flow at trace time", function()
    local N = 4
    local states = {}
    for i = 1, N do states[i] = { "x" .. i, i } end
    local m = salta.dae{ name = "chain", states = states, params = { { "k", 2 } },
      f = function(t, x, z, p)
        local d = {}
        for i = 1, N do d[i] = -p.k * x[i] + (i > 1 and x[i - 1] or 0) end
        return d
      end }
    local f = m:eval("f", 0, { 1, 2, 3, 4 })
    assert.are.same({ -2, -3, -4, -5 }, f)
  end)
end)

describe("expression DAG", function()
  local x, y = expr.var("x", 1, "x"), expr.var("x", 2, "y")
  it("hash-conses identical expressions", function()
    assert.are.equal(x * y + 1, x * y + 1)
    assert.are.equal(x * y, y * x)   -- canonical operand order
  end)
  it("simplifies neutral elements and folds constants", function()
    assert.are.equal(x, x + 0); assert.are.equal(x, 1 * x); assert.are.equal(expr.ZERO, 0 * x)
    assert.are.equal(x, -(-x)); assert.are.equal(expr.ZERO, x - x)
    assert.are.equal(6, (expr.const(2) * 3).value)
    assert.are.equal(expr.ONE, x / x)
  end)
  it("differentiates every elementary function correctly", function()
    local env = {}
    for _, name in ipairs({ "sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sinh", "cosh",
      "asin", "acos", "atan", "abs", "sigmoid", "log10" }) do
      local e = expr.unary(name, x * 0.3 + y * y * 0.1) * y
      for _, v in ipairs({ x, y }) do
        local d = expr.diff(e, v)
        env[x], env[y] = 0.7, -1.1
        local h = 1e-6
        env[v] = env[v] + h; local fp = expr.eval(e, env)
        env[v] = env[v] - 2 * h; local fm = expr.eval(e, env)
        env[v] = env[v] + h
        assert.is_near((fp - fm) / (2 * h), expr.eval(d, env), 1e-7, name)
      end
    end
    local p = expr.pow(x, y)
    env[x], env[y] = 1.3, 0.7
    assert.is_near(0.7 * 1.3 ^ -0.3, expr.eval(expr.diff(p, x), env), 1e-14)
    assert.is_near(1.3 ^ 0.7 * math.log(1.3), expr.eval(expr.diff(p, y), env), 1e-14)
    assert.are.equal(1, expr.eval(expr.diff(expr.max(x, y), x), env))
    assert.are.equal(0, expr.eval(expr.diff(expr.min(x, y), x), env))
  end)
end)

describe("implicit resets", function()
  local function latch(residual)
    return salta.dae{ name = "implicit", states = { { "u", 1 }, { "v", 0 } }, params = { { "c", 2.0 } },
      f = function(t, x, z, p) return { x.v, -x.u } end,
      events = { { name = "solve", direction = "down", guard = function(t, x) return x.u end,
        reset = function(t, x, z, p)
          local U = expr.unknown("u+")
          return { u = expr.implicit(residual(U, x, p), U, x.u) }
        end } } }
  end

  it("solves a nonlinear reset by Newton in the generated code, with IFT derivatives", function()
    local m = latch(function(U, x, p) return U ^ 3 + U - p.c * x.v end)
    local r = m:eval("reset", 0, { 0.5, 3 }, nil, nil, 1)
    assert.is_near(6, r[1] ^ 3 + r[1], 1e-12)
    local J = m:jacobian("reset", "x", 0, { 0.5, 3 }, nil, nil, 1)
    assert.is_near(2 / (3 * r[1] ^ 2 + 1), J[1][2], 1e-12)   -- du/dv = c / (3u^2 + 1)
  end)

  it("reports a Newton failure with the event and time", function()
    local m = latch(function(U, x, p) return U * U + p.c end)   -- no real root
    local err = error_of(function() m:eval("reset", 1.5, { 0.5, 3 }, nil, nil, 1) end)
    assert.truthy(err:find("implicit reset of event 'solve' did not converge at t = 1.5", 1, true), err)
  end)
end)

describe("bad models give errors naming the model, the equation and the culprit", function()
  it("a closure returning the wrong number of values", function()
    local err = error_of(function() salta.dae(ball({ f = function(t, x) return { x.v } end })) end)
    assert.truthy(err:find("model 'ball', f: returned 1 values, expected 2", 1, true), err)
  end)
  it("a comparison of symbols", function()
    local err = error_of(function()
      salta.dae(ball({ f = function(t, x, z, p) if x.h < 0 then return { 0, 0 } end return { x.v, -p.g } end }))
    end)
    assert.truthy(err:find("model 'ball', f:", 1, true), err)
    assert.truthy(err:find("cannot be compared", 1, true), err)
    assert.truthy(err:find("guard", 1, true), err)
  end)
  it("a reset naming an unknown state", function()
    local spec = ball()
    spec.events[1].reset = function(t, x, z, p) return { vv = 0 } end
    local err = error_of(function() salta.dae(spec) end)
    assert.truthy(err:find("model 'ball', event 'floor' reset: names unknown state 'vv'", 1, true), err)
  end)
  it("an unknown name", function()
    local err = error_of(function() salta.dae(ball({ f = function(t, x, z, p) return { x.v, -p.gravity } end })) end)
    assert.truthy(err:find("model 'ball'", 1, true) and err:find("unknown parameter 'gravity'", 1, true), err)
  end)
  it("an unknown function", function()
    local err = error_of(function() salta.dae(ball({ f = function(t, x, z, p) return { x.v, salta.sqr(x.h) } end })) end)
    assert.truthy(err:find("model 'ball', f:", 1, true) and err:find("sqr", 1, true), err)
  end)
  it("a boolean instead of an expression", function()
    local err = error_of(function() salta.dae(ball({ f = function(t, x) return { x.v, x.h == 0 } end })) end)
    assert.truthy(err:find("model 'ball', f: value 2 is a boolean", 1, true), err)
  end)
  it("a bad direction and a duplicate name", function()
    local spec = ball(); spec.events[1].direction = "sideways"
    local err = error_of(function() salta.dae(spec) end)
    assert.truthy(err:find("event 'floor': direction must be", 1, true), err)
    err = error_of(function() salta.dae(ball({ params = { { "h", 1 } } })) end)
    assert.truthy(err:find("name 'h' is declared twice", 1, true), err)
  end)
  it("algebraics without g", function()
    local err = error_of(function() salta.dae(ball({ algebraics = { "w" } })) end)
    assert.truthy(err:find("model 'ball': 1 algebraics but no g", 1, true), err)
  end)
end)

describe("the default JIT backend", function()
  local jit = require("salta.jit")
  local balls = dofile("models/bouncing_balls.lua")
  local function cache_dir()
    local d = os.tmpname()
    os.remove(d)
    return d
  end
  local function model(N, dir)
    return require("salta.model").build(balls{ N = N, backend = "tcc" }.symbolic, { cache_dir = dir })
  end

  it("builds a small model with cc at once (0.2 s for balls N = 3)", function()
    local dir = cache_dir()
    local m = model(3, dir)
    assert.are.equal("cc", m.compile_info.backend)
    assert.is_false(m.compile_info.cached)
    assert.are.equal("cc", model(3, dir).compile_info.backend)
    assert.is_true(model(3, dir).compile_info.cached)
    os.execute("rm -rf " .. dir)
  end)

  it("builds a large one with tcc now and cc in the background, which the live model takes when it lands", function()
    if not jit.available().tcc then return end   -- plain lua5.4: cc at once, as above
    local dir = cache_dir()
    local m = model(15, dir)
    assert.are.equal("tcc", m.compile_info.backend)
    assert.is_true(m.compile_info.cc_pending)
    local backend, pending = m:backend()
    assert.are.equal("tcc", backend)
    assert.is_true(pending)
    -- a run and a loss on the tcc kernels; the loss lives on
    local a = m:simulate{ tf = 1.9 }
    local L = salta.lsq{ model = m, times = a.t, data = { y1 = a.y.y1, y7 = a.y.y7 }, free = { "g", "e_g" } }
    local v0, g0 = L:value_and_grad({ 9.7, 0.78 })
    for _ = 1, 240 do   -- the background build takes a few seconds
      if m:backend() == "cc" then break end
      os.execute("sleep 0.25")
    end
    backend, pending = m:backend()
    assert.are.equal("cc", backend)
    assert.is_false(pending)
    assert.matches("(cc backend)", tostring(m), 1, true)
    -- the next runs use the cc kernels: the same results to the last digit
    local b = m:simulate{ tf = 1.9 }
    assert.are.same(a.y.y7, b.y.y7)
    local v1, g1 = L:value_and_grad({ 9.7, 0.78 })
    assert.are.equal(v0, v1)
    assert.are.equal(g0[1], g1[1])
    assert.are.equal(g0[2], g1[2])
    -- and the next build of the model loads them from the cache
    local again = model(15, dir)
    assert.are.equal("cc", again.compile_info.backend)
    assert.is_true(again.compile_info.cached)
    os.execute("rm -rf " .. dir)
  end)
end)
