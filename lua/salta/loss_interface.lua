-- salta.loss_interface: the interface of a loss, which salta.fit, the
-- covariance (salta.covariance), multi-start and profiles rely on. Three
-- implementations keep it: salta.lsq (one model and its data),
-- salta.experiments (one loss over several, and its stand-in for an
-- experiment with no target in a window) and the profile's view of a loss
-- with one parameter held (salta.profile); spec/loss_interface_spec.lua
-- runs the same checks against each.
--
-- Fields:
--   free     the free parameters' names, in order: a point p is an array in
--            this order, or a table by these names, always in natural units
--   log      log[k]: free parameter k is log-transformed (gradients and
--            Jacobians are then by log p, what an optimiser in log space needs)
--   times    the target times, increasing (a horizon continuation's stages)
--   t0       the start of the simulated interval
--
-- Methods (opts: topic grad, e.g. { method = "adjoint" }; nil: forward
-- sensitivities):
--   value(p [, opts])           L(p) = sum of r^2 over the residuals
--   value_and_grad(p [, opts])  L(p) and its gradient, an array over free
--   grad(p [, opts])            the gradient alone
--   residuals(p)                r: the weighted errors divided by sqrt of the
--                               data count of their loss, so that L = sum r^2
--   jacobian(p)                 dr/dp: one row per residual, one column per
--                               free parameter
--   residual_counts()           per residual, the data count its scaling
--                               divides by (the covariance undoes it)
--   absolute()                  whether residuals are in units of known
--                               standard deviations (sigma): the covariance
--                               and profiles then take s^2 = 1
--   nominal(k)                  the model's value of free parameter k (a fit's
--                               default start), or nil
--   attributes(k)               optional: free parameter k's declared min, max
--                               and nominal (salta.param_info), {} for none:
--                               bounds of every fit and the scale of its steps
--   mesh_check(p, opts)         true, or false and why, when the adjoint's
--                               uniform mesh opts.mesh does not resolve the
--                               trajectory at p (salta.fit refuses it)
--   window(t_end)               a loss of this interface over the targets at
--                               t <= t_end (a horizon continuation's stage)
--   stats()                     the statistics of the last evaluation's run
--
-- A point of the wrong length or naming a parameter that is not free is an
-- error naming the loss's free parameters; an evaluation that fails is an
-- error with the engine's message. salta.lsq has more (check_gradient,
-- predict, fd_grad, the model and its data), which fit:plot and
-- check = true need; the others do not.

local M = {}

M.FIELDS = { "free", "log", "times", "t0" }
M.METHODS = { "value", "value_and_grad", "grad", "residuals", "jacobian", "residual_counts", "absolute",
  "nominal", "mesh_check", "window", "stats" }

-- missing(loss): nil when loss has every field and method of the
-- interface, else what it lacks, in words.
function M.missing(loss)
  if type(loss) ~= "table" then return ("got %s"):format(type(loss)) end
  local lacks = {}
  for _, k in ipairs(M.FIELDS) do
    if type(loss[k]) ~= (k == "t0" and "number" or "table") then lacks[#lacks + 1] = k end
  end
  for _, k in ipairs(M.METHODS) do
    if type(loss[k]) ~= "function" then lacks[#lacks + 1] = k .. "()" end
  end
  if #lacks > 0 then return "it lacks " .. table.concat(lacks, ", ") .. " (salta.loss_interface)" end
end

return M
