-- Multi-start fits and profile likelihoods.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

describe("a multi-start fit", function()
  -- the Cauer ladder on its four continuous states (C3_v's reset makes the
  -- unblended loss jump where a target falls between two event times)
  local X = dofile("examples/cauer_experiment.lua")
  local OUT = { "L2_i", "L1_i", "C5_v", "C1_v" }
  local tr = X.model:simulate{ tf = 20, times = X.times, rtol = 1e-10, atol = 1e-12 }
  local data = {}
  for _, n in ipairs(OUT) do data[n] = tr.y[n] end
  local L = salta.lsq{ model = X.model, times = X.times, data = data, free = X.FREE, rtol = 1e-8, atol = 1e-10 }
  local lower, upper = {}, {}
  for _, n in ipairs(X.FREE) do lower[n], upper[n] = 0.7 * X.truth[n], 1.4 * X.truth[n] end
  local function worst(r)
    local w = 0
    for _, e in pairs(r:errors()) do w = math.max(w, e) end
    return w
  end

  it("finds the global minimum where a single whole-horizon fit stops in a local one", function()
    local single = salta.fit{ loss = L, start = X.START, method = "lm", truth = X.truth, print_every = 0 }
    assert.is_true(worst(single) > 10)
    local r = salta.fit{ loss = L, method = "lm", starts = 24, sampling = "latin", lower = lower, upper = upper,
      truth = X.truth }
    assert(worst(r) < 1e-3, ("best start %.3g %% off"):format(worst(r)))
    assert.are.equal(24, #r.starts)
    for i = 2, #r.starts do assert.is_true(r.starts[i - 1].loss <= r.starts[i].loss) end
    local path = os.tmpname() .. ".png"
    r:waterfall(path)
    local f = assert(io.open(path, "rb"))
    assert.are.equal("\137PNG", f:read(4))
    f:close()
    os.remove(path)
    local ok, e = pcall(r.waterfall, r, path, { titel = "x" })
    assert(not ok and e:find("fit:waterfall: unknown option 'titel' (did you mean 'title'?)", 1, true), e)
    assert.is_truthy(r:starts_table():find("final loss", 1, true))
  end)

  it("samples starts inside the box: Latin strata, Sobol points, log-uniform for log parameters", function()
    local ms = require("salta.multistart")
    local fake = { free = { "a", "b" }, log = { false, true } }
    local lo, hi = { 0, 1 }, { 10, 100 }
    for _, sampling in ipairs({ "latin", "sobol", "uniform" }) do
      local s = ms.starts(fake, { starts = 16, sampling = sampling, seed = 3 }, lo, hi)
      assert.are.equal(16, #s)
      for _, p in ipairs(s) do
        assert.is_true(p[1] >= 0 and p[1] <= 10 and p[2] >= 1 and p[2] <= 100)
      end
      if sampling ~= "uniform" then   -- one point in each of the 16 strata of each dimension
        for d = 1, 2 do
          local seen = {}
          for _, p in ipairs(s) do
            local u = d == 1 and p[1] / 10 or math.log(p[2]) / math.log(100)
            seen[math.floor(u * 16 + 1e-9)] = true   -- (a Sobol point on a stratum edge, through exp and log)
          end
          local count = 0
          for _ in pairs(seen) do count = count + 1 end
          assert.are.equal(16, count)
        end
      end
    end
    has(err_of(salta.fit, { loss = L, starts = 4 }), "sampling starts needs finite bounds")
    has(err_of(salta.fit, { loss = L, starts = 4, lower = lower, upper = upper, sampling = "grid" }),
      "sampling must be")
  end)
end)

describe("a multi-start's starts", function()
  local m = salta.dae{ name = "decay_starts", states = { { "x", 1 } }, params = { { "k", 0.8 }, { "b", 0.3 } },
    f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
  local T = H.uniform(4, 40)
  local tr = m:simulate{ tf = 4, times = T, rtol = 1e-12, atol = 1e-14 }
  local L = salta.lsq{ model = m, times = T, data = { x = tr.y.x }, free = { "k", "b" }, rtol = 1e-10, atol = 1e-12 }

  it("run on past a start that blows up, which is recorded and summarised", function()
    -- k = -400: x grows as exp(400 t), a finite escape for the integrator
    local r = salta.fit{ loss = L, method = "lm", starts = { { 0.5, 0.5 }, { -400, 0.3 }, { 1.2, 0.1 } },
      lower = { -500, 0 }, upper = { 2, 1 }, print_every = 0 }
    assert.is_near(0.8, r.params.k, 1e-8)
    local failed = r.starts[3]
    assert.are.equal(2, failed.index)
    assert.is_true(failed.failed)
    assert.are.equal(math.huge, failed.loss)
    has(failed.message, "model 'decay_starts'", "blows up")
    has(r.status, "3 starts: ", " 1 failed (start 2: model 'decay_starts'")
    has(r:starts_table(), "failed: model 'decay_starts'")
  end)

  it("stop at their evaluation and time limits with their last iterate", function()
    local r = salta.fit{ loss = L, method = "lm", starts = { { 0.5, 0.5 }, { 1.2, 0.1 } }, start_evals = 3,
      print_every = 0 }
    for _, o in ipairs(r.starts) do
      assert.are.equal("evaluations", o.limit)
      assert.is_false(o.failed)
      assert.is_true(o.loss < math.huge and o.evaluations <= 3)
    end
    has(r.status, "stopped at the per-start evaluation limit", "(0 at the time limit, 2 at the evaluation limit)")
    local t = salta.fit{ loss = L, method = "lbfgsb", starts = { { 0.5, 0.5 }, { 1.2, 0.1 } }, start_time = 1e-9,
      print_every = 0 }
    for _, o in ipairs(t.starts) do assert.are.equal("time", o.limit) end
    -- the result's loss is the unlimited loss: its report evaluates freely
    assert.is_table(t:std_errors())
  end)

  it("never abort the run, even when every start fails", function()
    local r = salta.fit{ loss = L, method = "lm", starts = { { -400, 0.3 }, { -300, 0.3 } }, lower = { -500, 0 },
      upper = { 2, 1 }, print_every = 0 }
    assert.is_false(r.converged)
    assert.is_false(r.ok)
    assert.are.equal(math.huge, r.loss)
    has(r.status, "stopped: every start failed", "2 starts: 0 converged, 0 unconverged, 2 failed")
  end)
end)

describe("a profile likelihood", function()
  local m = salta.dae{ name = "decay", states = { { "x", 1 } }, params = { { "k", 0.8 }, { "b", 0.3 } },
    f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
  local T = H.uniform(4, 40)
  local tr = m:simulate{ tf = 4, times = T, rtol = 1e-12, atol = 1e-14 }
  local g = salta.gaussian(4)
  local x = {}
  for i, v in ipairs(tr.y.x) do x[i] = v + 0.05 * g() end
  local L = salta.lsq{ model = m, times = T, data = { x = x }, free = { "k", "b" }, sigma = 0.05, rtol = 1e-10,
    atol = 1e-12 }
  local r = salta.fit{ loss = L, start = { 0.6, 0.5 }, print_every = 0 }

  it("re-fits the others along one parameter: minimum at the estimate, the 95 % interval near Wald's", function()
    local pr = r:profile("k", { points = 15, span = 0.3 })
    assert.is_near(pr.chi2_min + 3.8414588206941245, pr.threshold, 1e-12)
    local lowest = 1
    for i = 2, #pr.chi2 do if pr.chi2[i] < pr.chi2[lowest] then lowest = i end end
    assert.is_near(r.params.k, pr.values[lowest], 1e-12)
    for i = 1, #pr.chi2 do assert.is_true(pr.chi2[i] >= pr.chi2_min - 1e-9) end
    local se = r:std_errors().k
    assert.is_true(pr.bounded[1] and pr.bounded[2])
    assert.is_near(r.params.k - 1.96 * se, pr.interval[1], 0.2 * 1.96 * se)
    assert.is_near(r.params.k + 1.96 * se, pr.interval[2], 0.2 * 1.96 * se)
    assert.is_truthy(pr:table():find("95 % interval", 1, true))
  end)

  it("names a parameter that is not free", function()
    has(err_of(r.profile, r, "q"), "profile: 'q' is not a free parameter")
  end)
end)
