-- salta.load_modelica: each construct of models/modelica/constructs.bmo
-- against its closed form, and what is refused (named, with its line).
local salta = require("salta")
local H = require("helpers")

local FILE = "models/modelica/constructs.bmo"
local function load(name) return salta.load_modelica(FILE, { model = name }) end

local function near(a, b, tol, what)
  assert(math.abs(a - b) <= tol, ("%s: %.12g, expected %.12g"):format(what or "value", a, b))
end

-- A model file from text, loaded (or the error it raises).
local function load_text(text, opts)
  local path = H.temp_file(text, ".bmo")
  local ok, m = pcall(salta.load_modelica, path, opts)
  os.remove(path)
  if not ok then error(m, 0) end
  return m
end

local function model_text(decls, eqs)
  return ("package 'T'\n  model 'T'\n%s\n  equation\n%s\n  end 'T';\nend 'T';\n"):format(decls, eqs)
end

describe("load_modelica: constructs against closed forms", function()
  it("when, reinit, pre, an Integer counter, edge and terminate: the ball stops at its third bounce", function()
    local m = load("Ball")
    local tr = m:simulate{ tf = 3, rtol = 1e-10, atol = 1e-12 }
    local g, e, h0 = 9.81, 0.5, 1.0
    local t1 = math.sqrt(2 * h0 / g)
    local v1 = g * t1
    local t3 = t1 + 2 * e * v1 / g + 2 * e * e * v1 / g
    near(tr.t_end, t3, 1e-8, "the third bounce")
    assert.are.equal("stop", tr:stats().terminal_event)
    local floors = 0
    for _, ev in ipairs(tr:events()) do
      if ev.name == "floor" then
        floors = floors + 1
        assert.are.equal(floors, ev.x_plus.n)
        near(ev.x_plus.v, -e * ev.x_minus.v, 1e-12, "the reinit")
      end
    end
    assert.are.equal(3, floors)
  end)

  it("if-expressions on time and on a state, an if-equation, noEvent and smooth", function()
    local m = load("Switched")
    local tr = m:simulate{ tf = 2, times = { 0.3, 0.45, 0.8, 1.0, 1.3, 1.6, 2.0 }, rtol = 1e-10, atol = 1e-12 }
    for k, t in ipairs(tr.t) do
      local x = t < 1 and t or 2 - t
      near(tr.y.x[k], x, 1e-9, "x at " .. t)
      near(tr.y.y[k], x > 0.5 and 2 * x or x, 1e-8, "y at " .. t)
      near(tr.y.w[k], x > 0.25 and 1 or 0, 0, "w at " .. t)
      near(tr.y.s[k], x * x, 1e-9, "s at " .. t)
    end
    -- the time switch and the state switch are events (modes), noEvent's is not
    local names = {}
    for _, ev in ipairs(tr:events()) do names[#names + 1] = ev.name end
    assert.is_true(#names >= 3)
  end)

  it("der(x) not isolated: solved where linear, an algebraic der(x) where not", function()
    local m = load("Implicit")
    assert.are.same({ "der(x)" }, m.algebraics)
    local tr = m:simulate{ tf = 2, rtol = 1e-10, atol = 1e-12 }
    for k, t in ipairs(tr.t) do
      near(tr.y.x[k], 1 + math.log(1.5) * t, 1e-8, "x at " .. t)
      near(tr.y.v[k], 2 * math.exp(-1.5 * t), 1e-8, "v at " .. t)
    end
  end)

  it("initial(), an initial equation, Evaluate = true and constants", function()
    local m = load("Init")
    assert.are.same({ "p", "x0" }, m.params)
    local tr = m:simulate{ tf = 2, rtol = 1e-10, atol = 1e-12 }
    for k, t in ipairs(tr.t) do near(tr.y.x[k], 0.25 * math.exp(-3 * t), 1e-9, "x at " .. t) end
    -- the start follows the parameters: gradients in x0 and p
    local tr2 = m:simulate{ tf = 1, params = { p = 1, x0 = 2 } }
    near(tr2.y.x[#tr2.t], 2 * math.exp(-2), 1e-6, "x(1)")
  end)

  it("an assert on the parameters is checked at every simulate; warnings are dropped", function()
    local m = load("Checked")
    m:simulate{ tf = 1 }
    H.has(H.err_of(function() m:simulate{ tf = 1, params = { R = -1 } } end), "assert failed", "R must be positive")
    H.has(H.err_of(load_text, model_text("    parameter Real 'R' = -2.0;\n    Real 'x'(start = 1.0);",
      "    assert('R' > 0.0, \"R must be positive\");\n    der('x') = -'x';")), "R must be positive")
  end)

  it("the experiment annotation sets simulate's defaults", function()
    local m = load_text(model_text("    Real 'x'(start = 1.0, fixed = true);", "    der('x') = -'x';\n"
      .. "    annotation(experiment(StartTime = 1, StopTime = 2, Tolerance = 1e-9, Interval = 0.1));"))
    local tr = m:simulate()
    assert.are.equal(11, #tr.t)
    near(tr.t[1], 1, 0); near(tr.t[11], 2, 1e-15)
    near(tr.y.x[11], math.exp(-1), 1e-7)
  end)
end)

describe("load_modelica: what is refused, named with its line", function()
  local cases = {
    { "an algorithm section", model_text("    Real 'x';", "    der('x') = 1.0;\n  algorithm\n    'x' := 1;"),
      ":6:3: an algorithm section is not supported" },
    { "a function with a loop", "package 'T'\n  function 'f'\n    input Real 'u';\n    output Real 'y';\n"
      .. "  algorithm\n    for i in 1:3 loop 'y' := 'u'; end for;\n  end 'f';\n  model 'T'\n    Real 'x';\n"
      .. "  equation\n    der('x') = 'f'('x');\n  end 'T';\nend 'T';\n",
      ":2:3: function 'f' (it has a for loop) is not supported" },
    { "an array variable", model_text("    Real 'x'[3];", "    der('x') = 1.0;"), ":3:13: an array variable is not supported" },
    { "a for-equation", model_text("    Real 'x';", "    for i in 1:2 loop\n      der('x') = 1.0;\n    end for;"),
      ":5:5: a for-equation is not supported" },
    { "an unknown function", model_text("    Real 'x';", "    der('x') = 'g'('x');"),
      ":5:16: function 'g' is not supported" },
    { "a syntax error", model_text("    Real 'x';", "    der('x') = = 1.0;"), ":5:16: syntax error near '= 1.0;'" },
    { "an unknown name", model_text("    Real 'x';", "    der('x') = 'y';"), ":5:16: unknown name 'y'" },
    { "sample()", model_text("    discrete Real 'd';", "    when sample(0, 1) then\n      'd' = 1.0;\n    end when;"),
      "sample() (a sampled when-equation) is not supported" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function() H.has(H.err_of(load_text, c[2]), c[3]) end)
  end

  it("a when-equation reading a value it sets without pre()", function()
    H.has(H.err_of(load_text, model_text("    Real 'x'(start = 0);\n    Integer 'n';",
      "    der('x') = 1.0;\n    when 'x' > 1.0 then\n      'n' = 'n' + 1;\n    end when;")),
      ":8:13: 'n' is set by this when-equation: read its value before the event as pre(n)")
  end)

  it("an unknown option", function()
    H.has(H.err_of(salta.load_modelica, FILE, { modle = "Ball" }), "unknown option 'modle'")
  end)
end)
