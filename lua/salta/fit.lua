-- salta.fit: parameter estimation over a salta.lsq loss.
--
--   local r = salta.fit{ loss = loss, start = { g = 8.81, e_g = 0.6 },
--     method = "lm" | "lbfgsb" | "adam", truth = { g = 9.81, e_g = 0.5 } }
--   print(r:table())      r:to_json("fit.json")
--
-- Free parameters with transform = "log" in the loss are optimised in log
-- space (bounds too). Progress goes to `log` (default print) every
-- `print_every` iterations (default 10; 0 for silence).
--
-- gradient = "sens" (default) | "adjoint" | { method = "adjoint", mesh =
-- "steps" (default) | K, forward = "consistent" | "ida" } for adam and lbfgsb: the
-- adjoint route fits the discrete loss it differentiates, at a cost that
-- does not grow with the number of free parameters.
--
-- horizon = true | {t1, t2, ...}: continuation on the time horizon. The fit
-- runs first on the targets at t <= t1 (loss:window), then from its result
-- on t <= t2, ..., and last on the whole loss. `true` takes the horizons
-- t0 + span/6, span/3, 2 span/3. An oscillating trajectory fitted over its
-- whole horizon at once has many local minima (phases matched a period
-- off, events matched to the wrong events); a short horizon has few, and
-- each longer one starts near its minimum. max_iter applies per stage;
-- iterations, evaluations and times add up over the stages; ms_per_iter is
-- the last stage's; `stages` lists each stage's end, targets, iterations,
-- loss, status and ms/iter. A stage stopped by a failed evaluation at a
-- trial point hands its last accepted iterate to the next stage. A callback
-- that returns true, or a next horizon whose loss fails at that iterate,
-- ends the run there, and then loss, std_errors and covariance are those of
-- the last stage's window (fit.lsq).

local optim = require("salta.optim")
local covariance = require("salta.covariance")
local index_of = require("salta.names").index_of
local options = require("salta.options")
local json = require("salta.json")
local clock = require("salta.core").clock
local mpi = require("salta.mpi")
local multistart = require("salta.multistart")

local M = {}

local Fit = {}
Fit.__index = Fit
Fit.__name = "salta.Fit"

local function by_name(loss, v, what, default)
  local out = {}
  if v == nil then
    for k in ipairs(loss.free) do out[k] = default and default(k) end
    return out
  end
  if #v > 0 then
    if #v ~= #loss.free then
      error(("salta.fit: %s has %d values, expected %d (%s)"):format(what, #v, #loss.free,
        table.concat(loss.free, ", ")), 3)
    end
    for k = 1, #v do out[k] = v[k] end
    return out
  end
  local known = index_of(loss.free)
  for n in pairs(v) do
    if not known[n] then error(("salta.fit: %s names '%s', which is not free"):format(what, tostring(n)), 3) end
  end
  for k, n in ipairs(loss.free) do
    out[k] = v[n]
    if out[k] == nil and default then out[k] = default(k) end
  end
  return out
end

-- The value of free parameter k in the model (its nominal or x0 value).
local function nominal(loss, k) return loss:nominal(k) end

-- mean wall time per iteration, the first (warm-up) excluded as in the reference
local function ms_per_iter(ms_list)
  local ms, cnt = 0, 0
  for i = 2, #ms_list do ms, cnt = ms + ms_list[i], cnt + 1 end
  return cnt > 0 and ms / cnt or (ms_list[1] or 0)
end

local METHODS = { lm = true, lbfgsb = true, adam = true }
local GRADIENTS = { sens = true, adjoint = true, fd = true }

