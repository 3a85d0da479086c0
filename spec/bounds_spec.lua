-- Parameter bounds and nominal scales: declared on the model (salta.dae,
-- a spec's attributes), kept by every optimiser, LM included; the nominal
-- is the unit of the optimiser's steps.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

describe("parameter bounds", function()
  -- the truth k = 0.8 lies above the declared max 0.7: the constrained
  -- optimum is on the bound, b re-fitted there
  local m = salta.dae{ name = "decay_bounded", states = { { "x", 1 } },
    params = { k = { 0.5, min = 0.2, max = 0.7, nominal = 0.5 }, b = { 0.3, min = 0 } },
    f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
  local T = H.uniform(4, 40)
  local tr = m:simulate{ tf = 4, times = T, params = { k = 0.8, b = 0.3 }, rtol = 1e-12, atol = 1e-14 }
  local L = salta.lsq{ model = m, times = T, data = { x = tr.y.x }, free = { "k", "b" }, rtol = 1e-10, atol = 1e-12 }

  it("are read from salta.dae's params and a spec's parameters", function()
    assert.are.same({ min = 0.2, max = 0.7, nominal = 0.5 }, m.param_info.k)
    assert.are.same({ min = 0 }, m.param_info.b)
    local path = H.temp_file([[{ "states": [ { "name": "x", "start": 1 } ], "parameters": [
      { "name": "k", "value": 0.5, "min": 0.1, "max": 2, "nominal": 0.5, "unit": "1/s" }, { "name": "b", "value": 1 } ],
      "f": [ "der(x) = -k * x + b" ] }]], ".json")
    local s = salta.load_spec(path)
    os.remove(path)
    assert.are.same({ min = 0.1, max = 2, nominal = 0.5, unit = "1/s" }, s.param_info.k)
    assert.is_nil(s.param_info.b)
    has(err_of(salta.dae, { name = "bad", states = { { "x", 1 } }, params = { k = { 8, min = 0, max = 5 } },
      f = function(t, x, z, p) return { -p.k * x.x } end }), "parameter 'k' = 8 is outside [min, max] = [0, 5]")
    has(err_of(salta.dae, { name = "bad", states = { { "x", 1 } }, params = { { "k", 1, nominal = -1 } },
      f = function(t, x, z, p) return { -p.k * x.x } end }), "parameter 'k': nominal must be positive")
  end)

  it("are kept by Levenberg-Marquardt, L-BFGS-B and Adam, which agree on the constrained optimum", function()
    local fits = {}
    for _, method in ipairs({ "lm", "lbfgsb", "adam" }) do
      local r = salta.fit{ loss = L, method = method, print_every = 0, max_iter = method == "adam" and 2000 or nil,
        lr = method == "adam" and 0.05 or nil }
      for i, p in ipairs(r.history.params) do
        assert(p[1] >= 0.2 and p[1] <= 0.7 and p[2] >= 0, ("%s iteration %d: k = %.17g, b = %.17g"):format(method, i,
          p[1], p[2]))
      end
      assert.is_near(0.7, r.params.k, 1e-9)
      fits[method] = r
    end
    assert.is_near(fits.lm.params.b, fits.lbfgsb.params.b, 1e-8)
    assert.is_near(fits.lm.params.b, fits.adam.params.b, 1e-8)
  end)

  it("narrow the fit's lower and upper, and refuse a start outside", function()
    local r = salta.fit{ loss = L, method = "lm", lower = { k = 0, b = 0.25 }, print_every = 0 }
    assert.is_near(0.7, r.params.k, 1e-9)           -- the model's max still holds
    assert.is_true(r.params.b >= 0.25)
    has(err_of(salta.fit, { loss = L, start = { k = 0.9, b = 0.3 }, print_every = 0 }),
      "the start of 'k' (0.90000000000000002) is outside its bounds [0.2, 0.7]")
  end)

  it("let Levenberg-Marquardt reach an interior optimum as without them", function()
    local free = salta.dae{ name = "decay_free", states = { { "x", 1 } }, params = { k = 0.5, b = 0.3 },
      f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
    local L2 = salta.lsq{ model = free, times = T, data = { x = tr.y.x }, free = { "k", "b" }, rtol = 1e-10,
      atol = 1e-12 }
    local a = salta.fit{ loss = L2, method = "lm", print_every = 0 }
    local b = salta.fit{ loss = L2, method = "lm", lower = { 0.1, 0 }, upper = { 2, 1 }, print_every = 0 }
    assert.is_near(0.8, a.params.k, 1e-6)
    assert.is_near(a.params.k, b.params.k, 1e-8)
    assert.is_near(a.params.b, b.params.b, 1e-8)
    -- the covariance is the loss's at the fitted values, whatever the transform
    assert.is_near(a:std_errors().k, b:std_errors().k, 1e-6 * a:std_errors().k)
  end)
end)

describe("a nominal", function()
  it("is the unit of Adam's steps and the floor of the difference step", function()
    -- Adam's first step is lr in each variable: lr times the nominal here
    local m = salta.dae{ name = "tiny", states = { { "x", 1 } }, params = { J = { 2e-4, nominal = 1e-4, min = 0 } },
      f = function(t, x, z, p) return { -x.x / (p.J * 1e4) } end }
    local T = H.uniform(1, 10)
    local tr = m:simulate{ tf = 1, times = T, params = { J = 1e-4 }, rtol = 1e-10, atol = 1e-12 }
    local L = salta.lsq{ model = m, times = T, data = { x = tr.y.x }, free = { "J" }, rtol = 1e-10, atol = 1e-12 }
    local r = salta.fit{ loss = L, method = "adam", lr = 0.01, max_iter = 1, print_every = 0 }
    assert.is_near(1e-6, math.abs(r.params.J - 2e-4), 1e-12)
  end)

  it("floors the difference step of a parameter near 0 (h |p| alone would be all round-off)", function()
    local grads = {}
    for i, decl in ipairs({ { 1e-12, nominal = 1 }, 1e-12 }) do
      local m = salta.dae{ name = "offset" .. i, states = { { "x", 1 } }, params = { b = decl },
        f = function(t, x, z, p) return { -x.x + p.b } end }
      local T = H.uniform(1, 10)
      local tr = m:simulate{ tf = 1, times = T, params = { b = 0.5 }, rtol = 1e-10, atol = 1e-12 }
      local L = salta.lsq{ model = m, times = T, data = { x = tr.y.x }, free = { "b" }, rtol = 1e-10, atol = 1e-12 }
      grads[i] = { L:fd_grad({ 1e-12 })[1], L:grad({ 1e-12 })[1] }
    end
    assert.is_near(grads[1][2], grads[1][1], 1e-8)
    assert.is_true(math.abs(grads[2][1] - grads[2][2]) > 1e-3)   -- the control: no nominal
  end)
end)
