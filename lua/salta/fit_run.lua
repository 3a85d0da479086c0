-- salta.fit_run: one run of one optimiser (salta.optim) on a loss from a
-- start, by a plan (salta.fit_plan). The optimiser works on log p where
-- the loss is log-transformed, on p / nominal elsewhere, within the bounds
-- (salta.fit_transform); the result is in natural units, as plain values
-- that salta.fit_report makes a Fit:
-- { method, free, x, loss, iterations, evaluations, status, converged,
--   error, best_snapshot, start, truth, total_s, ms_per_iter, lsq,
--   history = { loss, gnorm, ms, params } }.

local optim = require("salta.optim")
local transform = require("salta.fit_transform")
local clock = require("salta.core").clock
local mpi = require("salta.mpi")

local M = {}

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

-- The plan's optimiser from u0 (start, transformed by T); LM minimises the
-- residuals, the others the loss with the plan's gradient route; both see
-- derivatives by u (T.chain).
local function minimise(plan, loss, start, u0, opts, T)
  local function fg(u)
    local v, g = loss:value_and_grad(T.to_p(u), plan.gradient)
    return v, T.chain(u, g)
  end
  if plan.method == "adam" then
    if opts.max_iter == nil then opts.max_iter = 500 end
    return optim.adam(fg, u0, opts)
  elseif plan.method == "lbfgsb" then
    return optim.lbfgsb(fg, u0, opts)
  end
  local m = #loss:residuals(start)
  return optim.lm(function(u, what)
    local p = T.to_p(u)
    if what == "r" then return loss:residuals(p) end
    local J = loss:jacobian(p)
    for i, row in ipairs(J) do J[i] = T.chain(u, row) end
    return J
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
  local T = transform.new(loss, plan, plan.method == "lm")
  local to_p = T.to_p
  local u0 = T.to_u(start)
  local opts = optimiser_options(spec, to_p)
  opts.lower, opts.upper = T.bounds()
  local t0 = clock()
  local r = minimise(plan, loss, start, u0, opts, T)
  local result = {
    method = plan.method, free = loss.free, x = to_p(r.x), loss = r.f, iterations = r.iterations,
    evaluations = r.evaluations, status = r.status, converged = r.converged, error = r.error,
    best_snapshot = r.best_snapshot, start = start, truth = spec.truth, total_s = clock() - t0,
    history = { loss = r.history.f, gnorm = r.history.gnorm, ms = r.history.ms, params = {} },
    lsq = loss, ms_per_iter = ms_per_iter(r.history.ms), lower = plan.lower, upper = plan.upper,
  }
  for i, u in ipairs(r.history.x) do result.history.params[i] = to_p(u) end
  return result
end

return M
