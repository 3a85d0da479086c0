-- The spec front end (salta.spec): the reference's JSON/YAML model files
-- parse into the right symbolic model, errors say where, resets solve.
local spec = require("salta.spec")
local expr = require("salta.expr")
local H = require("helpers")

local spec_path = H.spec_path

local CAUER = "dae_specification_cauer_events.json"
local BALLS = {
  { file = "dae_specification_bouncing_balls_N3.yaml", nx = 12, events = 15 },
  { file = "dae_specification_bouncing_balls_N7.yaml", nx = 28, events = 49 },
  { file = "dae_specification_bouncing_balls_N15.yaml", nx = 60, events = 165 },
}

-- Compiling is the slow part: one model per file per run.
local models = {}
local function load(file)
  models[file] = models[file] or spec.load(spec_path(file))
  return models[file]
end

-- A deterministic generator: failures must be repeatable.
local function rng(seed)
  local s = seed
  return function(lo, hi)
    s = (s * 6364136223846793005 + 1442695040888963407)
    return lo + (hi - lo) * (((s >> 11) & ((1 << 53) - 1)) / 2 ^ 53)
  end
end

local function close(a, b, tol)
  tol = tol or 1e-12
  return math.abs(a - b) <= tol * (1 + math.abs(b))
end

local function assert_close(a, b, what, tol)
  assert(close(a, b, tol), ("%s: got %.17g, expected %.17g"):format(what, a, b))
end

-- A small spec table; over replaces top-level keys.
local function tiny(over)
  local t = {
    states = { { name = "x", start = 1.0 }, { name = "v", start = 0.0 } },
    alg_vars = { { name = "w", start = 0.0 } },
    parameters = { { name = "k", value = 2.0 }, { name = "on", type = "bool", value = true } },
    f = { "der(x) = v", "der(v) = -k*x + w" },
    g = { "w = 0.5*x" },
    when = {},
  }
  for key, v in pairs(over or {}) do t[key] = v end
  return t
end

local function describe_error(tbl)
  local ok, err = pcall(spec.describe_spec, tbl, "tiny")
  assert(not ok, "expected an error")
  return err
end

-- err must mention every string in list (plain find).
local function assert_mentions(err, list)
  for _, s in ipairs(list) do
    assert(err:find(s, 1, true), ("error %q does not mention %q"):format(err, s))
  end
end

-- The variable environment of a described model: name -> value.
local function env_of(d, values)
  local env = {}
  for _, kind in ipairs({ "x", "z", "p" }) do
    for i, v in ipairs(d.vars[kind]) do env[v] = values[d[kind .. "_names"][i]] end
  end
  env[d.vars.t] = values.time or 0.0
  return env
end

