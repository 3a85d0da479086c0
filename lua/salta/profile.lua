-- salta.profile: profile likelihood of one fitted parameter, the standard
-- identifiability check: the parameter is fixed at points around its
-- estimate and the others re-fitted at each, giving chi^2 along it.
--
--   local pr = fit:profile("C3_C", { points = 11, range = { 1.5, 1.9 } })   -- or span = 0.1 (+-10 %)
--   pr.values, pr.chi2, pr.threshold, pr.interval   -- 95 % interval where chi2 <= threshold
--   pr:plot("profile_C3_C.png")
--
-- chi^2 is the sum of squared residuals in units of the data's standard
-- deviations: with known sigma (salta.lsq{ sigma = ... }) the threshold is
-- chi2_min + 3.84 (the 95 % quantile of chi^2 with one degree of freedom);
-- without, sigma is estimated from the fit (s^2 = chi2_min / (m - n)) and
-- the threshold is chi2_min (1 + 3.84 / (m - n)).

local mpi = require("salta.mpi")
local options = require("salta.options")
local plan_of = require("salta.fit_plan")
local run = require("salta.fit_run")

local M = {}

-- A loss with free parameter k held at value: a loss of the interface
-- salta.loss_interface over the other free parameters.
local View = {}
View.__index = View

local function view(loss, k, value)
  local v = setmetatable({ base = loss, k = k, held = value, free = {}, log = {} }, View)
  for i, n in ipairs(loss.free) do
    if i ~= k then v.free[#v.free + 1], v.log[#v.log + 1] = n, loss.log[i] end
  end
  v.times, v.t0 = loss.times, loss.t0
  return v
end
M.view = view

-- The base loss's point: p (an array over the view's free parameters, or
-- a table by their names) with the held value.
function View:full(p)
  if type(p) ~= "table" then error("salta.profile: parameters must be an array or a table by name", 3) end
  if #p == 0 and next(p) ~= nil then
    local out = {}
    for key, v in pairs(p) do
      if key == self.base.free[self.k] then
        error(("salta.profile: '%s' is held at %.17g, not free (free: %s)"):format(key, self.held,
          table.concat(self.free, ", ")), 3)
      end
      out[key] = v
    end
    out[self.base.free[self.k]] = self.held
    return out
  end
  if #p ~= #self.free then
    error(("salta.profile: %d parameter values, expected %d (%s)"):format(#p, #self.free,
      table.concat(self.free, ", ")), 3)
  end
  local out, j = {}, 0
  for i = 1, #self.base.free do
    if i == self.k then out[i] = self.held else j = j + 1; out[i] = p[j] end
  end
  return out
end

