-- salta.optim: optimisers over plain functions of a parameter array.
--
--   adam(fg, x0, opts)     Adam as the seed paper's experiments run it
--                          (bias-corrected moments on the raw
--                          parameters), with optional clipping to bounds
--                          and best snapshots
--   lbfgsb(fg, x0, opts)   L-BFGS-B 3.0 (liblbfgsb) with bounds
--   lm(rj, x0, m, opts)    Levenberg-Marquardt (MINPACK lmder), m residuals
--
-- fg(x) returns f, g; rj(x, "r") returns the residuals, rj(x, "j") the
-- Jacobian rows. Each returns a result { x, f, iterations, evaluations,
-- status, converged, history = { f = {}, gnorm = {}, x = {}, ms = {} } }
-- (gnorm false where no gradient was computed: never NaN).
-- opts.callback(it, x, f, g) may return true to stop; opts.log(line)
-- receives one progress line every opts.print_every iterations.
--
-- A loss that fails (raises, e.g. a grazing event or a Newton failure, or
-- returns a non-finite value) at the start raises. Later, at a trial point,
-- it stops the run: the result holds the last accepted iterate, converged =
-- false, the status "stopped: ..." and the message in `error`. An error
-- raised by opts.callback or opts.log is raised as it is.

local core = require("salta.core")

local M = {}

local clock = core.clock

local function norm(v)
  local s = 0
  for i = 1, #v do s = s + v[i] * v[i] end
  return math.sqrt(s)
end

local function copy(v) return { table.unpack(v) } end

local function step_norm(a, b)
  local s = 0
  for i = 1, #a do s = s + (a[i] - b[i]) ^ 2 end
  return math.sqrt(s)
end

local function new_history() return { f = {}, gnorm = {}, x = {}, ms = {} } end

-- The first non-finite entry of v (or of its rows), described; nil if none.
-- (e - e is 0 for every finite e, NaN for NaN and infinities.)
local function non_finite(v, what)
  for i = 1, #v do
    local e = v[i]
    if type(e) == "table" then
      for j = 1, #e do
        local ej = e[j]
        if ej - ej ~= 0 then return ("%s row %d entry %d is %s"):format(what, i, j, tostring(ej)) end
      end
    elseif e - e ~= 0 then
      return ("%s entry %d is %s"):format(what, i, tostring(e))
    end
  end
  return nil
end

-- fg(x) under pcall: f, g, or nil and a message (an error, a non-finite
-- loss or gradient).
local function try(fg, x)
  local ok, f, g = pcall(fg, x)
  if not ok then return nil, tostring(f) end
  if f ~= f or f == math.huge then return nil, ("the loss is %s"):format(tostring(f)) end
  local bad = non_finite(g, "the gradient's")
  if bad then return nil, bad end
  return f, g
end

-- The stop rules every optimiser shares, checked after an iteration with
-- loss f, gradient g and the previous iteration's loss: a status and
-- whether it counts as converged, or nil to go on. opts.tol (gradient
-- 2-norm), opts.rel_tol (|f_prev - f| <= rel_tol |f|), max_iter.
local function stop_rule(opts, max_iter, it, f, g, last_f)
  if opts.tol and g and norm(g) < opts.tol then return "gradient norm below tol", true end
  if opts.rel_tol and last_f and math.abs(last_f - f) <= opts.rel_tol * math.abs(f) then
    return "relative loss change below rel_tol", true
  end
  if max_iter and it >= max_iter then return "maximum iterations", false end
  return nil
end

-- The result of a run stopped by a failed evaluation: the last accepted
-- iterate. At the start there is none, and the failure is raised.
local function stopped(opts, where, msg, x, f, extra)
  if not x then error(msg, 0) end
  local status = ("stopped: the loss failed at %s: %s"):format(where, msg)
  if opts.log then opts.log(status) end
  local r = { x = x, f = f, status = status, converged = false, error = msg }
  for k, v in pairs(extra) do r[k] = v end
  return r
end

