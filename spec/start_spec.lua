-- Start values computed from parameters: states = { {"x", function(p) ... end} }.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

-- x' = -k x from x0 = 2 a + c, with a latch on v that a reaches through
-- the start only: v' = x, v jumps to -v / 2 when it crosses b. a lives in
-- the start expression alone, so its gradient is the start's share.
local function model(extra)
  local spec = {
    name = "start_decay",
    states = { { "x", function(p) return 2 * p.a + p.c end }, { "v", function(p) return -p.c end } },
    params = { { "a", 1.5 }, { "k", 0.7 }, { "c", 0.2 }, { "b", 1.1 } },
    f = function(t, x, z, p) return { -p.k * x.x, x.x } end,
    events = { { name = "latch", direction = "up", guard = function(t, x, z, p) return x.v - p.b end,
      reset = function(t, x) return { v = -0.5 * x.v } end } },
  }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return salta.dae(spec)
end

-- Closed form before the latch: x = x0 e^{-kt}, v = v0 + x0 (1 - e^{-kt}) / k.
local function closed(p, t)
  local x0, v0 = 2 * p.a + p.c, -p.c
  return x0 * math.exp(-p.k * t), v0 + x0 * (1 - math.exp(-p.k * t)) / p.k
end

describe("start values from parameters", function()
  local m = model()
  local P = { a = 1.3, k = 0.6, c = 0.25, b = 1.1 }

  it("give the model's start at its nominal parameters, and follow the parameters of a run", function()
    assert.are.equal(2 * 1.5 + 0.2, m.x0.x)
    assert.are.equal(-0.2, m.x0.v)
    local tr = m:simulate{ tf = 0.5, times = { 0, 0.25, 0.5 }, params = P, rtol = 1e-11, atol = 1e-13 }
    for i, t in ipairs({ 0, 0.25, 0.5 }) do
      local x, v = closed(P, t)
      assert.is_near(x, tr.y.x[i], 1e-9)
      assert.is_near(v, tr.y.v[i], 1e-9)
    end
    assert.are.equal(0, #tr:events())   -- v reaches b = 1.1 later
  end)

  it("an explicit x0 overrides them", function()
    local tr = m:simulate{ tf = 0.5, times = { 0 }, params = P, x0 = { x = 5, v = 0 } }
    assert.are.equal(5, tr.y.x[1])
  end)

  -- a loss through the latch event: every parameter's gradient by forward
  -- sensitivities and by the adjoint against central differences of a
  -- tighter simulation
  local times = H.uniform(3, 40)
  local tr = m:simulate{ tf = 3, times = times, params = { a = 1.5, k = 0.7, c = 0.2, b = 1.1 }, rtol = 1e-12,
    atol = 1e-14 }
  assert(#tr:events() >= 1, "the latch fires in the data")
  local free = { "a", "k", "c", "b" }
  local p = { 1.3, 0.6, 0.25, 1.0 }
  local function loss(rtol)
    return salta.lsq{ model = m, times = times, data = { x = tr.y.x, v = tr.y.v }, free = free, rtol = rtol,
      atol = rtol * 1e-2 }
  end
  local fd = loss(1e-12):grad(p, { method = "fd" })

  for _, route in ipairs({ { "sens", nil }, { "adjoint", { method = "adjoint" } } }) do
    it(("give %s gradients that match central differences, every parameter"):format(route[1]), function()
      local g = loss(1e-10):grad(p, route[2])
      for k, n in ipairs(free) do
        assert(math.abs(g[k] - fd[k]) <= 1e-6 * math.abs(fd[k]) + 1e-9,
          ("%s: dL/d%s = %.12g, differences %.12g"):format(route[1], n, g[k], fd[k]))
      end
      assert(math.abs(fd[1]) > 1e-3, "a (start only) has a gradient")
    end)
  end

  it("are refused when they are not numbers of the parameters, naming the state", function()
    has(err_of(model, { states = { { "x", function() return "two" end }, { "v", 0 } } }),
      "model 'start_decay', start of state 'x'", "must return a number or an expression of the parameters",
      "got string")
    has(err_of(model, { states = { { "x", function(p) return p.nope end }, { "v", 0 } } }),
      "model 'start_decay'", "unknown parameter 'nope'")
    has(err_of(model, { states = { { "x", 1 }, { "v", "zero" } } }),
      "state 'v' needs a number or a function of the parameters, got string")
    has(err_of(model, { states = { { "x", function(p) return 1 / (p.a - 1.5) end }, { "v", 0 } } }),
      "model 'start_decay', start of state 'x': is inf at the nominal parameters")
  end)

  it("that are not finite at a run's parameters are an error naming the state", function()
    local mm = model{ states = { { "x", function(p) return salta.log(p.a) end }, { "v", 0 } } }
    has(err_of(mm.simulate, mm, { tf = 1, params = { a = -1, k = 0.7, c = 0.2, b = 1.1 } }),
      "model 'start_decay': the start value of state 'x' is", "at these parameters")
  end)

  it("cannot be combined with a free start value (that would drop their dependence)", function()
    has(err_of(salta.lsq, { model = m, times = times, data = { x = tr.y.x }, free = { "a", "x0.v" } }),
      "free 'x0.v'", "the start values of model 'start_decay' depend on the parameters")
  end)
end)