local function drop(self, g)
  local out = {}
  for i, x in ipairs(g) do if i ~= self.k then out[#out + 1] = x end end
  return out
end

function View:value(p, o) return self.base:value(self:full(p), o) end
function View:value_and_grad(p, o)
  local v, g = self.base:value_and_grad(self:full(p), o)
  return v, drop(self, g)
end
function View:grad(p, o) return select(2, self:value_and_grad(p, o)) end
function View:residuals(p) return self.base:residuals(self:full(p)) end
function View:jacobian(p)
  local J = self.base:jacobian(self:full(p))
  for r, row in ipairs(J) do J[r] = drop(self, row) end
  return J
end
function View:mesh_check(p, o) return self.base:mesh_check(self:full(p), o) end
function View:nominal() return nil end
function View:attributes(k)
  if not self.base.attributes then return {} end
  return self.base:attributes(k < self.k and k or k + 1)
end
function View:residual_counts() return self.base:residual_counts() end
function View:absolute() return self.base:absolute() end
function View:log_sigma() return self.base.log_sigma and self.base:log_sigma() end
function View:window(t_end) return view(self.base:window(t_end), self.k, self.held) end
function View:stats() return self.base:stats() end

-- chi^2 at free values p: residuals unscaled by their loss's data count.
local function chi2(loss, p)
  local r = loss:residuals(p)
  local counts = loss:residual_counts()
  local s = 0
  for i, x in ipairs(r) do s = s + x * x * counts[i] end
  return s, #r
end

local Profile = {}
Profile.__index = Profile

local function finite(x) return type(x) == "number" and x > -math.huge and x < math.huge end

-- The profile's interval: opts.range, or est -+ span |est|.
local function bounds(opts, name, est)
  local r = opts.range
  if r then
    if not (#r == 2 and finite(r[1]) and finite(r[2]) and r[1] < r[2]) then
      local shown = {}
      for i = 1, #r do shown[i] = tostring(r[i]) end
      error(("salta.fit: profile: option 'range' must be two increasing finite numbers { lo, hi }, got { %s }")
        :format(table.concat(shown, ", ")), 4)
    end
    return r[1], r[2]
  end
  local span = opts.span or 0.1
  local lo, hi = est - span * math.abs(est), est + span * math.abs(est)
  if not (lo < hi) then
    error(("salta.fit: profile: '%s' is estimated at %g: option 'span' (relative) spans nothing; give option "
      .. "'range'"):format(name, est), 4)
  end
  return lo, hi
end

-- A re-fit of view v from start: the fit's own optimiser, or opts.method.
local function refit(fit, v, start, opts)
  local spec = { loss = v, start = start, method = opts.method or fit.method, print_every = opts.print_every or 0 }
  local plan = plan_of.prepare(spec)
  return run.once(spec, plan, v, plan.start)
end

-- run(fit, name, opts): the profile of free parameter name of fit (a
-- salta.fit_report Fit); opts (topic profile) points (default 11), range =
-- {lo, hi} or span (relative half-width, default 0.1), method (the fit's),
-- print_every (default 0).
function M.run(fit, name, opts)
  opts = options.check("profile", opts or {}, "salta.fit: profile")
  if opts.range and opts.span then
    error("salta.fit: profile: give option 'range' or option 'span', not both", 3)
  end
  local loss = fit.lsq
  local k
  for i, n in ipairs(fit.free) do if n == name then k = i end end
  if not k then error(("salta.fit: profile: '%s' is not a free parameter (%s)"):format(tostring(name),
    table.concat(fit.free, ", ")), 3) end
  if #fit.free < 2 then error("salta.fit: profile needs a second free parameter to re-fit", 3) end
  local est = fit.x[k]
  local points = math.tointeger(opts.points or 11)
  local lo, hi = bounds(opts, name, est)
  local chi_min, m = chi2(loss, fit.x)
  local absolute = loss:absolute()
  local dof = m - #fit.free
  local threshold = absolute and chi_min + 3.84 or chi_min * (1 + 3.84 / math.max(dof, 1))
  local self = setmetatable({ name = name, estimate = est, values = {}, chi2 = {}, chi2_min = chi_min,
    threshold = threshold, absolute = absolute }, Profile)
  -- from the estimate outwards, each point starting where its neighbour ended
  local order, vals = {}, {}
  for i = 1, points do vals[i] = lo + (hi - lo) * (i - 1) / (points - 1) end
  local mid = 1
  for i = 1, points do if math.abs(vals[i] - est) < math.abs(vals[mid] - est) then mid = i end end
  local rest = {}
  for i, x in ipairs(fit.x) do if i ~= k then rest[#rest + 1] = x end end
  local starts = {}
  for dir = -1, 1, 2 do
    local start = rest
    local i = dir < 0 and mid or mid + 1
    while i >= 1 and i <= points do
      local v = view(loss, k, vals[i])
      local r = refit(fit, v, start, opts)
      self.chi2[i] = chi2(loss, v:full(r.x))
      start = r.x
      order[#order + 1], starts[i] = i, r.x
      i = i + dir
    end
  end
  self.values = vals
  -- the 95 % interval: where the profile stays below the threshold, by
  -- linear interpolation of its crossings (open at an end of the range)
  local function cross(i, j)
    local a, b = self.chi2[i] - threshold, self.chi2[j] - threshold
    return vals[i] + (vals[j] - vals[i]) * a / (a - b)
  end
  local left, right = lo, hi
  for i = mid, 2, -1 do if self.chi2[i - 1] > threshold then left = cross(i, i - 1); break end end
  for i = mid, points - 1 do if self.chi2[i + 1] > threshold then right = cross(i, i + 1); break end end
  self.interval = { left, right }
  self.bounded = { left > lo, right < hi }
  return self
end

function Profile:table()
  local lines = { ("profile of %s (estimate %.8g): chi2_min %.6g, 95 %% threshold %.6g (%s sigma)"):format(self.name,
    self.estimate, self.chi2_min, self.threshold, self.absolute and "known" or "estimated") }
  for i, v in ipairs(self.values) do
    lines[#lines + 1] = ("  %16.8g %16.8g%s"):format(v, self.chi2[i], self.chi2[i] > self.threshold and "" or "  *")
  end
  lines[#lines + 1] = ("95 %% interval: [%s, %s]"):format(
    self.bounded[1] and ("%.6g"):format(self.interval[1]) or ("< %.6g"):format(self.interval[1]),
    self.bounded[2] and ("%.6g"):format(self.interval[2]) or ("> %.6g"):format(self.interval[2]))
  return table.concat(lines, "\n")
end

-- plot(path): the profile and the 95 % threshold (rank 0 writes).
function Profile:plot(path)
  if not mpi.is_root() then return end
  local tx, ty = { self.values[1], self.values[#self.values] }, { self.threshold, self.threshold }
  return require("salta.plot").series(path, {
    { name = "profile chi^2", x = self.values, y = self.chi2 },
    { name = "95 % threshold", x = tx, y = ty } },
    { title = "profile likelihood of " .. self.name, xlabel = self.name, ylabel = "chi^2", vlines = { self.estimate } })
end

return M