describe("salta.spec files", function()
  it("loads the Cauer ladder with its sizes, parameter order and event", function()
    local m = load(CAUER)
    assert.are.equal("cauer_events", m.name)
    assert.are.equal(5, #m.states)
    assert.are.equal(3, #m.algebraics)
    assert.are.equal(35, #m.params)
    assert.are.same({ "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" }, m.states)
    assert.are.same(m.states, m.outputs)
    local file = spec.read(spec_path(CAUER))
    for i, p in ipairs(file.parameters) do
      assert.are.equal(p.name, m.params[i])
      assert.are.equal(p.value, m.p0[p.name])
    end
    assert.are.equal(1, #m.events)
    assert.are.equal(1, m.symbolic.e_dir[1])
  end)

  for _, b in ipairs(BALLS) do
    it("loads " .. b.file, function()
      local m = load(b.file)
      assert.are.equal(b.nx, #m.states)
      assert.are.equal(0, #m.algebraics)
      assert.are.equal(8, #m.params)
      assert.are.same({ "g", "e_g", "e_b", "d_sq", "y_max", "y_min", "x_max", "x_min" }, m.params)
      assert.are.equal(b.events, #m.events)
      assert.are.equal("Floor B1", m.events[1])
      assert.are.equal("Collision B1-B2", m.events[4 * (b.nx // 4) + 1])
      for j = 1, #m.events do assert.are.equal(-1, m.symbolic.e_dir[j]) end
    end)
  end

  it("evaluates the Cauer f and g as the equations the spec was exported from", function()
    local m = spec.load(spec_path(CAUER), { structural = false })   -- g's rows as the file has them
    local r = rng(7)
    local x, z = {}, {}
    for i = 1, 5 do x[i] = r(-1, 1) end
    for i = 1, 3 do z[i] = r(-1, 1) end
    local p = {}
    for i, n in ipairs(m.params) do p[i] = m.p0[n] * r(0.8, 1.2) end
    local P = {}
    for i, n in ipairs(m.params) do P[n] = p[i] end
    local t = r(0.9, 1.1)
    local L2_i, L1_i, C5_v, C3_v, C1_v = table.unpack(x)
    local z5, z3, z1 = table.unpack(z)
    local f = m:eval("f", t, x, z, p)
    local want_f = { (C3_v - C5_v) / P.L2_L, (C1_v - C3_v) / P.L1_L, z5, z3, z1 }
    for i = 1, 5 do assert_close(f[i], want_f[i], "f[" .. i .. "]") end
    local V = P.V_signalSource_offset
      + P.V_signalSource_height * (1 + math.tanh(50 * (t - P.V_signalSource_startTime))) / 2
    local want_g = {
      -(P.C5_C * z5 - P.C4_C * (z3 - z5) - L2_i) - C5_v / P.R2_R_actual,
      -(L1_i + P.C2_C * (z1 - z3) + P.C1_C * z1) + (V - C1_v) / P.R1_R_actual,
      L2_i + P.C4_C * (z3 - z5) + P.C3_C * z3 - P.C2_C * (z1 - z3) - L1_i,
    }
    local g = m:eval("g", t, x, z, p)
    for i = 1, 3 do assert_close(g[i], want_g[i], "g[" .. i .. "]", 1e-10) end
    -- guard C3_v - 0.5 (up) and reset C3_v := 0, nothing else moves
    assert_close(m:eval("guard", t, x, z, p)[1], C3_v - 0.5, "guard")
    local r1 = m:eval("reset", t, x, z, p, 1)
    for i = 1, 5 do assert_close(r1[i], i == 4 and 0 or x[i], "reset[" .. i .. "]") end
  end)

  it("resets ball 1 at the floor: vy+ = -e_g vy, y+ = y_min", function()
    local m = load(BALLS[1].file)
    local x = {}
    for i, n in ipairs(m.states) do x[i] = m.x0[n] end
    x[2], x[4] = -0.01, -3.25
    local p = { g = 9.81, e_g = 0.55, e_b = 0.6, d_sq = 0.05, y_max = 10, y_min = 0.125, x_max = 10, x_min = 0 }
    local r = m:eval("reset", 0.3, x, nil, p, "Floor B1")
    for i = 1, #x do
      local want = (i == 2 and 0.125) or (i == 4 and 0.55 * 3.25) or x[i]
      assert_close(r[i], want, "reset " .. m.states[i])
    end
    -- collision B1-B2: the four velocities scale by -e_b, positions stay
    local rc = m:eval("reset", 0.3, x, nil, p, "Collision B1-B2")
    for i = 1, #x do
      local vel = (i == 3 or i == 4 or i == 7 or i == 8)
      assert_close(rc[i], vel and -0.6 * x[i] or x[i], "collision " .. m.states[i])
    end
    assert_close(m:eval("guard", 0.3, x, nil, p)[1], -0.01 - 0.125, "floor guard")
  end)
end)

describe("salta.spec expressions", function()
  local env = {
    x = expr.var("x", 1, "x"), y = expr.var("x", 2, "y"),
    a = expr.var("p", 1, "a"), b = expr.var("p", 2, "b"), c = expr.var("p", 3, "c"),
  }
  local vals = { [env.x] = 1.5, [env.y] = -0.75, [env.a] = 2.0, [env.b] = 3.0, [env.c] = 5.0 }
  local function ev(s) return expr.eval(spec.parse_expression(s, env, "test"), vals) end

  it("gives power precedence over unary minus, right associativity and left-assoc minus", function()
    assert_close(ev("-x^2"), -2.25, "-x^2")
    assert_close(ev("-x**2"), -2.25, "-x**2")
    assert_close(ev("2**3**2"), 512, "2**3**2")
    assert_close(ev("2^3^2"), 512, "2^3^2")
    assert_close(ev("a-b-c"), -6, "a-b-c")
    assert_close(ev("a/b/c"), 2 / 15, "a/b/c")
    assert_close(ev("a-b*c"), -13, "a-b*c")
    assert_close(ev("2**-x*3"), 3 * 2 ^ -1.5, "2**-x*3")
    assert_close(ev("(a-b)*-c"), 5, "(a-b)*-c")
    assert_close(ev("+a - -b"), 5, "+a - -b")
  end)

  it("reads every number form", function()
    assert_close(ev("1e-3 + .5 + 2. + 1.25E+2"), 0.001 + 0.5 + 2 + 125, "numbers")
  end)

  it("knows the function table", function()
    assert_close(ev("tanh(x) + sin(y) + exp(a)"), math.tanh(1.5) + math.sin(-0.75) + math.exp(2), "unary")
    assert_close(ev("pow(a, b) + min(x, y) + max(x, y)"), 8 + -0.75 + 1.5, "binary")
    assert_close(ev("sigmoid(y) + sign(y) + floor(x) + ceil(x) + abs(y)"),
      1 / (1 + math.exp(0.75)) - 1 + 1 + 2 + 0.75, "others")
    assert_close(ev("log10(c) + sqrt(b) + atan(a)"), math.log(5, 10) + math.sqrt(3) + math.atan(2), "more")
  end)

  it("maps time to t", function()
    local d = spec.describe_spec(tiny({ f = { "der(x) = time", "der(v) = 0" } }), "tiny")
    assert.are.equal(d.vars.t, d.f[1])
  end)
end)

describe("salta.spec errors", function()
  local function cauer_with(key, index, text)
    local t = spec.read(spec_path(CAUER))
    if index then t[key][index] = text else t[key] = text end
    local ok, err = pcall(spec.describe_spec, t, "cauer")
    assert(not ok, "expected an error")
    return err
  end

  it("names an unknown name with its column", function()
    local err = cauer_with("g", 2, "0 = L1_i + C9_C")
    assert_mentions(err, { "model 'cauer'", "g[2]", "unknown name 'C9_C'", "column 12", '"0 = L1_i + C9_C"' })
  end)

  it("names an unknown function", function()
    assert_mentions(cauer_with("g", 1, "0 = foo(L1_i)"), { "model 'cauer'", "g[1]", "unknown function 'foo'", "column 5" })
  end)

  it("reports syntax errors and the end of the equation", function()
    assert_mentions(cauer_with("g", 3, "0 = (L1_i))"), { "g[3]", "syntax error: unexpected ')'", "column 11" })
    assert_mentions(cauer_with("g", 3, "0 = L1_i *"), { "g[3]", "unexpected end of equation" })
    assert_mentions(cauer_with("g", 3, "0 = L1_i # 2"), { "g[3]", "unexpected character '#'", "column 10" })
    assert_mentions(cauer_with("g", 3, "L1_i"), { "g[3]", "unexpected end of equation", "'='" })
    assert_mentions(cauer_with("g", 3, "0 = sin(L1_i, L2_i)"), { "g[3]", "'sin' takes 1 argument" })
  end)

  it("checks the f equations against the states", function()
    assert_mentions(cauer_with("f", 3, "der(C9_v) = DER_C5_v"), { "f[3]", "'C9_v' is not a state", "column 5" })
    assert_mentions(cauer_with("f", 3, "der(L2_i) = DER_C5_v"), { "f[3]", "second equation for der(L2_i)", "f[1]" })
    assert_mentions(cauer_with("f", 3, "C5_v = DER_C5_v"), { "f[3]", "der(<state>)" })
    assert_mentions(cauer_with("f", 3, "der(C5_v) = der(C3_v)"), { "f[3]", "der(...) is only allowed", "column 13" })
    local t = spec.read(spec_path(CAUER))
    table.remove(t.f, 2)
    local ok, err = pcall(spec.describe_spec, t, "cauer")
    assert.is_false(ok)
    assert_mentions(err, { "model 'cauer'", "no equation der(L1_i)" })
  end)

  it("allows prev only in reinit and wants one comparison in conditions", function()
    assert_mentions(cauer_with("g", 1, "0 = prev(L1_i)"), { "g[1]", "prev(...) is only allowed in reinit" })
    local when = { { condition = "C3_v = 0.5", reinit = "C3_v = 0" } }
    assert_mentions(cauer_with("when", nil, when), { "when[1] condition", "unexpected '='", "column 6" })
    when[1].condition = "C3_v > 0.5 > 0"
    assert_mentions(cauer_with("when", nil, when), { "when[1] condition", "unexpected '>'", "column 12" })
  end)

  it("rejects ill-posed reinits", function()
    local function reinit_err(list)
      return describe_error(tiny({ when = { { condition = "x < 0", reinit = list } } }))
    end
    assert_mentions(reinit_err({ "x = 0", "x + v = 1" }), { "model 'tiny'", "when[1] reinit[2]", "'x' and 'v'", "column 5" })
    assert_mentions(reinit_err({ "x = 0", "x = 1" }), { "when[1] reinit[2]", "'x' is already reset by when[1] reinit[1]" })
    assert_mentions(reinit_err("k = prev(x)"), { "when[1] reinit", "no state appears after the event" })
    assert_mentions(reinit_err("x = w"), { "algebraic variable 'w'", "not supported", "column 5" })
    assert_mentions(reinit_err("floor(x) = 1"), { "does not determine 'x'" })
  end)

  it("reports unreadable files with the path", function()
    local ok, err = pcall(spec.load, "/nonexistent/dir/model.json")
    assert.is_false(ok)
    assert_mentions(err, { "salta.load_spec: /nonexistent/dir/model.json:", "cannot open" })
    local function with_file(ext, text)
      local path = H.temp_file(text, ext)
      local ok2, err2 = pcall(spec.load, path)
      os.remove(path)
      assert.is_false(ok2)
      return err2, path
    end
    local e1, p1 = with_file(".json", "{ \"states\": [ ")
    assert_mentions(e1, { "salta.load_spec: " .. p1 .. ":", "bad JSON" })
    local e2, p2 = with_file(".yaml", "f: [a, b\n  - : :")
    assert_mentions(e2, { "salta.load_spec: " .. p2 .. ":", "bad YAML" })
    local e3, p3 = with_file(".yaml", "parameters: []\n")
    assert_mentions(e3, { "salta.load_spec: " .. p3 .. ":", "missing 'states'" })
  end)
end)

describe("salta.spec descriptions", function()
  it("solves linear implicit reinits symbolically", function()
    local file = spec.read(spec_path(BALLS[1].file))
    local d = spec.describe_spec(file, "balls")
    assert.are.equal("Floor B1", d.e_names[1])
    local r = d.r[1]   -- the states the reinit sets, by index: y1 and vy1 only
    for i, e in pairs(r) do
      assert.is_true(i == 2 or i == 4)
      for v in pairs(expr.deps(e)) do assert.are_not.equal("u", v.kind) end
    end
    local values = { time = 0.1, y1 = -0.02, vy1 = -2.5, e_g = 0.7, y_min = 0.3 }
    for i, n in ipairs(d.x_names) do values[n] = values[n] or i end
    for i, n in ipairs(d.p_names) do values[n] = values[n] or file.parameters[i].value end
    local env = env_of(d, values)
    assert_close(expr.eval(r[4], env), 0.7 * 2.5, "vy1+")
    assert_close(expr.eval(r[2], env), 0.3, "y1+")
    assert.are_not.equal("implicit", r[4].op)
    assert.are.equal(d.vars.p[6], r[2])   -- y1+ is y_min itself
  end)

  it("keeps a nonlinear reinit as an implicit node that solves it", function()
    local d = spec.describe_spec(tiny({ when = { { condition = "x > 2", reinit = "x^3 + x = prev(v)" } } }), "tiny")
    local rx = d.r[1][1]
    assert.are.equal("implicit", rx.op)
    assert.is_nil(d.r[1][2])   -- v keeps its value
    local env = env_of(d, { x = 0.4, v = 3.7, w = 0, k = 2, on = 1 })
    local u = expr.eval(rx, env)
    assert_close(u ^ 3 + u, 3.7, "x+^3 + x+")
    -- the compiled reset runs the same Newton iteration
    local m = require("salta.model").build(d)
    local r = m:eval("reset", 0, { 0.4, 3.7 }, { 0 }, { 2, 1 }, 1)
    assert_close(r[1] ^ 3 + r[1], 3.7, "compiled x+^3 + x+")
    assert_close(r[2], 3.7, "compiled v+")
  end)

  it("reads explicit reinits that use pre-event values", function()
    local d = spec.describe_spec(tiny({ when = { { condition = "x >= 2", reinit = "v = -k*prev(v) + prev(x)" } } }), "tiny")
    local env = env_of(d, { x = 0.4, v = 3.7, w = 0, k = 2, on = 1 })
    assert_close(expr.eval(d.r[1][2], env), -2 * 3.7 + 0.4, "v+")
    assert.is_nil(d.r[1][1])   -- x keeps its value
  end)

  it("turns conditions into guards with directions", function()
    local when = {}
    for i, c in ipairs({ "x > 2", "x >= 2", "x < 2", "x <= 2", "2 < x" }) do
      when[i] = { condition = c, reinit = "x = 0" }
    end
    local d = spec.describe_spec(tiny({ when = when }), "tiny")
    assert.are.same({ 1, 1, -1, -1, -1 }, d.e_dir)
    local env = env_of(d, { x = 0.5, v = 0, w = 0, k = 2, on = 1 })
    assert_close(expr.eval(d.e[1], env), -1.5, "x - 2")
    assert_close(expr.eval(d.e[5], env), 1.5, "2 - x")
  end)

  it("names events by unique comments, else when<i>", function()
    local when = {
      { comment = "hit", condition = "x < 0", reinit = "x = 0" },
      { comment = "twice", condition = "x < 1", reinit = "x = 1" },
      { comment = "twice", condition = "x < 2", reinit = "x = 2" },
      { condition = "x < 3" },
      { comment = "when5", condition = "x < 4" },
      { comment = "when4", condition = "x < 5" },
    }
    local d = spec.describe_spec(tiny({ when = when }), "tiny")
    assert.are.same({ "hit", "when2", "when3", "when4", "when5", "when4_2" }, d.e_names)
    -- a clause without reinit leaves every state alone
    assert.are.same({}, d.r[4])
  end)

  it("reads h outputs, g forms and bool parameters", function()
    local d = spec.describe_spec(tiny({ h = { "energy = 0.5*v^2 + 0.5*k*x^2", "pos = x" },
      g = { "0 = w - x" } }), "tiny")
    assert.are.same({ "energy", "pos" }, d.y_names)
    assert.are.equal(d.vars.x[1], d.h[2])
    local env = env_of(d, { x = 2, v = 3, w = 5, k = 2, on = 1 })
    assert_close(expr.eval(d.h[1], env), 8.5, "energy")
    assert_close(expr.eval(d.g[1], env), 3, "g (0 = e gives e)")
    assert.are.same({ 2, 1 }, d.p_nominal)
    local d2 = spec.describe_spec(tiny({ g = { "2*w = x" }, h = {} }), "tiny")
    assert_close(expr.eval(d2.g[1], env), 8, "g (lhs - rhs)")
    assert.are.same({ "x", "v" }, d2.y_names)
  end)

  it("takes the model name from opts or the file name", function()
    local m = spec.load(spec_path(CAUER), { name = "ladder" })
    assert.are.equal("ladder", m.name)
  end)
end)
