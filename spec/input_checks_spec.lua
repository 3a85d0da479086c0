-- Option tables and inputs that used to be taken silently or answered with
-- an internal error: each is now refused with a message naming the
-- function, the option or field, and the value.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

local function decay()
  return salta.dae{ name = "decay", states = { { "x", 1 } }, params = { { "k", 0.8 }, { "b", 0.3 } },
    f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
end
local TIMES = { 0, 0.5, 1, 1.5, 2 }

describe("salta.table's options", function()
  it("refuses an unknown option, suggesting the one meant", function()
    has(err_of(salta.table, { t = { 0, 1 }, v = { 1, 2 }, intrep = "step" }),
      "salta.table: unknown option 'intrep' (did you mean 'interp'?)")
    has(err_of(salta.table, { t = { 0, 1 }, v = { 1, 2 }, zzz = 1 }), "unknown option 'zzz'",
      "options: csv, extrapolate, interp, name, t, v")
  end)
  it("refuses an unknown interpolation, listing the known ones", function()
    has(err_of(salta.table, { t = { 0, 1 }, v = { 1, 2 }, interp = "hold" }),
      "salta.table: interp must be \"linear\", \"step\" or \"cubic\", got 'hold'")
    has(err_of(salta.table, { t = { 0, 1 }, v = { 1, 2 }, interp = 0 }), "option 'interp' must be a string, got 0")
    assert.are.equal(1, salta.table{ t = { 0, 1 }, v = { 1, 2 }, interp = "step" }:at(0.5))
  end)
  it("checks a spec's inputs the same way, naming the model and the input", function()
    local spec = require("salta.spec")
    has(err_of(spec.describe_spec, { states = { { name = "x", start = 0 } },
      inputs = { { name = "u", t = { 0, 1 }, v = { 0, 1 }, intrep = "step" } }, f = { "der(x) = u" } }, "m"),
      "model 'm': input 'u': salta.table: unknown option 'intrep' (did you mean 'interp'?)")
  end)
end)

describe("profile and plot options", function()
  local m = decay()
  local tr = m:simulate{ tf = 2, times = TIMES }
  local L = salta.lsq{ model = m, times = TIMES, data = { x = tr.y.x }, free = { "k", "b" }, sigma = 0.05 }
  local r = salta.fit{ loss = L, start = { 0.7, 0.35 }, print_every = 0 }

  it("fit:profile refuses a misspelt option and a bad range", function()
    has(err_of(r.profile, r, "k", { points = 5, spna = 0.2 }),
      "salta.fit: profile: unknown option 'spna' (did you mean 'span'?)")
    has(err_of(r.profile, r, "k", { points = 2 }), "salta.fit: profile: option 'points' must be >= 3, got 2")
    has(err_of(r.profile, r, "k", { range = { 1, 0.5 } }),
      "option 'range' must be two increasing finite numbers { lo, hi }, got { 1, 0.5 }")
    has(err_of(r.profile, r, "k", { range = { 0.5, 1 }, span = 0.1 }), "give option 'range' or option 'span', not both")
  end)

  it("plots refuse misspelt options of the figure and of a series", function()
    local path = os.tmpname() .. ".png"
    local s = { { name = "s", x = { 0, 1 }, y = { 0, 1 } } }
    has(err_of(salta.plot.series, path, s, { ylable = "y" }),
      "salta.plot.series: unknown option 'ylable' (did you mean 'ylabel'?)")
    has(err_of(salta.plot.series, path, { { name = "s", x = { 0, 1 }, y = { 0, 1 }, colour = 2 } }),
      "salta.plot.series: series 1: unknown option 'colour' (did you mean 'color'?)")
    has(err_of(salta.plot.series, path, s, { size = { 900 } }), "option 'size' must be { width, height }")
    has(err_of(salta.plot.trajectory, path, tr, { outputs = { "y" } }),
      "salta.plot.trajectory: option 'outputs' names 'y', which is not an output (x)")
    has(err_of(salta.plot.trajectory, path, tr, { data = { t = TIMES, X = tr.y.x } }),
      "option 'data' holds 'X', which is not an output (x)")
    has(err_of(r.plot, r, path, { data = { t = TIMES } }), "fit:plot: unknown option 'data'")
    os.remove(path)
  end)
end)

describe("salta.experiments", function()
  local m = decay()
  local tr = m:simulate{ tf = 2, times = TIMES }
  local function loss() return salta.lsq{ model = m, times = TIMES, data = { x = tr.y.x }, free = { "k", "x0.x" } } end

  it("refuses parameters by name that are not free, naming the experiment", function()
    local E = salta.experiments{ losses = { loss(), loss() }, names = { "low", "high" }, shared = { "k" } }
    local p = { k = 0.8, ["x0.x@low"] = 1, ["x0.x@high"] = 1 }
    assert.is_true(E:value(p) >= 0)
    p.bogus = 3
    has(err_of(E.value, E, p), "salta.experiments: 'bogus' is not a free parameter",
      "free: k, x0.x@low, x0.x@high")
    p.bogus, p["b@low"] = nil, 0.3
    has(err_of(E.value, E, p), "'b@low' is not a free parameter (experiment 'low' frees k, x0.x@low)")
    p["b@low"], p["x0.x@mid"] = nil, 1
    has(err_of(E.value, E, p), "'x0.x@mid' is not a free parameter (no experiment is named 'mid'")
    p["x0.x@mid"], p["k@low"] = nil, 1
    has(err_of(E.value, E, p), "'k' is shared: give it as 'k'")
  end)

  it("names a parameter listed twice in shared", function()
    has(err_of(salta.experiments, { losses = { loss(), loss() }, shared = { "k", "k" } }),
      "salta.experiments: shared lists 'k' twice (shared[1] and shared[2])")
  end)
end)

describe("multi-start", function()
  local m = decay()
  local tr = m:simulate{ tf = 2, times = TIMES }
  local L = salta.lsq{ model = m, times = TIMES, data = { x = tr.y.x }, free = { "k", "b" } }

  it("says what starts must hold", function()
    has(err_of(salta.fit, { loss = L, starts = {} }),
      "salta.fit: starts must be a count >= 1 or a non-empty list of starts",
      "each an array of 2 values (k, b) or a table by name", "got an empty table")
    has(err_of(salta.fit, { loss = L, starts = { 0.5, 0.6 } }), "starts[1] must be a start", "got 0.5")
    has(err_of(salta.fit, { loss = L, starts = { { 0.5 } } }), "starts[1] must be a start", "got 1 values")
    has(err_of(salta.fit, { loss = L, starts = { { k = 0.5 } } }), "starts[1] gives nil for 'b', not a number")
  end)
end)

describe("a per-time sigma", function()
  it("of the wrong length names the output and both lengths", function()
    local m = decay()
    local tr = m:simulate{ tf = 2, times = TIMES }
    local msg = err_of(salta.lsq, { model = m, times = TIMES, data = { x = tr.y.x }, free = { "k" },
      sigma = { x = { 0.1, 0.1 } } })
    has(msg, "salta.lsq: sigma for output 'x' has 2 values, expected 5 (one per target time)")
    assert.is_nil(msg:find("table: 0x", 1, true))
  end)
end)

describe("trajectory:at", function()
  local tr = decay():simulate{ tf = 2, times = TIMES }
  it("refuses NaN and non-numbers, naming the value", function()
    has(err_of(tr.at, tr, 0 / 0), "trajectory:at: t must be a number, got NaN")
    has(err_of(tr.at, tr, "1"), "trajectory:at: t must be a number, got the string '1'")
  end)
  it("refuses a time outside the output times (no extrapolation)", function()
    has(err_of(tr.at, tr, 2.5), "trajectory:at: t = 2.5 is outside the output times [0, 2]")
    has(err_of(tr.at, tr, 2 + 2 ^ -51), "t = 2.0000000000000004 is outside")
    assert.are.equal(tr.y.x[5], tr:at(2).x)
  end)
end)

describe("salta.read_csv", function()
  local function read(text)
    local path = H.temp_file(text, ".csv")
    local ok, r = pcall(salta.read_csv, path)
    os.remove(path)
    return ok, tostring(r), r, path
  end

  it("takes decimal numbers only, naming the file, the line, the column and the cell", function()
    for _, cell in ipairs({ "0x10", "inf", "1e400", "1_0", "0b1", "1e", "--1" }) do
      local ok, msg, _, path = read("t,h\n0,1\n1," .. cell .. "\n")
      assert.is_false(ok, cell)
      has(msg, ("salta.read_csv: %s:3: column 'h' holds '%s', "):format(path, cell))
      assert.is_nil(msg:find("0,1", 1, true))
    end
    local ok, _, r = read("t,h\n0,+.5e3\n1,-2.\n2,\n3,NaN\n4,1E-2\n")
    assert.is_true(ok)
    assert.are.same({ 500, -2 }, { r.columns.h[1], r.columns.h[2] })
    assert.is_true(r.columns.h[3] ~= r.columns.h[3] and r.columns.h[4] ~= r.columns.h[4])
    assert.are.equal(0.01, r.columns.h[5])
  end)

  it("reads quoted names and cells (RFC 4180), and finds a quoted time column", function()
    local ok, msg, r = read('"t","h"\n0,1\n"1"," 2.5 "\n')
    assert.is_true(ok, msg)
    assert.are.same({ "t", "h" }, r.names)
    assert.are.same({ 0, 1 }, r.columns.t)
    assert.are.same({ 1, 2.5 }, r.columns.h)
    ok, msg, r = read('t,"say ""hi"", twice"\n0,1\n')
    assert.is_true(ok, msg)
    assert.are.equal('say "hi", twice', r.names[2])
    ok, msg = read('t,h\n0,"1"x\n')
    has(msg, ":2: field 2 has text after its closing quote")
    ok, msg = read('t,h\n0,"1\n')
    has(msg, ":2: a quoted field is not closed")
    ok, msg = read('t,h\n0,"1\n2"\n')
    has(msg, ":2: column 'h' holds '1\\0102', not a decimal number")
    local names = { "t", "com,ma", 'q"uote', " lead ", "line\nbreak", "#hash" }
    local path = os.tmpname() .. ".csv"
    local cols = {}
    for i, n in ipairs(names) do cols[n] = { i, 0.5 } end
    salta.write_csv(path, names, cols)
    local back = salta.read_csv(path)
    os.remove(path)
    assert.are.same(names, back.names)
    assert.are.same({ 2, 0.5 }, back.columns["com,ma"])
    local m = decay()
    path = H.temp_file('"t","x"\n0,1\n1,0.6\n', ".csv")
    local L = salta.lsq{ model = m, data = path, free = { "k" } }
    os.remove(path)
    assert.are.same({ 0, 1 }, L.times)
  end)
end)
