-- The rest of a fit's surroundings: a model's counts apart from its hidden
-- states and events, step tables that hold past their end, JSON results
-- with provenance, plots with a panel per output or unit.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

describe("print(m)", function()
  it("counts the model's own states and events apart from hidden ones", function()
    local tab = salta.table{ t = { 0, 1, 2, 3, 4, 5 }, v = { 0, 1, 0, 1, 0, 1 }, interp = "step" }
    local m = salta.dae{ name = "relay_counts", states = { { "x", 0 }, { "v", 0 } }, params = { k = 1 },
      inputs = { u = tab },
      f = function(t, x, z, p, u) return { x.v, salta.ifelse(salta.lt(x.x, 0.5), 1, -1) * p.k + u.u(t) } end,
      events = { { name = "stop", direction = "up", guard = function(t, x) return x.x - 10 end },
        { name = "mark", direction = "up", guard = function(t, x) return x.v - 3 end } } }
    assert.are.equal(4, #m.states)   -- the integrator's: a mode and a piece index besides x and v
    local c = m:counts()
    assert.are.same({ states = 2, hidden_states = 2, modes = 1, pieces = 1, events = 2, hidden_events = #m.events - 2 },
      c)
    has(tostring(m), "2 states (+2 hidden: 1 if-expression mode, 1 input piece index)", "2 events (+")
    local plain = salta.dae{ name = "mode_counts", states = { { "x", 0 } },
      f = function(t, x) return { salta.ifelse(salta.lt(x.x, 0.5), 1, -1) } end }
    has(tostring(plain), "1 state (+1 hidden: 1 if-expression mode),")
  end)
end)

describe("a step table with extrapolate = \"hold\"", function()
  it("holds its last value past its end, where a table without is an error", function()
    local function model(ex)
      local tab = salta.table{ t = { 0, 1, 2 }, v = { 1, 2, 3 }, interp = "step", extrapolate = ex }
      return salta.dae{ name = "hold_" .. ex, states = { { "x", 0 } }, inputs = { u = tab },
        f = function(t, x, z, p, u) return { u.u(t) } end }
    end
    local tr = model("hold"):simulate{ tf = 5, times = { 0, 1, 2, 3, 4, 5 }, rtol = 1e-10, atol = 1e-12 }
    -- x = integral of u: 1 on [0, 1), 2 on [1, 2), 3 from 2 on
    local want = { 0, 1, 3, 6, 9, 12 }
    for i, w in ipairs(want) do assert.is_near(w, tr.y.x[i], 1e-8) end
    has(err_of(model("none").simulate, model("none"), { tf = 5 }), "outside its table [0, 2]")
    has(err_of(salta.table, { t = { 0, 1 }, v = { 1, 2 }, interp = "cubic", extrapolate = "hold" }),
      "extrapolate = \"hold\" needs interp \"step\" or \"linear\"")
  end)
end)

describe("a fit's JSON", function()
  it("carries provenance: version, time, model and data digests, options", function()
    local m = salta.dae{ name = "decay_json", states = { { "x", 1 } }, params = { k = { 0.8, min = 0 }, b = 0.3 },
      f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
    local T = H.uniform(4, 40)
    local tr = m:simulate{ tf = 4, times = T, rtol = 1e-12, atol = 1e-14 }
    local function fit(data)
      local L = salta.lsq{ model = m, times = T, data = { x = data }, free = { "k", "b" }, rtol = 1e-10, atol = 1e-12 }
      local r = salta.fit{ loss = L, start = { 0.5, 0.5 }, print_every = 0, callback = function() end }
      local path = os.tmpname()
      r:to_json(path)
      local doc = require("cjson").decode(H.read_file(path))
      os.remove(path)
      return doc
    end
    local a = fit(tr.y.x)
    local p = a.provenance
    assert.are.equal(salta.version, p.salta_version)
    assert.truthy(p.written:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$"))
    local e = p.experiments[1]
    assert.are.equal("decay_json", e.model.name)
    assert.are.equal(require("salta.core").hash(m.compile_info.source), e.model.c_source_digest)
    assert.are.equal(0, e.model.param_info.k.min)
    assert.are.equal(40, e.data.targets)
    assert.are.same({ 0.5, 0.5 }, p.fit_options.start)
    assert.is_nil(p.fit_options.callback)
    assert.are.equal(1e-10, e.rtol)
    -- other data, another digest; the same data, the same
    local shifted = {}
    for i, v in ipairs(tr.y.x) do shifted[i] = v + 1e-15 end
    assert.are_not.equal(e.data.digest, fit(shifted).provenance.experiments[1].data.digest)
    assert.are.equal(e.data.digest, fit(tr.y.x).provenance.experiments[1].data.digest)
    assert.is_string(a.reason)
    assert.is_number(a.goodness.aic)
  end)
end)

describe("plots", function()
  local m = salta.dae{ name = "motor_plot", states = { { "w", 0 }, { "i", 0 } }, params = { k = 0.5, R = 2 },
    f = function(t, x, z, p) return { (p.k * x.i - 0.1 * x.w) / 0.01, (12 - p.R * x.i - p.k * x.w) / 0.05 } end,
    h = function(t, x) return { w = x.w, i = x.i, w2 = 2 * x.w } end }
  local T = H.uniform(1, 50)
  local tr = m:simulate{ tf = 1, times = T }

  local function plots_in(script)
    local _, n = script:gsub("\nplot ", "")
    return n
  end

  it("give each output its panel, and outputs of one unit one panel", function()
    local path = os.tmpname() .. ".png"
    salta.plot.trajectory(path, tr)
    assert.are.equal(3, plots_in(require("salta.plot").last_script))
    salta.plot.trajectory(path, tr, { units = { w = "rad/s", w2 = "rad/s", i = "A" } })
    local s = require("salta.plot").last_script
    assert.are.equal(2, plots_in(s))
    has(s, "set ylabel 'w, w2 [rad/s]'", "set ylabel 'i [A]'")
    local L = salta.lsq{ model = m, times = T, data = { w = tr.y.w, i = tr.y.i }, free = { "k", "R" } }
    local r = salta.fit{ loss = L, start = { 0.45, 2.2 }, print_every = 0 }
    r:plot(path)
    assert.are.equal(4, plots_in(require("salta.plot").last_script))   -- model and residuals, per output
    os.remove(path)
  end)
end)