-- Everything about a fit that can be wrong before it runs, checked once:
-- the method, the gradient route, start and bounds by name, log domains.
-- Errors name the caller of salta.fit (level 3 from here).
local function prepare(spec)
  local loss = spec.loss
  local plan = { method = spec.method or "lm" }
  if not METHODS[plan.method] then
    error(("salta.fit: unknown method '%s' (\"lm\", \"lbfgsb\" or \"adam\")"):format(tostring(plan.method)), 3)
  end
  local gradient = spec.gradient or "sens"
  if type(gradient) == "string" then gradient = { method = gradient } end
  if type(gradient) ~= "table" then error("salta.fit: gradient must be a route name or a table", 3) end
  options.check("grad", gradient, "salta.fit: option 'gradient'")
  gradient.method = gradient.method or "sens"
  if not GRADIENTS[gradient.method] then
    error(("salta.fit: unknown gradient method '%s' (\"sens\", \"adjoint\" or \"fd\")"):format(
      tostring(gradient.method)), 3)
  end
  if plan.method == "lm" and gradient.method ~= "sens" then
    error("salta.fit: Levenberg-Marquardt needs the residual Jacobian (forward sensitivities); the "
      .. gradient.method .. " route gives the gradient only: use lbfgsb or adam with it", 3)
  end
  plan.gradient = gradient
  plan.start = by_name(loss, spec.start, "start", function(k) return nominal(loss, k) end)
  plan.lower = by_name(loss, spec.lower, "lower", function() return -math.huge end)
  plan.upper = by_name(loss, spec.upper, "upper", function() return math.huge end)
  for k, n in ipairs(loss.free) do
    local lo, hi = plan.lower[k], plan.upper[k]
    if type(lo) ~= "number" or type(hi) ~= "number" or lo ~= lo or hi ~= hi then
      error(("salta.fit: the bounds of '%s' must be numbers, got lower %s, upper %s"):format(n, tostring(lo),
        tostring(hi)), 3)
    end
    if lo > hi then
      error(("salta.fit: the bounds of '%s' are inverted: lower %g > upper %g"):format(n, lo, hi), 3)
    end
    if type(plan.start[k]) ~= "number" or plan.start[k] ~= plan.start[k] then
      error(("salta.fit: the start of '%s' must be a number, got %s"):format(n, tostring(plan.start[k])), 3)
    end
    if loss.log[k] and not (plan.start[k] > 0) then
      error(("salta.fit: '%s' is log-transformed but starts at %g"):format(n, plan.start[k]), 3)
    end
    if loss.log[k] and (plan.lower[k] < 0 and plan.lower[k] > -math.huge or plan.upper[k] <= 0) then
      error(("salta.fit: '%s' is log-transformed but its bounds are [%g, %g]"):format(n, plan.lower[k],
        plan.upper[k]), 3)
    end
    if plan.lower[k] > -math.huge or plan.upper[k] < math.huge then plan.bounded = true end
  end
  if plan.method == "lm" and plan.bounded then
    error("salta.fit: Levenberg-Marquardt (lmder) takes no bounds; use lbfgsb or adam", 3)
  end
  if gradient.method == "adjoint" then
    local ok, why = loss:mesh_check(plan.start, gradient)
    if not ok then error("salta.fit: " .. why, 3) end
  end
  return plan
end

-- check = true: the fit's gradient route and the differences against the
-- reference at the start; printed (unless print_every = 0), and an error
-- when a route disagrees or the point is not differentiable.
local function check_start(spec, plan)
  local loss = spec.loss
  if not loss.check_gradient then error("salta.fit: check needs a salta.lsq loss", 3) end
  local method = type(spec.gradient) == "table" and spec.gradient.method or spec.gradient or "sens"
  local rep = loss:check_gradient{ at = plan.start, routes = { method == "adjoint" and "adjoint" or "sens", "fd" } }
  if spec.print_every ~= 0 then mpi.print(tostring(rep)) end
  if rep.verdict ~= "ok" then error("salta.fit: the gradient check at the start failed:\n" .. tostring(rep), 3) end
end

