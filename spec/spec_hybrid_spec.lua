-- Spec import of the richer constructs: discrete variables and pre(),
-- if-expressions (with noEvent), when clauses with several reinits,
-- elsewhen and terminate(), input tables, start expressions.
local salta = require("salta")
local spec = require("salta.spec")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

describe("a spec with modes, inputs and a terminal event", function()
  local ms = salta.load_spec("examples/data/thermostat_spec.json")
  local md = dofile("models/thermostat.lua")()
  local times = H.uniform(72, 288)

  it("simulates as the same model written with salta.dae, and ends at terminate()", function()
    local a = ms:simulate{ tf = 72, times = times, rtol = 1e-10, atol = 1e-12 }
    local b = md:simulate{ tf = 72, times = times, rtol = 1e-10, atol = 1e-12 }
    assert.are.equal(60, a.t_end)
    assert.are.equal("stop", a:stats().terminal_event)
    assert.is_true(#a.t < #b.t)
    for i = 1, #a.t do assert.is_near(b.y.T[i], a.y.T[i], 1e-9) end
    local ea, eb = a:events(), b:events()
    for k = 1, #ea - 1 do
      assert.are.equal(eb[k].name, ea[k].name)
      assert.is_near(eb[k].t, ea[k].t, 1e-9)
    end
    assert.are.equal("stop", ea[#ea].name)
    assert.are.equal(true, a.discrete.heating[1])
  end)

  it("gives gradients by every parameter of f, the start expression and the thresholds", function()
    local kept = {}
    for _, t in ipairs(times) do if t < 60 then kept[#kept + 1] = t end end
    local data = ms:simulate{ tf = 72, times = kept, rtol = 1e-12, atol = 1e-13 }.y.T
    local free = { "a", "P", "T0", "T_lo", "T_hi" }
    local function loss(rtol)
      return salta.lsq{ model = ms, times = kept, data = { T = data }, free = free, rtol = rtol, atol = rtol,
        tf = 72 }
    end
    local p = { 0.14, 3.1, 16.3, 18.9, 21.1 }
    -- small steps and no Richardson step: the loss is C1 only where the
    -- input has kinks, and a switching near the end of the run is within
    -- 1e-4 of a
    local fd = loss(1e-12):grad(p, { method = "fd", h = 1e-6, richardson = false })
    local g = loss(1e-11):grad(p)
    for k, n in ipairs(free) do
      assert(math.abs(g[k] - fd[k]) <= 2e-5 * math.abs(fd[k]) + 1e-12,
        ("dL/d%s = %.12g, differences %.12g"):format(n, g[k], fd[k]))
    end
  end)
end)

describe("a spec's if-expression", function()
  local function saw(f)
    return spec.describe_spec({
      states = { { name = "x", start = 0 } },
      parameters = { { name = "a", value = 2 }, { name = "b", value = 1 }, { name = "w", value = 3 } },
      f = { f },
    }, "saw")
  end
  local function run(f)
    local m = require("salta.model").build(saw(f))
    return m:simulate{ tf = 5, times = H.uniform(5, 50), rtol = 1e-10, atol = 1e-12 }
  end

  it("switches at its zero-crossing, or without an event under noEvent", function()
    local tr = run("der(x) = if sin(w * time) > 0 then a else -b")
    assert.are.equal(4, #tr:events())
    for k, e in ipairs(tr:events()) do assert.is_near(k * math.pi / 3, e.t, 1e-9) end
    assert.is_near(2 * math.pi / 3 - math.pi / 3, tr.y.x[#tr.t] - (tr.y.x[#tr.t] - 2 * math.pi / 3 + math.pi / 3),
      1e-12)
    local quiet = run("der(x) = if noEvent(sin(w * time) > 0) then a else -b")
    assert.are.equal(0, #quiet:events())
    assert.is_near(tr.y.x[#tr.t], quiet.y.x[#quiet.t], 1e-4)
    local nested = run("der(x) = if sin(w * time) > 0.5 then a elseif sin(w * time) < -0.5 then -b else 0")
    assert.is_true(#nested:events() >= 6)
  end)

  it("is refused where it is malformed, naming the equation", function()
    has(err_of(saw, "der(x) = if sin(w * time) > 0 then a"), "f[1]", "'else' or 'elseif'")
    has(err_of(saw, "der(x) = if sin(w * time) > 0 a else b"), "f[1]", "expected 'then'")
  end)
end)

describe("spec errors of the richer constructs", function()
  local base = {
    states = { { name = "x", start = 0 } },
    parameters = { { name = "k", value = 1 } },
    f = { "der(x) = -k * x" },
  }
  local function with(fields)
    local t = {}
    for k, v in pairs(base) do t[k] = v end
    for k, v in pairs(fields) do t[k] = v end
    return t
  end
  it("names a bad input, a bad elsewhen and a start that reads a state", function()
    has(err_of(spec.describe_spec, with{ inputs = { { name = "u", t = { 0, 1 }, v = { 1 } } } }, "m"),
      "model 'm': input 'u'", "t has 2 values and v 1")
    has(err_of(spec.describe_spec, with{ f = { "der(x) = w(time)" } }, "m"), "unknown function 'w'")
    has(err_of(spec.describe_spec, with{ when = { { condition = "x > 1", reinit = "x = 0", elsewhen = { 3 } } } },
      "m"), "when[1] elsewhen[1] must be a table")
    has(err_of(spec.describe_spec, with{ states = { { name = "x", start = "2 * y" } } }, "m"),
      "state 'x' start", "depends on the parameters only, not on 'y'")
  end)
end)
