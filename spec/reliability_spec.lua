-- Bad input gets a clear error and loses nothing: each case here crashed,
-- answered silently wrong, lost a file or gave an unhelpful message before
-- (issue 12), and must now fail with a message that names the function,
-- the option or model element, and the value.
local H = require("helpers")
local salta = require("salta")

local err_of, has = H.err_of, H.has

-- A falling body and a loss on its height, free g.
local function drop()
  local m = salta.dae{ name = "drop", states = { { "h", 1 }, { "v", 0 } }, params = { { "g", 9.81 } },
    f = function(t, x, z, p) return { x.v, -p.g } end }
  return m, salta.lsq{ model = m, times = { 0.1, 0.2 }, data = { h = { 1, 1 } }, free = { "g" } }
end

describe("a model the structural compiler cannot make index-1", function()
  it("is refused at build time when its constraints leave no state free, naming them (salta.dae)", function()
    -- q' = v, v' = lam, 0 = q - 1: index 3, and the constraint fixes q, v and lam alike
    local msg = err_of(salta.dae, { name = "pend", states = { { "q", 1 }, { "v", 0 } }, algebraics = { { "lam", 0 } },
      f = function(t, x, z) return { x.v, z.lam } end,
      g = function(t, x, z) return { x.q - 1 } end })
    has(msg, "model 'pend'", "no differential state", "the constraints 0 = -1 + q", "'q', 'v'")
  end)
  it("is refused from a spec too when structurally singular, and a structurally full dg/dz passes", function()
    local spec = require("salta.spec")
    local model = require("salta.model")
    local bad = spec.describe_spec({ states = { { name = "x", start = 1 } }, alg_vars = { { name = "a", start = 0 },
      { name = "b", start = 0 } }, parameters = {}, f = { "der(x) = a + b" }, g = { "a = 2*x", "0 = a*a - x" } }, "two")
    has(err_of(model.build, bad), "model 'two'", "structurally singular", "determine 'b'", "g[2]")
    local good = spec.describe_spec({ states = { { name = "x", start = 1 } }, alg_vars = { { name = "a", start = 0 },
      { name = "b", start = 0 } }, parameters = {}, f = { "der(x) = a + b" }, g = { "a = 2*x", "b = a*a" } }, "two_ok")
    assert.is_true(#model.build(good):simulate{ tf = 0.1 }.t > 0)
  end)
end)

describe("a borrowed object that was closed", function()
  local function ball()
    return salta.dae{ name = "drop", states = { { "h", 1 }, { "v", 0 } }, params = { { "g", 9.81 } },
      f = function(t, x, z, p) return { x.v, -p.g } end }
  end
  it("makes a loss on a closed model refuse to run instead of reading freed memory", function()
    local m = ball()
    local L = salta.lsq{ model = m, times = { 0.1, 0.2 }, data = { h = { 1, 1 } }, free = { "g" } }
    assert.is_true(L:value({ 9.81 }) > 0)
    m.core:close()
    has(err_of(L.value, L, { 9.81 }), "the loss's model is closed")
    has(err_of(m.simulate, m, { tf = 1 }), "the model is closed")
  end)
  it("makes a model whose compiled code was closed refuse to run", function()
    local m = ball()
    local jit_ud = debug.getuservalue(m.core, 1)
    getmetatable(jit_ud).__close(jit_ud)
    has(err_of(m.simulate, m, { tf = 1 }), "compiled code is closed")
  end)
end)

describe("integer and choice options", function()
  local m, L = drop()
  it("are range-checked before any cast, naming the option and the value given", function()
    has(err_of(L.grad, L, { 9.81 }, { method = "adjoint", mesh = 2 ^ 30 | 0 }), "option 'mesh'", "got 1073741824")
    has(err_of(L.grad, L, { 9.81 }, { method = "adjoint", mesh = (1 << 32) + 5 }), "option 'mesh'", "got 4294967301")
    has(err_of(L.grad, L, { 9.81 }, { method = "adjoint", mesh = 0 }), "option 'mesh'", "got 0")
    has(err_of(m.simulate, m, { tf = 1, max_events = -2147483648 }), "model 'drop': simulate: option 'max_events'",
      "from 0 to", "got -2147483648")
    has(err_of(m.simulate, m, { tf = 1, max_events = 1 << 40 }), "option 'max_events'", "got 1099511627776")
    has(err_of(m.simulate, m, { tf = 1, max_order = 2.5 }), "option 'max_order' must be an integer, got 2.5")
    has(err_of(m.simulate, m, { tf = 1, max_order = 7 }), "option 'max_order'", "from 1 to 5", "got 7")
    has(err_of(m.simulate, m, { tf = 1, max_steps = 0 }), "option 'max_steps'", "got 0")
  end)
  it("name the option and what was given instead of 'bad argument #-2'", function()
    has(err_of(m.simulate, m, { tf = 1, rtol = "1e-6" }), "model 'drop': simulate: option 'rtol' must be a number, got the string '1e-6'")
    has(err_of(m.simulate, m, { tf = 1, method = "rk4" }), "option 'method' must be one of \"bdf\", \"erk\"", "got rk4")
    has(err_of(m.simulate, m, { tf = 1, linear_solver = 3 }), "option 'linear_solver'", "got 3")
    has(err_of(m.simulate, m, { tf = 1, atol = { 1e-8, -1 } }), "atol for 'v' must be positive", "got -1")
  end)
end)

describe("code generation", function()
  it("compiles a reinit nonlinear in its own state with a parameter (y ^ k = 2), and solves it", function()
    local spec = require("salta.spec")
    local d = spec.describe_spec({ states = { { name = "y", start = 1 } }, parameters = { { name = "k", value = 3 } },
      f = { "der(y) = -y" }, when = { { condition = "y < 0.5", reinit = "y ^ k = 2" } } }, "pw")
    local m = require("salta.model").build(d)
    local ev = m:simulate{ tf = 1, rtol = 1e-10, atol = 1e-12 }:events()
    assert.are.equal(1, #ev)
    assert.is_near(math.log(2), ev[1].t, 1e-9)
    assert.is_near(2 ^ (1 / 3), ev[1].x_plus.y, 1e-12)
  end)
end)

describe("a gradient that is not finite", function()
  -- sqrt(k x) at x = 0: the loss is finite, d/dk and d/dx of f are not
  local m = salta.dae{ name = "root", states = { { "x", 0 } }, params = { { "k", 2 } },
    f = function(t, x, z, p) return { salta.sqrt(p.k * x.x) + 1 } end }
  for _, method in ipairs({ "bdf", "erk" }) do
    it(("is an error naming the parameter, the time and the kernel, never a silent NaN (%s)"):format(method), function()
      local L = salta.lsq{ model = m, times = { 0.5, 1 }, data = { x = { 1, 2 } }, free = { "k" }, method = method }
      assert.is_true(L:value({ 2 }) > 0)   -- the loss itself is fine
      for _, call in ipairs({ L.grad, L.jacobian }) do
        has(err_of(call, L, { 2 }), "model 'root'", "by parameter 'k'", "at t = 0", "the kernel df/dx", "= inf")
      end
    end)
  end
  it("stops the adjoint's discrete trajectory with the kernel, instead of a zero Newton step", function()
    local L = salta.lsq{ model = m, times = { 0.5, 1 }, data = { x = { 1, 2 } }, free = { "k" } }
    has(err_of(L.grad, L, { 2 }, { method = "adjoint", mesh = 10 }), "model 'root': adjoint", "the kernel df/dx")
  end)
end)

describe("a typo in an option table", function()
  local function drop(extra, ev_extra)
    local spec = { name = "drop", states = { { "h", 1 }, { "v", 0 } }, params = { { "g", 9.81 } },
      f = function(t, x, z, p) return { x.v, -p.g } end,
      events = { { name = "floor", direction = "down", guard = function(t, x) return x.h end,
        reset = function(t, x) return { v = -0.5 * x.v } end } } }
    for k, v in pairs(extra or {}) do spec[k] = v end
    for k, v in pairs(ev_extra or {}) do spec.events[1][k] = v end
    return spec
  end
  it("is an error that suggests the nearest valid key: salta.dae and its events", function()
    has(err_of(salta.dae, drop({ paramaters = { { "e", 1 } } })), "salta.dae 'drop': unknown option 'paramaters'",
      "did you mean 'parameters'?")
    has(err_of(salta.dae, drop(nil, { directon = "up" })), "model 'drop': event 1: unknown option 'directon'",
      "did you mean 'direction'?")
    has(err_of(salta.dae, drop(nil, { rest = function() end })), "unknown option 'rest'", "did you mean 'reset'?")
  end)
  it("is an error in loss:grad options, fit options and load_spec options", function()
    local m = salta.dae(drop())
    local L = salta.lsq{ model = m, times = { 0.1, 0.2 }, data = { h = { 1, 1 } }, free = { "g" } }
    has(err_of(L.grad, L, { 9.81 }, { metod = "fd" }), "salta.lsq: grad: unknown option 'metod'", "did you mean 'method'?")
    has(err_of(L.grad, L, { 9.81 }, { method = "adjoint", mesh = 10, forwrd = "ida" }), "did you mean 'forward'?")
    has(err_of(salta.fit, { loss = L, method = "adam", max_iters = 3 }), "salta.fit: unknown option 'max_iters'",
      "did you mean 'max_iter'?")
    has(err_of(salta.fit, { loss = L, method = "adam", gradient = { method = "adjoint", mseh = 5 } }),
      "option 'gradient': unknown option 'mseh'", "did you mean 'mesh'?")
    local path = H.temp_file('{"states": [{"name": "x", "start": 1}], "f": ["der(x) = -x"]}', ".json")
    has(err_of(salta.load_spec, path, { nmae = "q" }), "salta.load_spec: unknown option 'nmae'", "did you mean 'name'?")
    os.remove(path)
  end)
  it("of type is an error naming the option and the value", function()
    has(err_of(salta.dae, drop({ name = 5 })), "salta.dae: option 'name' must be a string, got 5")
    local m = salta.dae(drop())
    has(err_of(salta.lsq, { model = m, times = { 0.1 }, data = { h = { 1 } }, free = "g" }),
      "option 'free' must be a list of names, got the string 'g'", "free = { \"g\" }")
    has(err_of(salta.lsq, { model = m, times = { 0.1 }, data = { h = { 1 } }, blend = "yes" }),
      "salta.lsq: option 'blend' must be a number, got the string 'yes'")
  end)
end)

describe("values that were silently accepted", function()
  local m, L = drop()
  it("bounds: inverted or NaN, for every method", function()
    for _, method in ipairs({ "adam", "lbfgsb" }) do
      has(err_of(salta.fit, { loss = L, method = method, lower = { 10 }, upper = { 9 }, print_every = 0 }),
        "salta.fit: the bounds of 'g' are inverted: lower 10 > upper 9")
      has(err_of(salta.fit, { loss = L, method = method, lower = { 0 / 0 }, print_every = 0 }),
        "salta.fit: the bounds of 'g' must be numbers")
    end
  end)
  it("a difference step h = 0", function()
    has(err_of(L.grad, L, { 9.81 }, { method = "fd", h = 0 }), "option 'h' must be > 0", "got 0")
  end)
  it("a spec's 0/0, folded to 1 before", function()
    local spec = require("salta.spec")
    has(err_of(spec.describe_spec, { states = { { name = "x", start = 1 } }, f = { "der(x) = 0/0 * x" } }, "nan"),
      "model 'nan': f[1]: the constant expression is NaN", "column 11")
    local expr = require("salta.expr")
    local v = expr.div(expr.ZERO, expr.ZERO).value
    assert.is_true(v ~= v, "0/0 folds to NaN")
  end)
end)

describe("files", function()
  local read = H.read_file
  it("a failed write leaves an existing file as it was (json, csv, trajectory)", function()
    local path = H.temp_file("precious\n")
    local cyclic = { a = 1 }
    cyclic.self = cyclic
    has(err_of(salta.json.write, path, cyclic), "salta.json: cannot encode a table that contains itself")
    assert.are.equal("precious\n", read(path))
    has(err_of(salta.write_csv, path, { "a", "b" }, { a = { 1, 2 }, b = { 1 } }), "column 'b' has 1 rows, expected 2")
    assert.are.equal("precious\n", read(path))
    has(err_of(salta.write_csv, path, { "a" }, { a = { 1, "x" } }), "column 'a' row 2 holds x")
    assert.are.equal("precious\n", read(path))
    -- and a successful one replaces it whole
    salta.write_csv(path, { "a" }, { a = { 1.5 } })
    assert.are.equal("a\n1.5\n", read(path))
    os.remove(path)
  end)
  it("a failed write into a folder that does not exist names the path", function()
    has(err_of(salta.json.write, "/nonexistent/dir/out.json", { 1 }), "salta.json.write: /nonexistent/dir/out.json: cannot write")
  end)
  it("salta compile refuses to write over its input", function()
    local src = H.temp_file([[return require("salta").dae{ name = "tiny", states = { { "x", 1 } },
      f = function(t, x) return { -x.x } end }]], ".lua")
    local before = read(src)
    has(err_of(require("salta.aot").main, { src, "-o", src }), "salta compile:", "is the input file")
    local alias = src:gsub("^/tmp/", "/tmp/./")
    has(err_of(require("salta.aot").main, { src, "-o", alias }), "is the input file")
    assert.are.equal(before, read(src))
    os.remove(src)
  end)
end)

describe("messages that help", function()
  local m, L = drop()
  local function clean(msg)   -- no internal file positions
    assert(not msg:find("lua/salta/", 1, true) and not msg:find("bad argument", 1, true), msg)
    return msg
  end
  it("for optimiser options and bounds", function()
    has(clean(err_of(salta.fit, { loss = L, method = "lbfgsb", m = 0, print_every = 0 })),
      "salta.fit: option 'm' must be >= 1, got 0")
    has(clean(err_of(salta.optim.lbfgsb, function(x) return x[1] ^ 2, { 2 * x[1] } end, { 1 },
      { lower = { 2 }, upper = { 1 } })), "lbfgsb: bound 1: lower 2.0", "> upper 1.0")
    has(clean(err_of(salta.lsq, { model = m, times = { 0.1 }, data = { h = { 1 } }, blend = -1 })),
      "salta.lsq: option 'blend' must be >= 0, got -1")
  end)
  it("for an algebraic loop, instead of an IDAS corrector failure", function()
    -- structurally singular: refused when built
    local spec = { name = "loop", states = { { "x", 1 } }, algebraics = { { "a", 0 }, { "b", 0 } },
      f = function(t, x, z) return { -x.x + z.a } end, g = function(t, x, z) return { z.a - z.b, z.b - z.a } end }
    has(clean(err_of(salta.dae, spec)), "model 'loop'", "structurally singular", "0 = b - a", "repeats another")
    -- numerically singular: found at the initial state (without the structural compiler)
    spec.structural = false
    local loop = salta.dae(spec)
    has(clean(err_of(loop.simulate, loop, { tf = 1 })), "model 'loop': dg/dz is singular at the initial state",
      "algebraic loop")
  end)
  it("for a tolerance below round-off and for a blow-up, instead of IDAS's 'tstop is behind t'", function()
    has(clean(err_of(m.simulate, m, { tf = 1, rtol = 1e-300 })), "option 'rtol' must be >= 1e-14", "got 1e-300")
    local blow = salta.dae{ name = "blow", states = { { "x", 1 } }, f = function(t, x) return { x.x * x.x } end }
    has(clean(err_of(blow.simulate, blow, { tf = 2 })), "model 'blow'", "state 'x'", "blows up")
    has(clean(err_of(blow.simulate, blow, { tf = 2, method = "erk" })), "model 'blow'", "with state 'x' at",
      "blow up")
  end)
  it("for a bad datum: the column, the row and the time", function()
    has(clean(err_of(salta.lsq, { model = m, times = { 0.1, 0.2 }, data = { h = { 1, "x" } } })),
      "salta.lsq: data for 'h' at row 2 (t = 0.2) is the string 'x', not a number")
  end)
  it("for a fit with max_iter = 0, which prints its start", function()
    for _, method in ipairs({ "adam", "lbfgsb", "lm" }) do
      local fit = salta.fit{ loss = L, method = method, max_iter = 0, print_every = 0 }
      local text = tostring(fit)
      assert(text:find(method .. ": not converged: maximum iterations", 1, true), text)
      assert(not text:find("nan", 1, true), text)
      -- the start's loss (ERK's run without sensitivities takes its own steps)
      assert(math.abs(L:value({ 9.81 }) - fit.loss) <= 1e-12 * fit.loss, fit.loss)
    end
  end)
end)

describe("the adjoint on a stiff model", function()
  -- x' = -k (x - cos(w t)) from x = 0: the trapezoid on a 50-node mesh
  -- rings on the fast transient; the integrator's steps resolve it
  local m = salta.dae{ name = "stiff", states = { { "x", 0 } }, params = { { "k", 1000 }, { "w", 1 } },
    f = function(t, x, z, p) return { -p.k * (x.x - salta.cos(p.w * t)) } end }
  local times = H.uniform(1, 20)
  local tr = m:simulate{ tf = 1, times = times, rtol = 1e-10, atol = 1e-12 }
  local L = salta.lsq{ model = m, times = times, data = { x = tr.y.x }, free = { "w" }, rtol = 1e-8, atol = 1e-10 }
  it("defaults to the integrator's steps, whose discrete loss is the loss", function()
    local exact, steps = L:value({ 1.1 }), L:value({ 1.1 }, { method = "adjoint" })
    assert.is_near(exact, steps, 1e-3 * exact)
    assert.are.equal(steps, L:value({ 1.1 }, { method = "adjoint", mesh = "steps" }))
  end)
  it("flags a uniform mesh whose discrete loss is far from the loss, and a fit refuses it", function()
    local ok, why = L:mesh_check({ 1.1 }, { method = "adjoint", mesh = 50 })
    assert.is_false(ok)
    has(why, "uniform mesh of 50 nodes", "more than 10 % apart", "mesh = \"steps\"")
    has(err_of(salta.fit, { loss = L, method = "adam", gradient = { method = "adjoint", mesh = 50 }, print_every = 0 }),
      "salta.fit: the adjoint's uniform mesh of 50 nodes")
    assert.is_true((L:mesh_check({ 1.1 }, { method = "adjoint", mesh = 4000 })))
  end)
end)

describe("interrupts and the REPL", function()
  local BIN = os.getenv("SALTA_BIN") or "build/salta"
  local function run_sh(cmd)
    local f = assert(io.popen(cmd .. " 2>&1"))
    local out = f:read("a")
    f:close()
    return out
  end
  it("an interrupt request stops an engine call at its next step, with the model and the time", function()
    local core = require("salta.core")
    local m = salta.dae{ name = "slow", states = { { "x", 1 } }, f = function(t, x) return { -x.x } end }
    core.interrupt()
    local msg = err_of(m.simulate, m, { tf = 1 })
    core.interrupt_clear()
    has(msg, "model 'slow': interrupted at t = 0")
    assert.is_true(#m:simulate{ tf = 1 }.t > 0)
  end)
  it("Ctrl-C stops a long engine call in the host, and a second one does not kill the session", function()
    local script = H.temp_file([[
local salta = require("salta")
local m = salta.dae{ name = "slow", states = { { "x", 1 } }, f = function(t, x) return { -x.x } end }
print("started")
io.stdout:flush()
local ok, err = pcall(m.simulate, m, { tf = 1e9, max_step = 1e-3, max_steps = 1 << 60, times = { 1e9 } })
print("after the call:", ok, err)
]], ".lua")
    -- two Ctrl-C while the call runs; timeout only guards against a hang
    local out = run_sh(("timeout 60 sh -c '%s %s & pid=$!; sleep 1.5; kill -INT $pid; sleep 0.2; kill -INT $pid; "
      .. "wait $pid; echo status=$?'"):format(BIN, script))
    os.remove(script)
    has(out, "started", "interrupted")
    assert(not out:find("status=130", 1, true) and not out:find("status=124", 1, true), out)
  end)
  it("the REPL writes its history after each line, so an abnormal end keeps it", function()
    local home = os.tmpname()
    os.remove(home)
    assert(os.execute("mkdir -p " .. home))
    run_sh(("( (printf 'x_marker = 42\\n'; sleep 4) | HOME=%s timeout 20 script -qfec %s /dev/null > /dev/null & "
      .. "sleep 2; pkill -9 -f '^%s$'; wait ) >/dev/null 2>&1"):format(home, BIN, BIN))
    local f = io.open(home .. "/.salta_history")
    local text = f and f:read("a") or ""
    if f then f:close() end
    os.execute("rm -rf " .. home)
    assert(text:find("x_marker", 1, true), "history: " .. text)
  end)
end)

describe("resources", function()
  it("a spec file nested hundreds of levels deep is refused before it is parsed", function()
    local yaml = {}
    for i = 1, 2000 do yaml[i] = string.rep("  ", i - 1) .. "k:" end
    local path = H.temp_file(table.concat(yaml, "\n") .. "\n", ".yaml")
    has(err_of(salta.load_spec, path), "salta.load_spec: " .. path, "nested 1999 levels deep: not a model spec")
    os.remove(path)
    path = H.temp_file(string.rep("[", 5000) .. string.rep("]", 5000), ".json")
    has(err_of(salta.load_spec, path), "nested 5000 levels deep")
    os.remove(path)
  end)
  it("json.encode refuses a cyclic table at once", function()
    local t = { list = {} }
    t.list[1] = t
    has(err_of(salta.json.encode, t), "salta.json: cannot encode a table that contains itself")
  end)
end)

describe("found by make fuzz", function()
  it("a when clause that is not a table is named", function()
    local spec = require("salta.spec")
    has(err_of(spec.describe_spec, { states = { { name = "x", start = 1 } }, parameters = {}, f = { "der(x) = -x" },
      when = { 3 } }, "w"), "model 'w': when[1] must be a table", "got 3")
  end)
  it("a derivative too large for the first step is named, at the start and after a reset", function()
    local huge = salta.dae{ name = "huge", states = { { "x", 1 } }, params = { { "k", 1e300 } },
      f = function(t, x, z, p) return { -p.k * x.x } end }
    has(err_of(huge.simulate, huge, { tf = 1, method = "bdf" }), "model 'huge': no first step possible at t = 0",
      "derivative of state 'x' is -1e+300")
    local kick = salta.dae{ name = "kick", states = { { "x", 1 } }, params = { { "k", 1e300 } },
      f = function(t, x, z, p) return { -p.k * (x.x - 1) } end,
      events = { { name = "at", direction = "up", guard = function(t) return t - 0.5 end,
        reset = function() return { x = 2 } end } } }
    has(err_of(kick.simulate, kick, { tf = 1, method = "bdf" }), "model 'kick': no first step possible at t = 0.5",
      "derivative of state 'x' is -1e+300")
  end)
  it("steps below round-off at a singularity of f end the run at once, naming the time", function()
    -- x' = -1/x: x = sqrt(1 - 2t) reaches 0 at t = 1/2 with an infinite slope
    local sing = salta.dae{ name = "sing", states = { { "x", 1 } }, f = function(t, x) return { -1 / x.x } end }
    has(err_of(sing.simulate, sing, { tf = 3 }), "model 'sing': the step size fell below round-off", "at t = 0.4999",
      "f is singular there")
  end)
  it("a mesh too coarse for the adjoint's event is named with the remedy", function()
    local ball = salta.dae{ name = "ball", states = { { "h", 1 }, { "v", 0 } },
      params = { { "g", 9.81 }, { "e", 0.8 }, { "k", 30 } },
      f = function(t, x, z, p) return { x.v, -p.g - p.k * x.h * x.h * x.h } end,
      events = { { name = "floor", direction = "down", guard = function(t, x) return x.h end,
        reset = function(t, x, z, p) return { v = -p.e * x.v } end } } }
    local tr = ball:simulate{ tf = 1, times = { 0.25, 0.5, 0.75, 1 } }
    local L = salta.lsq{ model = ball, times = tr.t, data = { h = tr.y.h }, free = { "g", "e" } }
    has(err_of(L.value_and_grad, L, { 9.81, 0.8 }, { method = "adjoint", mesh = 1 }), "model 'ball': adjoint",
      "mesh = \"steps\"")
  end)
end)