-- One run of plan.method on loss from start (natural units).
local function fit_once(spec, plan, loss, start)
  local method, lower, upper = plan.method, plan.lower, plan.upper

  -- optimisation variables: log p where the loss is log-transformed
  local function to_u(p, k)
    if not loss.log[k] then return p end
    if p == -math.huge or p == 0 then return -math.huge end
    return math.log(p)
  end
  local function to_p(u)
    local p = {}
    for k = 1, #u do p[k] = loss.log[k] and math.exp(u[k]) or u[k] end
    return p
  end
  local u0, lo, hi = {}, {}, {}
  for k = 1, #start do
    u0[k] = to_u(start[k], k)
    lo[k] = to_u(lower[k], k)
    hi[k] = to_u(upper[k], k)
  end

  local print_every = spec.print_every
  if print_every == nil then print_every = 10 end
  local opts = {
    max_iter = spec.max_iter, tol = spec.tol, rel_tol = spec.rel_tol, lr = spec.lr, beta1 = spec.beta1,
    beta2 = spec.beta2, eps = spec.eps, best = spec.best, m = spec.m, factr = spec.factr, pgtol = spec.pgtol,
    ftol = spec.ftol, xtol = spec.xtol, gtol = spec.gtol, factor = spec.factor, max_eval = spec.max_eval, print_every = print_every,
    log = print_every > 0 and (spec.log or mpi.print) or nil,
    callback = spec.callback and function(it, u, f, g) return spec.callback(it, to_p(u), f, g) end,
  }
  if plan.bounded then opts.lower, opts.upper = lo, hi end

  local t0 = clock()
  local r
  local function fg(u) return loss:value_and_grad(to_p(u), plan.gradient) end
  if method == "adam" then
    if opts.max_iter == nil then opts.max_iter = 500 end
    r = optim.adam(fg, u0, opts)
  elseif method == "lbfgsb" then
    r = optim.lbfgsb(fg, u0, opts)
  else
    local m = #loss:residuals(start)
    r = optim.lm(function(u, what)
      local p = to_p(u)
      return what == "r" and loss:residuals(p) or loss:jacobian(p)
    end, u0, m, opts)
  end
  local total = clock() - t0

  local self = setmetatable({
    method = method, free = loss.free, x = to_p(r.x), loss = r.f, iterations = r.iterations,
    evaluations = r.evaluations, status = r.status, converged = r.converged, error = r.error,
    best_snapshot = r.best_snapshot, start = start, truth = spec.truth, total_s = total,
    history = { loss = r.history.f, gnorm = r.history.gnorm, ms = r.history.ms, params = {} },
    lsq = loss,
  }, Fit)
  for i, u in ipairs(r.history.x) do self.history.params[i] = to_p(u) end
  self.params = {}
  for k, n in ipairs(loss.free) do self.params[n] = self.x[k] end
  self.ms_per_iter = ms_per_iter(r.history.ms)
  return self
end

