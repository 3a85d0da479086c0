-- Fitting end to end, and the data files around it: CSV, JSON, plots.
local H = require("helpers")
local salta = require("salta")

describe("salta.fit", function()
  local m = H.model("spring_latch")
  local times = {}
  for i = 1, 60 do times[i] = 6 * i / 60 end
  local tr = m:simulate{ tf = 6, times = times, rtol = 1e-12, atol = 1e-14 }
  local data = { x = tr.y.x, F = tr.y.F }
  local truth = { k = 4.0, F_max = 1.5, e = 0.7 }
  local start = { k = 3.6, F_max = 1.6, e = 0.75 }

  it("recovers the parameters of a hybrid DAE by Levenberg-Marquardt", function()
    local loss = salta.lsq{ model = m, times = times, data = data, free = { "k", "F_max", "e" },
      rtol = 1e-10, atol = 1e-12 }
    local r = salta.fit{ loss = loss, start = start, method = "lm", truth = truth, print_every = 0 }
    assert.is_true(r.converged, r.status)
    for n, v in pairs(truth) do assert.is_near(v, r.params[n], 1e-7 * v) end
    assert.is_true(r.loss < 1e-15)   -- the floor set by the simulation tolerances
    assert.truthy(r:table():find("F_max", 1, true))
  end)

  it("recovers them by L-BFGS-B in log space, within bounds", function()
    local loss = salta.lsq{ model = m, times = times, data = data, free = { "k", "F_max", "e" },
      rtol = 1e-10, atol = 1e-12, transform = "log" }
    local r = salta.fit{ loss = loss, start = start, method = "lbfgsb", lower = { k = 1, F_max = 1, e = 0.1 },
      upper = { k = 10, F_max = 3, e = 1 }, factr = 10, pgtol = 1e-12, print_every = 0, max_iter = 300 }
    for n, v in pairs(truth) do assert.is_near(v, r.params[n], 1e-5 * v) end
  end)

  it("reports progress and history, and writes JSON with every digit", function()
    local loss = salta.lsq{ model = m, times = times, data = data, free = { "k" }, rtol = 1e-8, atol = 1e-10 }
    local lines = {}
    local r = salta.fit{ loss = loss, start = { 3.9 }, method = "adam", lr = 0.01, max_iter = 20, print_every = 5,
      log = function(l) lines[#lines + 1] = l end }
    assert.are.equal(5, #lines)              -- iterations 1, 5, 10, 15, 20
    assert.truthy(lines[1]:find("loss", 1, true) and lines[1]:find("|grad|", 1, true))
    assert.are.equal(20, #r.history.loss)
    local path = os.tmpname()
    r:to_json(path)
    local text = assert(io.open(path)):read("a")
    os.remove(path)
    local k = text:match('"params": {%s*"k": ([%d%.eE+-]+)')
    assert.are.equal(r.params.k, tonumber(k))   -- 17 digits round-trip exactly
  end)

  it("fits by L-BFGS-B on adjoint gradients", function()
    -- balls N = 3: the trapezoid is exact for ballistic flight, so the
    -- adjoint's discrete loss has its minimum at the truth
    local b = H.model("bouncing_balls", { N = 3 })
    local bt = {}
    for i = 1, 100 do bt[i] = 1.9 * (i - 1) / 99 end
    local btr = b:simulate{ tf = 1.9, times = bt, rtol = 1e-12, atol = 1e-12 }
    local bdata = {}
    for _, n in ipairs(H.positions(3)) do bdata[n] = btr.y[n] end
    local loss = salta.lsq{ model = b, times = bt, data = bdata, free = { "g", "e_g", "e_b" },
      rtol = 1e-10, atol = 1e-12 }
    local btruth = { g = 9.81, e_g = 0.5, e_b = 0.6 }
    local r = salta.fit{ loss = loss, start = { 9.3, 0.55, 0.65 }, method = "lbfgsb", print_every = 0,
      gradient = { method = "adjoint", mesh = 5 }, factr = 10, pgtol = 1e-14, max_iter = 200 }
    for n, v in pairs(btruth) do assert.is_near(v, r.params[n], 1e-6 * v) end
    -- on the latch (not ballistic) the adjoint's discrete loss on a coarse
    -- mesh differs from the loss: the fit reports the one it minimises
    local latch = salta.lsq{ model = m, times = times, data = data, free = { "k", "F_max", "e" } }
    local one = salta.fit{ loss = latch, start = start, method = "adam", max_iter = 1, print_every = 0,
      gradient = { method = "adjoint", mesh = 10 } }
    local discrete = latch:value(start, { method = "adjoint", mesh = 10 })
    assert.are.equal(discrete, one.history.loss[1])
    assert.is_true(math.abs(discrete - latch:value(start)) > 1e-6 * discrete)
    local ok, err = pcall(salta.fit, { loss = loss, method = "lm", gradient = "adjoint", print_every = 0 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("needs the residual Jacobian", 1, true), tostring(err))
    ok, err = pcall(salta.fit, { loss = loss, method = "lm", gradient = { mesh = 5 }, horizon = true, print_every = 0 })
    assert.is_true(ok, err)    -- a table without a method is the default route, sens
    ok, err = pcall(function()
      local r = salta.fit{ loss = loss, method = "adam", gradient = "bogus" }   -- the error names this line
      return r
    end)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("fit_spec.lua:%d+: salta.fit: unknown gradient method 'bogus'"),
      tostring(err))
  end)

  it("gives the covariance of linear least squares on a linear model", function()
    -- x' = a, x(0) = b: x(t) = b + a t, so the fit is a straight-line
    -- regression whose standard errors have a closed form
    local line = salta.dae{ name = "line", states = { { "x", 0 } }, params = { { "a", 0 } },
      f = function(t, x, z, p) return { p.a } end }
    local ts, d, n = {}, {}, 40
    for i = 1, n do
      ts[i] = 0.1 * i
      d[i] = 1 + 2 * ts[i] + 0.05 * math.sin(7.3 * i) -- a deterministic "noise"
    end
    local tbar, sxx, sxy, ybar = 0, 0, 0, 0
    for i = 1, n do tbar, ybar = tbar + ts[i] / n, ybar + d[i] / n end
    for i = 1, n do sxx, sxy = sxx + (ts[i] - tbar) ^ 2, sxy + (ts[i] - tbar) * (d[i] - ybar) end
    local a_hat = sxy / sxx
    local b_hat = ybar - a_hat * tbar
    local ssr = 0
    for i = 1, n do ssr = ssr + (d[i] - b_hat - a_hat * ts[i]) ^ 2 end
    local s2 = ssr / (n - 2)
    local se_a, se_b = math.sqrt(s2 / sxx), math.sqrt(s2 * (1 / n + tbar ^ 2 / sxx))
    local cov_ab = -s2 * tbar / sxx
    for _, tr in ipairs({ "none", "log" }) do
      local loss = salta.lsq{ model = line, times = ts, data = { x = d }, free = { "a", "x0.x" }, transform = tr,
        rtol = 1e-12, atol = 1e-12 }
      local r = salta.fit{ loss = loss, start = { 1.5, 0.5 }, method = "lm", print_every = 0 }
      assert.is_near(a_hat, r.x[1], 1e-9)
      assert.is_near(b_hat, r.x[2], 1e-9)
      local se = r:std_errors()
      assert.is_near(se_a, se.a, 1e-6 * se_a)
      assert.is_near(se_b, se["x0.x"], 1e-6 * se_b)
      assert.is_near(cov_ab, r:covariance()[1][2], 1e-6 * math.abs(cov_ab))
      assert.truthy(r:table():find(("%.2e"):format(se.a), 1, true))
    end
    -- a parameter the data cannot see: J'J is singular, and it is named
    local loss = salta.lsq{ model = line, times = ts, data = { x = d }, free = { "a", "x0.x" } }
    local r = salta.fit{ loss = loss, start = { 1.5, 0.5 }, method = "lm", print_every = 0 }
    r.lsq = salta.lsq{ model = salta.dae{ name = "flat", states = { { "x", 0 } },
      params = { { "a", 0 } }, f = function(t, x, z, p) return { 0 * p.a } end },
      times = ts, data = { x = d }, free = { "a", "x0.x" } }
    local cov, err = r:covariance()
    assert.is_nil(cov)
    assert.truthy(err:find("singular at 'a'", 1, true), err)
    -- missing data are no data: NaN rows give the fit without them
    local d2, ts3, d3 = {}, {}, {}
    for i = 1, n do
      d2[i] = i % 3 == 0 and 0 / 0 or d[i]
      if i % 3 ~= 0 then ts3[#ts3 + 1], d3[#d3 + 1] = ts[i], d[i] end
    end
    local with_nan = salta.fit{ loss = salta.lsq{ model = line, times = ts, data = { x = d2 },
      free = { "a", "x0.x" }, rtol = 1e-12, atol = 1e-12 }, start = { 1.5, 0.5 }, method = "lm", print_every = 0 }
    local without = salta.fit{ loss = salta.lsq{ model = line, times = ts3, data = { x = d3 },
      free = { "a", "x0.x" }, rtol = 1e-12, atol = 1e-12 }, start = { 1.5, 0.5 }, method = "lm", print_every = 0 }
    assert.is_near(without:std_errors().a, with_nan:std_errors().a, 1e-6 * without:std_errors().a)
    -- two data for two parameters: no degrees of freedom left
    local two = salta.fit{ loss = salta.lsq{ model = line, times = { 1, 2 }, data = { x = { 3, 5 } },
      free = { "a", "x0.x" } }, start = { 1.5, 0.5 }, method = "lm", print_every = 0 }
    local none, why = two:std_errors()
    assert.is_nil(none)
    assert.truthy(why:find("2 data for 2 parameters", 1, true), why)
    assert.truthy(two:table():find("std err", 1, true))
  end)

  it("gives calibrated standard errors through the events (balls N = 3, noisy positions)", function()
    -- ten noise draws (sigma = 1e-3, fixed seeds): the errors of the fitted
    -- g, e_g, e_b over their standard errors are z-scores of unit variance
    -- when the covariance is right; a covariance off by a factor 2 in the
    -- standard error puts the rms z-score near 0.5 or 2
    local b = H.model("bouncing_balls", { N = 3 })
    local bt, pos = {}, H.positions(3)
    for i = 1, 500 do bt[i] = 1.9 * (i - 1) / 499 end
    local btr = b:simulate{ tf = 1.9, times = bt, rtol = 1e-12, atol = 1e-12 }
    local truth3, sum2, count = { 9.81, 0.5, 0.6 }, 0, 0
    for draw = 1, 10 do
      local seed = draw * 7919
      local function uniform()
        seed = (1103515245 * seed + 12345) % 2147483648
        return (seed + 0.5) / 2147483648
      end
      local bdata = {}
      for _, n in ipairs(pos) do
        bdata[n] = {}
        for i, v in ipairs(btr.y[n]) do
          bdata[n][i] = v + 1e-3 * math.sqrt(-2 * math.log(uniform())) * math.cos(2 * math.pi * uniform())
        end
      end
      local loss = salta.lsq{ model = b, times = bt, data = bdata, free = { "g", "e_g", "e_b" },
        rtol = 1e-10, atol = 1e-12, method = "erk" }
      local r = salta.fit{ loss = loss, start = { 8.81, 0.6, 0.7 }, method = "lm", print_every = 0 }
      assert.is_true(r.converged, r.status)
      local se = r:std_errors()
      for k, n in ipairs({ "g", "e_g", "e_b" }) do
        sum2, count = sum2 + ((r.x[k] - truth3[k]) / se[n]) ^ 2, count + 1
      end
    end
    local rms = math.sqrt(sum2 / count)
    assert.is_true(rms > 0.6 and rms < 1.5, ("rms z-score %.3f over %d estimates"):format(rms, count))
  end)

  it("compares fits with published numbers in one table", function()
    local loss = salta.lsq{ model = m, times = times, data = data, free = { "k", "F_max", "e" },
      rtol = 1e-10, atol = 1e-12 }
    local r = salta.fit{ loss = loss, start = start, method = "lm", truth = truth, print_every = 0 }
    local text = salta.compare_fits({ r:row("salta lm", 2.5e-20),
      { label = "paper", errors = { k = 1.5, e = 2e-5 }, loss = 1e-3, iterations = 300 } }, { "k", "F_max", "e" })
    local lines = {}
    for l in text:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.are.equal(3, #lines)
    assert.truthy(lines[1]:find("k %", 1, true) and lines[1]:find("ms/iter", 1, true))
    assert.truthy(lines[2]:find("2.5000e-20", 1, true))
    assert.truthy(lines[2]:find(("2%%.5000e%%-20%%s+%d%%s"):format(r.iterations)), lines[2])
    -- 1.5 %, 2e-5 % kept at its magnitude, F_max and the times unknown
    assert.truthy(lines[3]:find("^paper%s+1%.5000%s+%-%s+2%.0e%-05%s+1%.0000e%-03%s+300%s+%-%s+%-$"), lines[3])
  end)

  it("refuses bad options with a clear message", function()
    local loss = salta.lsq{ model = m, times = times, data = data, free = { "k" } }
    local ok, err = pcall(salta.fit, { loss = loss, method = "newton" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("unknown method 'newton'", 1, true))
    ok, err = pcall(salta.fit, { loss = loss, start = { kk = 1 } })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("'kk', which is not free", 1, true))
  end)
end)

describe("horizon continuation", function()
  local m = H.model("cauer", { backend = "cc" })
  local FREE = { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" }
  local OUT = { "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" }
  local times = {}
  for i = 0, 500 do times[i + 1] = 20 * i / 500 end
  local tr = m:simulate{ tf = 20, times = times, rtol = 1e-10, atol = 1e-12 }
  local data = {}
  for _, n in ipairs(OUT) do data[n] = tr.y[n] end

  it("a window is the loss over the targets up to its end", function()
    local loss = salta.lsq{ model = m, times = times, data = data, free = FREE, rtol = 1e-10, atol = 1e-12 }
    local p = { 1.1, 0.25, 1.6, 0.8, 0.75, 1.35, 0.87 }
    local full, w = loss:residuals(p), loss:window(7.3)
    assert.are.equal(183, #w.times)            -- t = 0, 0.04, ..., 7.28
    local r = w:residuals(p)
    assert.are.equal(183 * 5, #r)
    -- r = (y - d) / sqrt(N): the window's rows are the full loss's first
    -- rows rescaled from N = 501 x 5 to N = 183 x 5 entries
    local scale = math.sqrt(501 / 183)
    -- (within the integration error: the window's run stops at t = 7.28)
    for i = 1, #r do assert.is_near(full[i] * scale, r[i], 1e-10 + 1e-6 * math.abs(r[i])) end
    local ok, err = pcall(loss.window, loss, -1)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("window(-1) holds no target (the first is at t = 0)", 1, true), tostring(err))
  end)

  it("takes Levenberg-Marquardt to the Cauer truth from the paper's biased start", function()
    -- issue 6 acceptance: MSE <= 1e-12, every parameter within 0.01 %, at
    -- most 50 iterations; the MSE from an independent tight BDF simulation
    local START = { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 }
    local loss = salta.lsq{ model = m, times = times, data = data, free = FREE, rtol = 1e-10, atol = 1e-12,
      method = "erk" }
    local r = salta.fit{ loss = loss, start = START, method = "lm", horizon = true, print_every = 0 }
    -- stages from the events: the first ends before the first reset of the run at the start
    assert.is_true(r.stages[1].t_end < loss:event_times(START)[1])
    for s = 2, #r.stages do assert.is_true(r.stages[s].targets > r.stages[s - 1].targets) end
    assert.are.equal(501, r.stages[#r.stages].targets)
    assert.is_true(r.iterations <= 50, r.iterations)
    for k, n in ipairs(FREE) do assert.is_near(m.p0[n], r.x[k], 1e-4 * m.p0[n]) end
    local mse = salta.lsq{ model = m, times = times, data = data, free = FREE, rtol = 1e-11, atol = 1e-13 }
    assert.is_true(mse:value(r.x) <= 1e-12, mse:value(r.x))
  end)

  it("ends at a callback's stop and reuses its options unchanged", function()
    local loss = salta.lsq{ model = m, times = times, data = data, free = FREE, rtol = 1e-8, atol = 1e-10,
      method = "erk" }
    local START = { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 }
    local seen = {}
    local spec = { loss = loss, start = START, method = "lm", horizon = { 2.5, 5 }, print_every = 0,
      callback = function(it) seen[#seen + 1] = it; return it >= 7 end }
    local r = salta.fit(spec)
    assert.are.equal(2, #r.stages)          -- stopped in the second of three stages
    assert.are.same({ 2.5, 5 }, spec.horizon)
    for i, it in ipairs(seen) do assert.are.equal(i, it) end   -- numbered over the stages
    assert.are.equal(7, seen[#seen])
    spec.callback = nil
    assert.are.equal(3, #salta.fit(spec).stages)   -- the same spec again
  end)

  it("ends with the last stage's result when the next horizon fails there", function()
    -- x' = sqrt(2 - a t): the first horizon's fit has a = 1.03, where the
    -- solution ends at t = 1.95, inside the next horizon
    local root = salta.dae{ name = "root", states = { { "x", 0 } }, params = { { "a", 0.1 } },
      f = function(t, x, z, p) return { salta.sqrt(2 - p.a * t) } end }
    local ts, d = {}, {}
    for i = 0, 40 do ts[i + 1] = 0.1 * i; d[i + 1] = 1.5 * ts[i + 1] - 0.3 * ts[i + 1] ^ 2 end
    local loss = salta.lsq{ model = root, times = ts, data = { x = d }, free = { "a" }, max_steps = 5000 }
    local r = salta.fit{ loss = loss, start = { 0.1 }, method = "lm", horizon = { 1 }, print_every = 0 }
    assert.is_false(r.converged)
    assert.are.equal(1, #r.stages)
    assert.truthy(r.status:find("^stopped: the loss on horizon 2 %(t <= 4%) fails at the result of horizon 1: "
      .. "model 'root': "), r.status)
    assert.is_true(r.x[1] > 1)
    assert.are.equal(r.stages[1].loss, r.loss)        -- the first horizon's loss, on its window
    assert.are.equal(11, #r.lsq.times)
  end)

  it("refuses horizons that are not increasing or reach the last target", function()
    local loss = salta.lsq{ model = m, times = times, data = data, free = { "C1_C" } }
    local ok, err = pcall(salta.fit, { loss = loss, method = "lm", horizon = { 5, 2 }, print_every = 0 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("horizon[2] = 2: the end times must be increasing", 1, true), tostring(err))
    ok, err = pcall(salta.fit, { loss = loss, method = "lm", horizon = { 5, 20 }, print_every = 0 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("horizon[2] = 20 is not before the last target (t = 20)", 1, true), tostring(err))
  end)

  it("without events takes 1/6, 1/3 and 2/3 of the span, and holds what a stage does not determine", function()
    -- x' = -k x + c (t > 5 ? 1 : 0) through a step input: c has no influence before t = 5
    local step = salta.table{ t = { 0, 5, 30 }, v = { 0, 1, 1 }, interp = "step" }
    local dm = salta.dae{ name = "stepped", states = { { "x", 1 } }, params = { k = 0.5, c = 2 },
      inputs = { u = step }, f = function(t, x, z, p, u) return { -p.k * x.x + p.c * u.u(t) } end }
    local ts, d = {}, {}
    for i = 1, 120 do ts[i] = 0.25 * i end
    local y = dm:simulate{ tf = 30, times = ts, rtol = 1e-10, atol = 1e-12 }
    for i = 1, #ts do d[i] = y.y.x[i] end
    local loss = salta.lsq{ model = dm, times = ts, data = { x = d }, free = { "k", "c" }, rtol = 1e-9, atol = 1e-11 }
    local r = salta.fit{ loss = loss, start = { 0.6, 2.5 }, horizon = true, print_every = 0 }
    assert.are.same({ 20, 40, 80, 120 }, { r.stages[1].targets, r.stages[2].targets, r.stages[3].targets,
      r.stages[4].targets })
    assert.are.same({ "c" }, r.stages[1].held)   -- t <= 5: no influence
    assert.are.equal(math.huge, r.stages[1].held_rse.c)
    assert.is_nil(r.stages[2].held)
    assert.truthy(r:table():find("horizon 1 (t <= 5) held, not determined by its data: c (no influence", 1, true))
    assert.is_near(0.5, r.params.k, 1e-6)
    assert.is_near(2, r.params.c, 1e-6)
  end)
end)

describe("data files", function()
  it("CSV round trip keeps every bit, NaN for missing", function()
    local path = os.tmpname()
    local cols = { t = { 0, 0.1, 1 / 3 }, y = { math.pi, 0.1 + 0.2, -1e-300 } }
    salta.write_csv(path, { "t", "y" }, cols)
    local back = salta.read_csv(path)
    os.remove(path)
    assert.are.same({ "t", "y" }, back.names)
    for i = 1, 3 do
      assert.are.equal(cols.t[i], back.columns.t[i])
      assert.are.equal(cols.y[i], back.columns.y[i])
    end
  end)
  it("a bad row names the file, the line and the column", function()
    local path = H.temp_file("t,y\n0,1\n0.5,2,3\n")
    local ok, err = pcall(salta.read_csv, path)
    os.remove(path)
    assert.is_false(ok)
    assert.truthy(tostring(err):find(path .. ":3: 3 fields, expected 2", 1, true), tostring(err))
  end)
  it("JSON writes 17 significant digits and null for NaN", function()
    local s = salta.json.encode({ a = 0.1 + 0.2, b = 0 / 0, c = { 1, 2 } })
    assert.truthy(s:find("0.30000000000000004", 1, true))
    assert.truthy(s:find('"b": null', 1, true))
  end)
  it("writes names with underscores as they are, not as subscripts", function()
    local path = os.tmpname() .. ".svg"
    salta.plot.series(path, { { name = "C3_v", x = { 0, 1 }, y = { 1, 2 } } }, { title = "fit_1" })
    local text = assert(io.open(path)):read("a")
    os.remove(path)
    assert.truthy(text:find(">C3_v<", 1, true) and text:find(">fit_1<", 1, true))
  end)
  it("plots to PNG and SVG through gnuplot", function()
    for _, ext in ipairs({ "png", "svg" }) do
      local path = os.tmpname() .. "." .. ext
      salta.plot.series(path, { { name = "s", x = { 0, 1, 2 }, y = { 1, 0, 1 } } }, { title = "t", vlines = { 1 } })
      local f = assert(io.open(path, "rb"))
      local head = f:read(8)
      f:close()
      os.remove(path)
      if ext == "png" then assert.are.equal("\137PNG", head:sub(1, 4)) else assert.truthy(head:find("<?xml", 1, true) or head:find("<svg", 1, true)) end
    end
  end)
end)
