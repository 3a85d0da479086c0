-- salta.fit_plan: everything about a fit that can be wrong before it runs,
-- checked once: the method, the gradient route, start values and bounds
-- by name, log domains, and (check = true) the gradient at the start. The
-- plan is what salta.fit_run runs: { method, gradient, start, lower,
-- upper, bounded, scale }, start and bounds in natural units, in the order
-- of the loss's free parameters. The bounds are the fit's lower and upper
-- within the model's min and max (loss:attributes(k), salta.param_info);
-- scale[k] is the parameter's declared nominal (1 without), the unit of
-- the optimiser's steps.

local index_of = require("salta.names").index_of
local options = require("salta.options")
local mpi = require("salta.mpi")

local M = {}

-- by_name(loss, v, what, default): v (nil, an array over loss.free or a
-- table by name) as an array over loss.free; default(k) fills what v
-- leaves out. Errors name the caller of salta.fit (level 4: by_name, its
-- caller in salta.fit's modules, salta.fit, the caller).
function M.by_name(loss, v, what, default)
  local out = {}
  if v == nil then
    for k in ipairs(loss.free) do out[k] = default and default(k) end
    return out
  end
  if #v > 0 then
    if #v ~= #loss.free then
      error(("salta.fit: %s has %d values, expected %d (%s)"):format(what, #v, #loss.free,
        table.concat(loss.free, ", ")), 4)
    end
    for k = 1, #v do out[k] = v[k] end
    return out
  end
  local known = index_of(loss.free)
  for n in pairs(v) do
    if not known[n] then error(("salta.fit: %s names '%s', which is not free"):format(what, tostring(n)), 4) end
  end
  for k, n in ipairs(loss.free) do
    out[k] = v[n]
    if out[k] == nil and default then out[k] = default(k) end
  end
  return out
end
local by_name = M.by_name

-- The attributes of free parameter k (min, max, nominal), {} for a loss
-- that declares none.
local function attributes(loss, k)
  return loss.attributes and loss:attributes(k) or {}
end

-- bounds(loss, lower, upper): the fit's bounds (arrays over loss.free,
-- from by_name) within the model's min and max, and each parameter's
-- nominal (1 without): lower, upper, scale.
function M.bounds(loss, lower, upper)
  local scale = {}
  for k in ipairs(loss.free) do
    local a = attributes(loss, k)
    if a.min and type(lower[k]) == "number" then lower[k] = math.max(lower[k], a.min) end
    if a.max and type(upper[k]) == "number" then upper[k] = math.min(upper[k], a.max) end
    scale[k] = a.nominal and math.abs(a.nominal) > 0 and math.abs(a.nominal) or 1
  end
  return lower, upper, scale
end

local METHODS = { lm = true, lbfgsb = true, adam = true }

-- The gradient route: a name or a table (topic grad), checked against the
-- method. Errors name the caller of salta.fit (level 4 from here).
local function gradient_route(spec, method)
  local gradient = spec.gradient or "auto"
  if type(gradient) == "string" then gradient = { method = gradient } end
  if type(gradient) ~= "table" then error("salta.fit: gradient must be a route name or a table", 4) end
  options.check("grad", gradient, "salta.fit: option 'gradient'")
  gradient.method = gradient.method or "auto"
  local routes = require("salta.lsq").ROUTES
  if not require("salta.names").index_of(routes)[gradient.method] then
    error(("salta.fit: unknown gradient method '%s' (%s)"):format(tostring(gradient.method),
      '"' .. table.concat(routes, '", "') .. '"'), 4)
  end
  if method == "lm" and gradient.method ~= "sens" and gradient.method ~= "auto" then
    error("salta.fit: Levenberg-Marquardt needs the residual Jacobian (forward sensitivities); the "
      .. gradient.method .. " route gives the gradient only: use lbfgsb or adam with it", 4)
  end
  return gradient
end