-- The stage end times of a horizon continuation, before the whole loss.
local function horizons(loss, h)
  local times = loss.times
  local t_last = times[#times]
  if h == true then
    local span = t_last - loss.t0
    return { loss.t0 + span / 6, loss.t0 + span / 3, loss.t0 + 2 * span / 3 }
  end
  if type(h) ~= "table" or #h == 0 then
    error("salta.fit: horizon must be true or an increasing array of end times", 3)
  end
  for i, t in ipairs(h) do
    if type(t) ~= "number" or t ~= t or (i > 1 and t <= h[i - 1]) then
      error(("salta.fit: horizon[%d] = %s: the end times must be increasing numbers"):format(i, tostring(t)), 3)
    end
    if t >= t_last then
      error(("salta.fit: horizon[%d] = %g is not before the last target (t = %g); the last stage is always "
        .. "the whole loss"):format(i, t, t_last), 3)
    end
  end
  return { table.unpack(h) }
end

-- Fit on loss:window(t) for each horizon t, then on the whole loss, each
-- stage starting where the last ended. A callback that asks to stop ends
-- the continuation.
local function fit_horizons(spec, plan)
  local loss = spec.loss
  local ends = horizons(loss, spec.horizon)
  ends[#ends + 1] = math.huge
  local stage_spec, stages, result = {}, {}, nil
  for k, v in pairs(spec) do stage_spec[k] = v end
  local hist = { loss = {}, gnorm = {}, ms = {}, params = {} }
  local iterations, evaluations, total, stop = 0, 0, 0, false
  if spec.callback then   -- iterations counted over the stages
    stage_spec.callback = function(it, ...)
      if spec.callback(iterations + it, ...) then stop = true end
      return stop
    end
  end
  local log = (spec.print_every or 10) > 0 and (spec.log or mpi.print) or nil
  local start = plan.start
  for s, t_end in ipairs(ends) do
    local window = t_end < math.huge and loss:window(t_end) or loss
    if log then
      log(("-- horizon %d/%d: t <= %g, %d targets"):format(s, #ends, window.times[#window.times], #window.times))
    end
    -- a later stage's start is the last stage's result: if the longer
    -- horizon cannot be evaluated there, the run ends with that result
    local ok, err = true, nil
    if s > 1 then
      ok, err = pcall(function()   -- what the stage's method evaluates first
        if plan.method == "lm" then return window:residuals(start), window:jacobian(start) end
        return window:value_and_grad(start, plan.gradient)
      end)
    end
    if not ok then
      result.status = ("stopped: the loss on horizon %d (t <= %g) fails at the result of horizon %d: %s"):format(
        s, window.times[#window.times], s - 1, tostring(err))
      result.error, result.converged = tostring(err), false
      if log then log(result.status) end
      break
    end
    result = fit_once(stage_spec, plan, window, start)
    start = result.x
    stages[s] = { t_end = window.times[#window.times], targets = #window.times, iterations = result.iterations,
      loss = result.loss, status = result.status, ms_per_iter = result.ms_per_iter }
    iterations, evaluations, total = iterations + result.iterations, evaluations + result.evaluations,
      total + result.total_s
    for key, list in pairs(hist) do
      for _, v in ipairs(result.history[key]) do list[#list + 1] = v end
    end
    if stop then break end
    -- a stage that failed at a trial point still ends at an accepted
    -- iterate; the next, longer horizon starts from it
  end
  -- ms_per_iter stays the last stage's: the cost of an iteration on the
  -- loss it ends on (the shorter windows' iterations are cheaper)
  result.start = plan.start
  result.iterations, result.evaluations, result.total_s = iterations, evaluations, total
  result.history, result.stages = hist, stages
  return result
end

-- A Fit from a multi-start outcome gathered from another rank.
local function from_outcome(spec, loss, o)
  local self = setmetatable({
    method = spec.method or "lm", free = loss.free, x = o.x, loss = o.loss, iterations = math.tointeger(o.iterations),
    evaluations = math.tointeger(o.evaluations), status = o.message or "-", converged = o.converged,
    start = o.start, truth = spec.truth, total_s = 0, history = { loss = {}, gnorm = {}, ms = {}, params = {} },
    lsq = loss, ms_per_iter = 0,
  }, Fit)
  self.params = {}
  for k, n in ipairs(loss.free) do self.params[n] = self.x[k] end
  return self
end

-- Multi-start (salta.multistart): the starts from the box [lower, upper];
-- LM's fits unbounded, the others within it.
local function fit_multistart(spec)
  local loss = spec.loss
  local box = { loss = loss, start = spec.start }
  box.lower = by_name(loss, spec.lower, "lower", function() return -math.huge end)
  box.upper = by_name(loss, spec.upper, "upper", function() return math.huge end)
  local starts = multistart.starts(loss, spec, box.lower, box.upper)
  for i, s in ipairs(starts) do starts[i] = by_name(loss, s, ("starts[%d]"):format(i)) end
  local local_spec = {}
  for k, v in pairs(spec) do local_spec[k] = v end
  local_spec.starts, local_spec.sampling, local_spec.seed = nil, nil, nil
  local_spec.print_every = spec.print_every or 0
  if (spec.method or "lm") == "lm" then local_spec.lower, local_spec.upper = nil, nil end
  local plan = prepare(local_spec)
  local t0 = clock()
  local outcomes, best = multistart.run(starts, function(start)
    if local_spec.horizon then
      local p = {}
      for k, v in pairs(plan) do p[k] = v end
      p.start = start
      return fit_horizons(local_spec, p)
    end
    return fit_once(local_spec, plan, loss, start)
  end, function(o) return from_outcome(spec, loss, o) end)
  best.starts, best.multistart_s = outcomes, clock() - t0
  return best
end

function M.fit(spec)
  if type(spec) ~= "table" then error("salta.fit: expected a table", 2) end
  options.check("fit", spec, "salta.fit")
  local loss = spec.loss
  if type(loss) ~= "table" or not loss.value_and_grad then error("salta.fit: loss must be a salta.lsq loss", 2) end
  if #loss.free == 0 then error("salta.fit: the loss has no free parameters", 2) end
  if spec.starts then return fit_multistart(spec) end
  local plan = prepare(spec)
  if spec.check then check_start(spec, plan) end
  if spec.horizon then return fit_horizons(spec, plan) end
  return fit_once(spec, plan, loss, plan.start)
end

-- profile(name, opts): the profile likelihood of a fitted parameter
-- (salta.profile).
function Fit:profile(name, opts)
  return require("salta.profile").run(M, self, name, opts)
end

-- starts_table(): every start of a multi-start fit, sorted by final loss.
function Fit:starts_table()
  if not self.starts then return "not a multi-start fit" end
  local lines = { ("%5s %6s %14s %7s %s"):format("rank", "start", "final loss", "iters", "outcome") }
  for r, o in ipairs(self.starts) do
    lines[#lines + 1] = ("%5d %6d %14.6e %7d %s"):format(r, o.index, o.loss, math.tointeger(o.iterations) or 0,
      o.failed and ("failed: " .. tostring(o.message)) or tostring(o.message))
  end
  return table.concat(lines, "\n")
end

-- waterfall(path): the final losses against their rank (log scale), the
-- plateaus showing how many starts reached each minimum. Rank 0 writes.
function Fit:waterfall(path, opts)
  if not self.starts then error("salta.fit: waterfall needs a multi-start fit", 2) end
  if not mpi.is_root() then return end
  local x, y = {}, {}
  for r, o in ipairs(self.starts) do
    if o.loss < math.huge then x[#x + 1], y[#y + 1] = r, o.loss end
  end
  opts = opts or {}
  require("salta.options").check("waterfall", opts, "fit:waterfall")
  return require("salta.plot").series(path, { { name = "final loss", x = x, y = y, points = true } },
    { title = opts.title or ("multi-start: %d starts"):format(#self.starts), xlabel = "start, by rank",
      ylabel = "final loss", logy = true, size = opts.size })
end

-- covariance(): the linearised covariance of the fitted parameters
-- (salta.covariance), computed once; nil and a message when it has none.
function Fit:covariance()
  if not (self.cov or self.cov_error) then self.cov, self.cov_error = covariance.at(self.lsq, self.x) end
  return self.cov, self.cov_error
end

-- std_errors(): the square roots of the covariance's diagonal, by name.
function Fit:std_errors()
  local cov, err = self:covariance()
  if not cov then return nil, err end
  local out = {}
  for k, n in ipairs(self.free) do out[n] = math.sqrt(cov[k][k]) end
  return out
end

-- correlation(): the correlation matrix of the fitted parameters (nil and
-- a message without a covariance).
function Fit:correlation()
  local cov, err = self:covariance()
  if not cov then return nil, err end
  local out = {}
  for i = 1, #cov do
    out[i] = {}
    for j = 1, #cov do out[i][j] = cov[i][j] / math.sqrt(cov[i][i] * cov[j][j]) end
  end
  return out
end

-- confidence(level): Wald intervals estimate -+ z se by name (level 0.95
-- by default: z = 1.96); profile-based ones come from fit:profile(name).
local Z = { [0.68] = 0.994457883, [0.9] = 1.644853627, [0.95] = 1.959963985, [0.99] = 2.575829304 }
function Fit:confidence(level)
  level = level or 0.95
  local z = Z[level] or error("fit:confidence: level must be 0.68, 0.9, 0.95 or 0.99, got " .. tostring(level), 2)
  local se, err = self:std_errors()
  if not se then return nil, err end
  local out = {}
  for k, n in ipairs(self.free) do out[n] = { self.x[k] - z * se[n], self.x[k] + z * se[n] } end
  return out
end

-- A labelled square matrix as text.
local function matrix_text(title, names, m, fmt)
  local w = 12
  for _, n in ipairs(names) do w = math.max(w, #n + 1) end
  local head = { ("%-" .. w .. "s"):format(title) }
  for _, n in ipairs(names) do head[#head + 1] = ("%" .. w .. "s"):format(n) end
  local lines = { table.concat(head) }
  for i, n in ipairs(names) do
    local row = { ("%-" .. w .. "s"):format(n) }
    for j = 1, #names do row[#row + 1] = ("%" .. w .. "s"):format(fmt:format(m[i][j])) end
    lines[#lines + 1] = table.concat(row)
  end
  return table.concat(lines, "\n")
end

-- report(): the table, the 95 % Wald intervals, and the labelled
-- covariance and correlation matrices.
function Fit:report()
  local out = { self:table() }
  local ci, why = self:confidence(0.95)
  if not ci then
    out[#out + 1] = "no covariance: " .. tostring(why)
    return table.concat(out, "\n")
  end
  out[#out + 1] = "\n95 % confidence intervals (Wald: estimate -+ 1.96 std err; fit:profile(name) for profile-based):"
  for _, n in ipairs(self.free) do out[#out + 1] = ("  %-14s [%.8g, %.8g]"):format(n, ci[n][1], ci[n][2]) end
  out[#out + 1] = ""
  out[#out + 1] = matrix_text("covariance", self.free, self:covariance(), "%.4g")
  out[#out + 1] = ""
  out[#out + 1] = matrix_text("correlation", self.free, self:correlation(), "%.4f")
  return table.concat(out, "\n")
end

-- plot(path, opts): the model at the fitted parameters over the data, the
-- residuals below (salta.plot.fit); rank 0 writes.
function Fit:plot(path, opts)
  if not mpi.is_root() then return end
  return require("salta.plot").fit(path, self, opts)
end

-- A relative error in % with d decimals; "-" for none, and a small error
-- keeps its magnitude instead of printing as zero.
local function percent(v, d)
  if v == nil then return "-" end
  if v ~= 0 and math.abs(v) < 10 ^ (1 - d) then return ("%.1e"):format(v) end
  return ("%." .. d .. "f"):format(v)
end

-- The final table: parameter, true value (if known), initial, fitted, its
-- standard error and relative error %.
function Fit:table()
  local se = self:std_errors()
  local lines = { ("%-14s %16s %16s %16s %10s %12s"):format("parameter", "true", "initial", "fitted", "std err",
    "error %") }
  for k, n in ipairs(self.free) do
    local truth = self.truth and self.truth[n]
    lines[#lines + 1] = ("%-14s %16s %16.10g %16.10g %10s %12s"):format(n,
      truth and ("%.10g"):format(truth) or "-", self.start[k], self.x[k], se and ("%.2e"):format(se[n]) or "-",
      percent(truth and 100 * math.abs(self.x[k] - truth) / math.abs(truth), 6))
  end
  lines[#lines + 1] = ("%s: %s after %d iterations%s (%d evaluations); loss %.6e; %.2f ms/iter; %.3f s"):format(
    self.method, self.status, self.iterations, self.stages and (" over %d horizons"):format(#self.stages) or "",
    self.evaluations, self.loss, self.ms_per_iter, self.total_s)
  return table.concat(lines, "\n")
end

function Fit:__tostring() return self:table() end

-- Relative errors (%) of the fitted parameters against the truth.
function Fit:errors()
  local out = {}
  for k, n in ipairs(self.free) do
    local t = self.truth and self.truth[n]
    out[n] = t and 100 * math.abs(self.x[k] - t) / math.abs(t) or nil
  end
  return out
end

-- A row for compare(): this fit under a label, with its final loss or a
-- loss given (e.g. an unblended MSE measured apart from the training loss).
function Fit:row(label, loss)
  return { label = label, errors = self:errors(), loss = loss or self.loss, iterations = self.iterations,
    total_s = self.total_s, ms_per_iter = self.ms_per_iter }
end

-- compare(rows, names): a paper-style table, one line per fit: relative
-- error % of each named parameter, final loss, iterations, total seconds,
-- ms per iteration. Rows are Fit:row()s or tables with the same fields
-- (published numbers); a field left out prints as "-".
function M.compare(rows, names)
  local function cell(fmt, v) return v and fmt:format(v) or "-" end
  local head = { ("%-24s"):format("") }
  for _, n in ipairs(names) do head[#head + 1] = ("%11s"):format(n .. " %") end
  head[#head + 1] = ("%12s %7s %9s %9s"):format("final loss", "iters", "total s", "ms/iter")
  local lines = { table.concat(head, " ") }
  for _, r in ipairs(rows) do
    local line = { ("%-24s"):format(r.label) }
    for _, n in ipairs(names) do line[#line + 1] = ("%11s"):format(percent(r.errors and r.errors[n], 4)) end
    line[#line + 1] = ("%12s %7s %9s %9s"):format(cell("%.4e", r.loss), cell("%d", r.iterations),
      cell("%.2f", r.total_s), cell("%.2f", r.ms_per_iter))
    lines[#lines + 1] = table.concat(line, " ")
  end
  return table.concat(lines, "\n")
end

function Fit:to_json(path, extra)
  local doc = {
    method = self.method, params = self.params, start = {}, truth = self.truth, loss = self.loss,
    iterations = self.iterations, evaluations = self.evaluations, status = self.status,
    converged = self.converged, ms_per_iter = self.ms_per_iter, total_s = self.total_s,
    relative_error_percent = self:errors(), history = { loss = self.history.loss }, stages = self.stages,
  }
  doc.std_error, doc.std_error_unavailable = self:std_errors()
  if doc.std_error then   -- labelled: { row = { column = value } }
    local cov, cor = self:covariance(), self:correlation()
    doc.covariance, doc.correlation, doc.confidence_95 = {}, {}, self:confidence(0.95)
    for i, a in ipairs(self.free) do
      doc.covariance[a], doc.correlation[a] = {}, {}
      for j, b in ipairs(self.free) do doc.covariance[a][b], doc.correlation[a][b] = cov[i][j], cor[i][j] end
    end
  end
  for k, n in ipairs(self.free) do doc.start[n] = self.start[k] end
  for k, v in pairs(extra or {}) do doc[k] = v end
  return json.write(path, doc)
end

return M
