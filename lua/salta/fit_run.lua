-- salta.fit_run: one run of one optimiser (salta.optim) on a loss from a
-- start, by a plan (salta.fit_plan). The optimiser works on log p where
-- the loss is log-transformed (bounds too); the result is in natural
-- units, as plain values that salta.fit_report makes a Fit:
-- { method, free, x, loss, iterations, evaluations, status, converged,
--   error, best_snapshot, start, truth, total_s, ms_per_iter, lsq,
--   history = { loss, gnorm, ms, params } }.

local optim = require("salta.optim")
local clock = require("salta.core").clock
local mpi = require("salta.mpi")

local M = {}

-- The optimiser's variable of value p of free parameter k, and the
-- parameters of the optimiser's variables u.
local function transforms(loss)
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
  return to_u, to_p
end

-- salta.optim's options from the fit's spec (progress every print_every
-- iterations, default 10; the callback sees natural units).
local function optimiser_options(spec, to_p)
  local print_every = spec.print_every
  if print_every == nil then print_every = 10 end
  return {
    max_iter = spec.max_iter, tol = spec.tol, rel_tol = spec.rel_tol, lr = spec.lr, beta1 = spec.beta1,
    beta2 = spec.beta2, eps = spec.eps, best = spec.best, m = spec.m, factr = spec.factr, pgtol = spec.pgtol,
    ftol = spec.ftol, xtol = spec.xtol, gtol = spec.gtol, factor = spec.factor, max_eval = spec.max_eval,
    print_every = print_every, log = print_every > 0 and (spec.log or mpi.print) or nil,
    callback = spec.callback and function(it, u, f, g) return spec.callback(it, to_p(u), f, g) end,
  }
end

-- The plan's optimiser from u0 (start, transformed); LM minimises the
-- residuals, the others the loss with the plan's gradient route.
local function minimise(plan, loss, start, u0, opts, to_p)
  local function fg(u) return loss:value_and_grad(to_p(u), plan.gradient) end
  if plan.method == "adam" then
    if opts.max_iter == nil then opts.max_iter = 500 end
    return optim.adam(fg, u0, opts)
  elseif plan.method == "lbfgsb" then
    return optim.lbfgsb(fg, u0, opts)
  end
  local m = #loss:residuals(start)
  return optim.lm(function(u, what)
    local p = to_p(u)
    return what == "r" and loss:residuals(p) or loss:jacobian(p)
  end, u0, m, opts)
end

-- The mean wall time per iteration, the first (the warm-up) left out.
local function ms_per_iter(ms_list)
  local ms, cnt = 0, 0
  for i = 2, #ms_list do ms, cnt = ms + ms_list[i], cnt + 1 end
  return cnt > 0 and ms / cnt or (ms_list[1] or 0)
end

-- once(spec, plan, loss, start): plan.method on loss from start (natural
-- units); spec holds the optimiser's options (topic fit).
function M.once(spec, plan, loss, start)
  local to_u, to_p = transforms(loss)
  local u0, lo, hi = {}, {}, {}
  for k = 1, #start do
    u0[k], lo[k], hi[k] = to_u(start[k], k), to_u(plan.lower[k], k), to_u(plan.upper[k], k)
  end
  local opts = optimiser_options(spec, to_p)
  if plan.bounded then opts.lower, opts.upper = lo, hi end
  local t0 = clock()
  local r = minimise(plan, loss, start, u0, opts, to_p)
  local result = {
    method = plan.method, free = loss.free, x = to_p(r.x), loss = r.f, iterations = r.iterations,
    evaluations = r.evaluations, status = r.status, converged = r.converged, error = r.error,
    best_snapshot = r.best_snapshot, start = start, truth = spec.truth, total_s = clock() - t0,
    history = { loss = r.history.f, gnorm = r.history.gnorm, ms = r.history.ms, params = {} },
    lsq = loss, ms_per_iter = ms_per_iter(r.history.ms),
  }
  for i, u in ipairs(r.history.x) do result.history.params[i] = to_p(u) end
  return result
end

return M
