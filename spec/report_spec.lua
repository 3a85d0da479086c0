-- Fit reports and plots: labelled covariance and correlation, confidence
-- intervals, a history without NaN, a fit plot with residuals.
local salta = require("salta")
local H = require("spec.helpers")

local function png_size(path)
  local f = assert(io.open(path, "rb"))
  local head = f:read(24)
  f:close()
  assert.are.equal("\137PNG", head:sub(1, 4))
  return string.unpack(">I4", head, 17), string.unpack(">I4", head, 21)
end

describe("a fit's report", function()
  local m = salta.dae{ name = "decay", states = { { "x", 1 } }, params = { { "k", 0.8 }, { "b", 0.3 } },
    f = function(t, x, z, p) return { -p.k * x.x + p.b } end,
    events = { { name = "kick", direction = "up", guard = function(t) return t - 2 end,
      reset = function(t, x) return { x = x.x + 0.5 } end } } }
  local T = H.uniform(4, 40)
  local tr = m:simulate{ tf = 4, times = T, rtol = 1e-12, atol = 1e-14 }
  local g = salta.gaussian(2)
  local x = {}
  for i, v in ipairs(tr.y.x) do x[i] = v + 0.02 * g() end
  local L = salta.lsq{ model = m, times = T, data = { x = x }, free = { "k", "b" }, rtol = 1e-10, atol = 1e-12 }
  local r = salta.fit{ loss = L, start = { 0.6, 0.5 }, print_every = 0 }

  it("labels the covariance and correlation and gives Wald intervals", function()
    local cov, cor = r:covariance(), r:correlation()
    assert.is_near(1, cor[1][1], 1e-15)
    assert.is_near(cov[1][2] / math.sqrt(cov[1][1] * cov[2][2]), cor[1][2], 1e-15)
    local se, ci = r:std_errors(), r:confidence(0.95)
    -- sigma estimated: Student's t with 40 - 2 dof (mpmath: 2.02439416391197...)
    assert.is_near(r.params.k - 2.0243941639119702 * se.k, ci.k[1], 1e-12)
    assert.is_near(r.params.b + 2.0243941639119702 * se.b, ci.b[2], 1e-12)
    local text = r:report()
    assert.is_truthy(text:find("covariance%s+k%s+b"))
    assert.is_truthy(text:find("correlation%s+k%s+b"))
    assert.is_truthy(text:find("95 % confidence intervals", 1, true))
    local path = os.tmpname()
    r:to_json(path)
    local f = assert(io.open(path))
    local doc = require("cjson").decode(f:read("a"))
    f:close()
    os.remove(path)
    assert.is_near(cov[1][2], doc.covariance.k.b, 1e-15)
    assert.is_near(ci.b[1], doc.confidence_95.b[1], 1e-12)
  end)

  it("keeps a history of numbers (no NaN gradient norm)", function()
    for i, v in ipairs(r.history.gnorm) do
      assert(v == false or (type(v) == "number" and v == v), ("gnorm[%d] = %s"):format(i, tostring(v)))
    end
    assert.are.equal(#r.history.loss, #r.history.gnorm)
  end)

  it("plots model and data in matching colours with residuals below and event markers", function()
    local path = os.tmpname() .. ".png"
    r:plot(path)
    local w, h = png_size(path)
    os.remove(path)
    assert.are.equal(900, w)
    assert.are.equal(720, h)
    local s = require("salta.plot").last_script
    assert.is_truthy(s:find("set multiplot", 1, true))
    local _, plots = s:gsub("\nplot ", "")
    assert.are.equal(2, plots)
    local data_color = s:match("with points pt 7 ps 0.5 lc rgb '(#%x+)' title 'x %(data%)'")
    local curve_color = s:match("with lines lw 2 lc rgb '(#%x+)' title 'x'")
    assert.is_truthy(data_color)
    assert.are.equal(data_color, curve_color)
    assert.is_truthy(s:find("set arrow 1 from 2", 1, true))   -- the kick at t = 2
    assert.is_truthy(s:find("model - data", 1, true))
  end)

  it("draws a trajectory's data in its curve's colour", function()
    local path = os.tmpname() .. ".png"
    salta.plot.trajectory(path, tr, { data = { t = T, x = x }, title = "decay" })
    os.remove(path)
    local s = require("salta.plot").last_script
    local a = s:match("lc rgb '(#%x+)' title 'x %(data%)'")
    local b = s:match("lc rgb '(#%x+)' title 'x'")
    assert.are.equal(a, b)
    assert.has_error(function() salta.plot.trajectory(path, tr, { titel = "x" }) end)
  end)
end)
