-- The seed paper's bouncing-balls experiment (models/bouncing_balls.lua's
-- spec files, the reference's targets and start):
-- identify gravity g and the restitutions e_g (walls) and e_b (ball-ball)
-- from the ball positions on 500 uniform times in [0, 1.9], starting from
-- (8.81, 0.6, 0.7). Adam as the reference (step 1e-2; 300, 300, 600
-- iterations for N = 3, 7, 15; clipping g to [0.001, 100], e to [0.001, 5]),
-- then Levenberg-Marquardt from the same start.
--
--   salta examples/balls_fit.lua N [adam|lm|both] [outdir]
local salta = require("salta")
local clock = require("salta.core").clock

local N = tonumber(arg and arg[1]) or 3
local which = arg and arg[2] or "both"
local outdir = arg and arg[3] or ("balls_fit_out_N" .. N)
os.execute(("mkdir -p '%s'"):format(outdir))

local REF = { [3] = { iters = 300, jax_ad = 1.4e-9, ms = 74 }, [7] = { iters = 300, jax_ad = 1.6e-9, ms = 71 },
  [15] = { iters = 600, jax_ad = 1.35e-5, ms = 110 } }
-- The paper's Table 2 (results/benchmark_three_N{3,7,15}.json of the
-- reference code; N = 3 from its commit 7624d60): error % of g, e_g, e_b,
-- final position MSE, iterations, total s, ms/iter
local function ref_row(label, g, eg, eb, loss, iters, total, ms)
  return { label = label, errors = { g = g, e_g = eg, e_b = eb }, loss = loss, iterations = iters,
    total_s = total, ms_per_iter = ms }
end
local PAPER = {
  [3] = { ref_row("reference jax_ad", 0.0019, 0.0005, 0.0019, 1.4032e-9, 300, 33.36, 73.89),
          ref_row("reference jax_da", 0.2706, 1.1554, 0.1576, 9.3750e-5, 300, 22.10, 61.94),
          ref_row("reference pytorch_ad", 0.0032, 0.0001, 0.0035, 3.8925e-9, 300, 168.56, 554.41) },
  [7] = { ref_row("reference jax_ad", 0.0022, 0.0028, 0.0011, 1.6275e-9, 300, 33.35, 71.18),
          ref_row("reference jax_da", 0.1503, 0.0883, 0.0973, 7.7597e-6, 300, 84.00, 254.81),
          ref_row("reference pytorch_ad", 0.0137, 0.0105, 0.0094, 6.6047e-8, 300, 525.53, 1740.42) },
  [15] = { ref_row("reference jax_ad", 0.0319, 0.1856, 0.4227, 1.3497e-5, 600, 77.25, 110.12),
           ref_row("reference jax_da", 0.2104, 2.6709, 4.0405, 9.2756e-4, 495, 595.71, 1157.50),
           ref_row("reference pytorch_ad", 0.0004, 0.0045, 0.0006, 3.8764e-8, 423, 2826.93, 6652.22) },
}
local ref = REF[N] or { iters = 300 }
local t_start = clock()
local m = dofile("models/bouncing_balls.lua"){ N = N, backend = "cc" }
local FREE = { "g", "e_g", "e_b" }
local START = { 8.81, 0.6, 0.7 }
local truth = { g = 9.81, e_g = 0.5, e_b = 0.6 }

local times, pos = {}, {}
for i = 1, 500 do times[i] = 1.9 * (i - 1) / 499 end
for i = 1, N do pos[#pos + 1] = "x" .. i; pos[#pos + 1] = "y" .. i end
local true_tr = m:simulate{ tf = 1.9, times = times, rtol = 1e-12, atol = 1e-12 }
local data = {}
for _, n in ipairs(pos) do data[n] = true_tr.y[n] end
-- the position MSE (the reference's validation loss) from a tight simulation
local check = salta.lsq{ model = m, times = times, data = data, free = FREE, rtol = 1e-12, atol = 1e-12, method = "erk" }
print(("bouncing balls N = %d: %d targets x %d positions, %d events at the truth; initial position MSE %.4e"):format(
  N, #times, #pos, #true_tr:events(), check:value(START)))

local results, rows = {}, {}
local function report(name, r)
  print(r:table())
  local mse = check:value(r.x)
  print(("position MSE at the final parameters: %.4e (reference jax_ad %s); %.2f ms/iter (reference JAX-AD %s ms)"):format(
    mse, ref.jax_ad and ("%.2g"):format(ref.jax_ad) or "-", r.ms_per_iter, ref.ms or "-"))
  r:to_json(("%s/balls_N%d_%s.json"):format(outdir, N, name), { position_mse = mse, N = N })
  local it = {}
  for i = 1, #r.history.loss do it[i] = i end
  salta.plot.series(("%s/balls_N%d_%s_loss.png"):format(outdir, N, name), { { name = "loss", x = it, y = r.history.loss } },
    { logy = true, xlabel = "iteration", ylabel = "loss", title = ("balls N = %d, %s"):format(N, name) })
  -- the reference's prediction-error history: |p_k - p_true| over iterations
  local perr = {}
  for i, x in ipairs(r.history.params) do
    local e = 0
    for k, n in ipairs(FREE) do e = e + (x[k] - truth[n]) ^ 2 end
    perr[i] = math.sqrt(e)
  end
  salta.plot.series(("%s/balls_N%d_%s_param_error.png"):format(outdir, N, name), { { name = "|p - p_true|", x = it, y = perr } },
    { logy = true, xlabel = "iteration", ylabel = "parameter error", title = ("balls N = %d, %s"):format(N, name) })
  results[name] = { fit = r, mse = mse }
  rows[#rows + 1] = r:row("salta " .. name, mse)
end

if which == "adam" or which == "both" then
  print(("\n== Adam (step 1e-2, %d iterations) =="):format(ref.iters))
  local loss = salta.lsq{ model = m, times = times, data = data, free = FREE, rtol = 1e-6, atol = 1e-6, method = "erk" }
  local r = salta.fit{ loss = loss, start = START, method = "adam", lr = 1e-2, max_iter = ref.iters, tol = N == 15 and 1e-6 or 1e-8,
    lower = { 0.001, 0.001, 0.001 }, upper = { 100, 5, 5 }, truth = truth, print_every = 50 }
  report("adam", r)
end

if which == "lm" or which == "both" then
  print("\n== Levenberg-Marquardt ==")
  local loss = salta.lsq{ model = m, times = times, data = data, free = FREE, rtol = 1e-10, atol = 1e-12, method = "erk" }
  local r = salta.fit{ loss = loss, start = START, method = "lm", truth = truth, print_every = 1 }
  report("lm", r)
  local fitted = m:simulate{ tf = 1.9, times = times, params = r.params }
  local shown = { "y1", "y2" }
  salta.plot.trajectory(("%s/balls_N%d_lm.png"):format(outdir, N), fitted, { outputs = shown,
    data = { t = times, y1 = data.y1, y2 = data.y2 }, title = ("balls N = %d: fitted heights vs data"):format(N) })
end
for _, row in ipairs(PAPER[N] or {}) do rows[#rows + 1] = row end
print(("\n== Against the seed paper, N = %d (errors in %%, final loss = position MSE) =="):format(N))
print(salta.compare_fits(rows, FREE))
print(("\ntotal %.2f s; results and plots in %s/"):format(clock() - t_start, outdir))
return results