local function record(h, x, f, g, ms)
  h.f[#h.f + 1] = f
  h.gnorm[#h.gnorm + 1] = g and norm(g) or false   -- false: not computed there
  h.x[#h.x + 1] = copy(x)
  h.ms[#h.ms + 1] = ms
end

local function progress(opts, it, f, gnorm, step, ms)
  local every = opts.print_every or 1
  if opts.log and every > 0 and (it == "end" or it == 1 or it % every == 0) then
    local gtext = gnorm and ("%.3e"):format(gnorm) or "      n/a"
    local stext = step == step and ("%.3e"):format(step) or "      n/a"   -- no step from a non-finite point
    opts.log(("%6s  loss %.6e  |grad| %s  step %s  %7.2f ms"):format(it, f, gtext, stext, ms))
  end
end

-- Adam exactly as the reference: the loss and gradient of iteration k are
-- taken at the pre-update x_k; the update uses bias-corrected moments; x is
-- clipped to [lower, upper] after the update; the run stops once |g_k| <
-- tol (checked after the update, so the result is the post-update x).
-- opts: lr (1e-2), beta1 (0.9), beta2 (0.999), eps (1e-8), max_iter (100),
-- tol, lower, upper, best (snapshot interval, e.g. 5: at iteration 1 and
-- multiples of it the pre-update (x, f) is kept if best; returned if it
-- beats the last loss), rel_tol (stop when the loss changes less).
function M.adam(fg, x0, opts)
  opts = opts or {}
  local lr, b1, b2, eps = opts.lr or 1e-2, opts.beta1 or 0.9, opts.beta2 or 0.999, opts.eps or 1e-8
  local x, n = copy(x0), #x0
  local m, v = {}, {}
  for i = 1, n do m[i], v[i] = 0, 0 end
  local h = new_history()
  local best_x, best_f = nil, math.huge
  local status, converged, f, g = "maximum iterations", false, nil, nil
  local last_f
  -- the best snapshot replaces the result when it beats the last loss
  local function with_best(result)
    if best_x and #h.f > 0 and best_f < h.f[#h.f] then
      result.x, result.f, result.best_snapshot = best_x, best_f, true
    end
    return result
  end
  local max_iter = opts.max_iter or 100
  for k = 1, max_iter do
    local t0 = clock()
    f, g = try(fg, x)
    if not f then
      local last = #h.f
      return with_best(stopped(opts, ("iteration %d"):format(k), g, h.x[last], h.f[last],
        { iterations = last, evaluations = last, history = h }))
    end
    if opts.best and (k == 1 or k % opts.best == 0) and f < best_f then best_x, best_f = copy(x), f end
    local xold = copy(x)
    for i = 1, n do
      m[i] = b1 * m[i] + (1 - b1) * g[i]
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i]
      local mh, vh = m[i] / (1 - b1 ^ k), v[i] / (1 - b2 ^ k)
      x[i] = x[i] - lr * mh / (math.sqrt(vh) + eps)
      if opts.lower and x[i] < opts.lower[i] then x[i] = opts.lower[i] end
      if opts.upper and x[i] > opts.upper[i] then x[i] = opts.upper[i] end
    end
    local ms = (clock() - t0) * 1e3
    record(h, xold, f, g, ms)
    progress(opts, k, f, norm(g), step_norm(x, xold), ms)
    if opts.callback and opts.callback(k, xold, f, g) then status = "stopped by the callback"; break end
    local rule, conv = stop_rule(opts, max_iter, k, f, g, last_f)
    if rule then status, converged = rule, conv; break end
    last_f = f
  end
  if f == nil then   -- max_iter = 0: the loss at the start, as the other methods report it
    local msg
    f, msg = try(fg, x)
    if not f then error(msg, 0) end
  end
  return with_best({ x = x, f = f, iterations = #h.f, evaluations = math.max(#h.f, 1), status = status,
    converged = converged, history = h })
end

-- L-BFGS-B with bounds (lower/upper arrays; -math.huge/math.huge or nil
-- for none). opts: m (10), factr (1e7), pgtol (1e-8), max_iter (200),
-- max_eval (2 max_iter + 20), and the shared tol and rel_tol.
function M.lbfgsb(fg, x0, opts)
  opts = opts or {}
  local n = #x0
  local lower, upper = {}, {}
  for i = 1, n do
    lower[i] = opts.lower and opts.lower[i] or -math.huge
    upper[i] = opts.upper and opts.upper[i] or math.huge
  end
  local opt = core.lbfgsb(x0, lower, upper, opts.m or 10, opts.factr or 1e7, opts.pgtol or 1e-8)
  local h = new_history()
  local max_iter = opts.max_iter or 200
  local max_eval = opts.max_eval or 2 * max_iter + 20
  local kind, x, msg = opt:iterate()
  local f, g, evals, iters, t0 = nil, nil, 0, 0, clock()
  local status, converged, last_f = nil, false, nil
  local xprev = copy(x0)
  local acc_x, acc_f   -- the last accepted iterate (x0 once evaluated)
  while true do
    if kind == "fg" then
      if max_iter == 0 and acc_x then   -- the start evaluated, no iteration asked for
        status, x, f = "maximum iterations", acc_x, acc_f
        break
      end
      if evals >= max_eval then
        status, x, f = "maximum evaluations", acc_x, acc_f
        break
      end
      f, g = try(fg, x)
      if not f then
        return stopped(opts, ("a trial point after iteration %d"):format(iters), g, acc_x, acc_f,
          { iterations = iters, evaluations = evals, history = h })
      end
      evals = evals + 1
      if not acc_x then acc_x, acc_f = copy(x), f end
      kind, x, msg = opt:iterate(f, g)
    elseif kind == "new_x" then
      iters = iters + 1
      local ms = (clock() - t0) * 1e3
      t0 = clock()
      record(h, x, f, g, ms)
      progress(opts, iters, f, norm(g), step_norm(x, xprev), ms)
      xprev = copy(x)
      acc_x, acc_f = copy(x), f
      if opts.callback and opts.callback(iters, x, f, g) then status = "stopped by the callback"; break end
      local rule, conv = stop_rule(opts, max_iter, iters, f, g, last_f)
      if rule then status, converged = rule, conv; break end
      last_f = f
      kind, x, msg = opt:iterate()
    else
      status, converged = msg, kind == "converged"
      -- an abnormal exit (line search failure) may leave x at a trial point
      if not converged then x, f = acc_x, acc_f end
      break
    end
  end
  return { x = x, f = f, iterations = iters, evaluations = evals, status = status,
    converged = converged, history = h }
end

local function sum_sq(v)
  local f = 0
  for i = 1, #v do f = f + v[i] * v[i] end
  return f
end

-- LM's residuals (what = "r") or Jacobian ("j") at x for lmder, in run s.
-- lmder takes a Jacobian only at accepted points, right after their
-- residuals: the last residual evaluation before a Jacobian is accepted.
-- A failure is kept in s.failure and raised.
local function lm_evaluate(s, x, what)
  local ok, v = pcall(s.rj, x, what)
  local bad = not ok and tostring(v) or non_finite(v, what == "r" and "the residuals'" or "the Jacobian's")
  if what == "j" then s.acc_x, s.acc_f = s.last_x, s.last_f end
  if bad then
    s.failure = bad
    error(bad, 0)
  end
  if what == "r" then
    s.nfev = s.nfev + 1
    s.last_x, s.last_f = copy(x), sum_sq(v)
  end
  return v
end

-- The gradient 2 J'r at the final point after a last step without a
-- Jacobian (one more Jacobian), so that the history's gnorm is a number;
-- nil when that Jacobian fails.
local function final_gradient(rj, x, r)
  local okj, J = pcall(rj, x, "j")
  if not (okj and type(J) == "table") then return nil end
  local g = {}
  for k = 1, #x do g[k] = 0 end
  for i, row in ipairs(J) do
    for k = 1, #x do g[k] = g[k] + 2 * row[k] * r[i] end
  end
  return g
end

-- lmder reports at each Jacobian (an iteration, g = 2 J'r) and once at
-- the end, where g is nil: that report is the final point when a last
-- step was taken without a new Jacobian, and no iteration. Returns
-- whether the run stops (a callback or a shared stop rule, kept in s.rule).
local function lm_progress(s, x, r, g)
  local f, opts = sum_sq(r), s.opts
  local ms = (clock() - s.t0) * 1e3
  s.t0 = clock()
  local step = step_norm(x, s.xprev)
  if not g and (s.iters == 0 or step == 0) then return false end
  if g then s.iters = s.iters + 1 end
  record(s.h, x, f, g or final_gradient(s.rj, x, r), ms)
  progress(opts, g and s.iters or "end", f, g and norm(g), step, ms)
  s.xprev = copy(x)
  if not g then return false end
  if opts.callback and opts.callback(s.iters, x, f) then return true end
  s.rule, s.rule_converged = stop_rule(opts, opts.max_iter, s.iters, f, g, s.prev_f)
  s.prev_f = f
  return s.rule ~= nil
end

-- Levenberg-Marquardt (MINPACK lmder). m: the number of residuals.
-- opts: ftol, xtol (1e-12), gtol (0), max_eval (100 (n + 1)), the shared
-- tol, rel_tol and max_iter (none by default), factor (the
-- initial step bound, times the scaled |x|: MINPACK's 100 by default; a
-- smaller one keeps the first steps inside the event structure of the start).
function M.lm(rj, x0, m, opts)
  opts = opts or {}
  local s = { rj = rj, opts = opts, h = new_history(), t0 = clock(), iters = 0, xprev = copy(x0), nfev = 0 }
  local ok, x, info, msg, _, njev, r = pcall(core.lm, function(xx, what) return lm_evaluate(s, xx, what) end, x0, m, {
    ftol = opts.ftol, xtol = opts.xtol, gtol = opts.gtol, maxfev = opts.max_eval or 100 * (#x0 + 1),
    factor = opts.factor,
    progress = function(xx, rr, g) return lm_progress(s, xx, rr, g) end, nprint = 1 })
  if not ok then
    if not s.failure then error(x, 0) end   -- from the callback or the log
    -- before the first Jacobian, the start itself failed
    return stopped(opts, ("a trial point after iteration %d"):format(s.iters), s.failure, #s.h.f > 0 and s.acc_x,
      s.acc_f, { iterations = s.iters, evaluations = s.nfev, history = s.h })
  end
  local rule = s.rule
  return { x = x, f = sum_sq(r), iterations = njev, evaluations = s.nfev, status = rule or msg,
    converged = rule and s.rule_converged or (not rule and info >= 1 and info <= 4), history = s.h, info = info }
end

return M