-- The start and bounds of free parameter k (name n): numbers, ordered, and
-- inside the log domain where the loss is log-transformed.
local function check_bounds(loss, plan, k, n)
  local lo, hi, start = plan.lower[k], plan.upper[k], plan.start[k]
  if type(lo) ~= "number" or type(hi) ~= "number" or lo ~= lo or hi ~= hi then
    error(("salta.fit: the bounds of '%s' must be numbers, got lower %s, upper %s"):format(n, tostring(lo),
      tostring(hi)), 4)
  end
  if lo > hi then error(("salta.fit: the bounds of '%s' are inverted: lower %g > upper %g"):format(n, lo, hi), 4) end
  if type(start) ~= "number" or start ~= start then
    error(("salta.fit: the start of '%s' must be a number, got %s"):format(n, tostring(start)), 4)
  end
  if start < lo or start > hi then
    error(("salta.fit: the start of '%s' (%.17g) is outside its bounds [%g, %g]"):format(n, start, lo, hi), 4)
  end
  if loss.log[k] and not (start > 0) then
    error(("salta.fit: '%s' is log-transformed but starts at %g"):format(n, start), 4)
  end
  if loss.log[k] and (lo < 0 and lo > -math.huge or hi <= 0) then
    error(("salta.fit: '%s' is log-transformed but its bounds are [%g, %g]"):format(n, lo, hi), 4)
  end
  return lo > -math.huge or hi < math.huge
end

-- prepare(spec): the plan of salta.fit{...} spec. Errors name the caller
-- of salta.fit (level 3 from here).
function M.prepare(spec)
  local loss = spec.loss
  local plan = { method = spec.method or "lm" }
  if not METHODS[plan.method] then
    error(("salta.fit: unknown method '%s' (\"lm\", \"lbfgsb\" or \"adam\")"):format(tostring(plan.method)), 3)
  end
  plan.gradient = gradient_route(spec, plan.method)
  plan.start = by_name(loss, spec.start, "start", function(k) return loss:nominal(k) end)
  plan.lower, plan.upper, plan.scale = M.bounds(loss,
    by_name(loss, spec.lower, "lower", function() return -math.huge end),
    by_name(loss, spec.upper, "upper", function() return math.huge end))
  for k, n in ipairs(loss.free) do
    if check_bounds(loss, plan, k, n) then plan.bounded = true end
  end
  if plan.gradient.method == "adjoint" then
    local ok, why = loss:mesh_check(plan.start, plan.gradient)
    if not ok then error("salta.fit: " .. why, 3) end
  end
  return plan
end

-- check_start(spec, plan): check = true: the fit's gradient route and the
-- differences against the reference at the start; printed (unless
-- print_every = 0), and an error when a route disagrees or the point is
-- not differentiable (a warning when the reference cannot decide, or when
-- the routes are off by no more than their integration error carries).
function M.check_start(spec, plan)
  local loss = spec.loss
  if not loss.check_gradient then error("salta.fit: check needs a salta.lsq loss", 3) end
  local method = plan.gradient.method
  if method == "auto" and plan.method ~= "lm" and loss.route then method = loss:route() end
  if method ~= "adjoint" and method ~= "adjoint_cont" then method = "sens" end
  local rep = loss:check_gradient{ at = plan.start, routes = { method, "fd" } }
  if spec.print_every ~= 0 then mpi.print(tostring(rep)) end
  if rep.verdict == "inconclusive" then
    mpi.print("salta.fit: warning: the gradient check at the start is inconclusive (the reference, or the "
      .. "differences at the fit's tolerance, are uncertain)")
  elseif rep.verdict == "ill-conditioned" then
    mpi.print("salta.fit: warning: the gradient check at the start is ill-conditioned (the gradient is off by what "
      .. "the integration error at rtol carries; a smaller rtol tightens it)")
  elseif rep.verdict ~= "ok" then
    error("salta.fit: the gradient check at the start failed:\n" .. tostring(rep), 3)
  end
end

return M
