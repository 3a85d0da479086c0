-- salta.profile: the profile likelihood of one fitted parameter, the
-- standard identifiability check: the parameter is held at values around
-- its estimate and the others re-fitted at each, giving chi^2 along it.
--
--   local pr = fit:profile("k")                      -- adaptive, 95 %
--   local pr = fit:profile("k", { level = 0.99 })    -- any level
--   local pr = fit:profile("k", { span = 0.1, points = 11 })   -- a fixed grid
--   pr.interval, pr.bounded, pr.values, pr.chi2, pr.points, pr.jumps
--   print(pr:table())   pr:plot("profile_k.png")
--
-- chi^2 is the sum of squared residuals in units of the data's standard
-- deviations. With known sigma the threshold is chi2_min + q, q the
-- level-quantile of chi^2 with one degree of freedom (3.84 at 0.95); with
-- sigma estimated from the fit it is chi2_min (1 + t^2 / (m - n)), t the
-- (1 + level) / 2 quantile of Student's t with m - n degrees of freedom,
-- the profile's counterpart of the t-based Wald interval.
--
-- The walk (as pyPESTO's and lmfit's): from the estimate outwards, each
-- re-fit starting where its neighbour ended, the first step opts.step
-- standard errors; a step is halved when chi^2 rose by more than half the
-- threshold's height (threshold - chi2_min) and grown when it rose by less
-- than a tenth, so the walk follows the curvature whatever the scale. A rise
-- that stays above the threshold's height at the smallest step (1e-3
-- standard errors) is a jump: a discontinuous chi^2, as outputs that jump
-- at events give; it is reported with its place and size. A fall below
-- chi2_min is a better minimum the fit missed, reported too. Each side
-- goes on past the threshold by `beyond` heights (for the plot), to the
-- parameter's bounds, or max_steps points. Each end of the interval is
-- then found by bisection on the crossing between the last point below
-- the threshold and the first above, re-fitting at each midpoint, to
-- xtol standard errors. Every point keeps its re-fit's status.

local mpi = require("salta.mpi")
local options = require("salta.options")
local plan_of = require("salta.fit_plan")
local run = require("salta.fit_run")
local stats = require("salta.stats")
local view = require("salta.profile_view").new

local M = {}
M.view = view

-- chi^2 at the base loss's point p: residuals unscaled by their loss's data count.
local function chi2(loss, p)
  local r = loss:residuals(p)
  local counts = loss:residual_counts()
  local s = 0
  for i, x in ipairs(r) do s = s + x * x * counts[i] end
  return s, #r
end

local Profile = {}
Profile.__index = Profile
Profile.__name = "salta.Profile"

local function finite(x) return type(x) == "number" and x > -math.huge and x < math.huge end

-- A fixed grid's interval: opts.range, or est -+ span |est|; nil for the walk.
local function grid_range(opts, name, est)
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
  if not opts.span then return nil end
  local lo, hi = est - opts.span * math.abs(est), est + opts.span * math.abs(est)
  if not (lo < hi) then
    error(("salta.fit: profile: '%s' is estimated at %g: option 'span' (relative) spans nothing; give option "
      .. "'range'"):format(name, est), 4)
  end
  return lo, hi
end

-- The threshold of chi^2 at level: known sigma, chi2_min + chi^2_1 quantile;
-- else chi2_min (1 + t^2 / dof).
local function threshold_of(chi_min, absolute, level, dof)
  if absolute then return chi_min + stats.chi2_quantile(level, 1) end
  local t = stats.t_quantile((1 + level) / 2, math.max(dof, 1))
  return chi_min * (1 + t * t / math.max(dof, 1))
end

-- The re-fit at held value v from start (the view's free values): a point
-- { value, chi2, x, converged, status, iterations }, or with error set
-- when the re-fit or its chi^2 failed.
local function refit(P, v, start)
  local fit, k = P.fit, P.k
  local lv = view(fit.lsq, k, v)
  local lower, upper = {}, {}
  for i = 1, #fit.free do
    if i ~= k then lower[#lower + 1], upper[#upper + 1] = P.lower[i], P.upper[i] end
  end
  local spec = { loss = lv, start = start, lower = lower, upper = upper, method = P.opts.method or fit.method,
    print_every = P.opts.print_every or 0 }
  local ok, pt = pcall(function()
    local plan = plan_of.prepare(spec)
    local r = run.once(spec, plan, lv, plan.start)
    return { value = v, chi2 = chi2(fit.lsq, lv:full(r.x)), x = r.x, converged = r.converged, status = r.status,
      iterations = r.iterations }
  end)
  if not ok then return { value = v, chi2 = math.huge, x = start, converged = false, status = tostring(pt),
    error = tostring(pt) } end
  return pt
end

-- The walk to one side (dir -1 or 1) from the estimate: adaptive steps in
-- standard errors, jumps and descents noted; ends past the threshold by
-- `beyond` heights, at the bound, or after max_steps points.
local function walk(P, dir)
  local height, se = P.threshold - P.chi2_min, P.se
  local h, h_min, h_max = P.opts.step or 0.5, 1e-3, 4
  local prev = { value = P.estimate, chi2 = P.chi2_min, x = P.rest, converged = true }
  local limit = dir < 0 and P.lower[P.k] or P.upper[P.k]
  local out = {}
  for _ = 1, P.opts.max_steps or 60 do
    if prev.value == limit then break end
    local v = prev.value + dir * h * se
    if (v - limit) * dir > 0 then v = limit end
    local pt = refit(P, v, prev.x)
    local rise = pt.chi2 - prev.chi2
    if rise > 0.5 * height and h > h_min then
      h = math.max(h / 2, h_min)   -- too far for the curvature: retry closer
    else
      if rise > 0.5 * height then
        P.jumps[#P.jumps + 1] = { from = prev.value, to = v, rise = rise, error = pt.error }
      elseif pt.chi2 < P.chi2_min - 1e-6 * height then
        P.descents[#P.descents + 1] = { value = v, chi2 = pt.chi2 }
      end
      out[#out + 1] = pt
      if pt.chi2 > P.threshold + (P.opts.beyond or 1) * height then break end
      if rise < 0.1 * height then h = math.min(h * 1.5, h_max) end
      prev = pt
    end
  end
  return out
end

-- The end of the interval between a (below the threshold) and b (above):
-- bisection, re-fitting from a's solution, to xtol standard errors; the
-- midpoints join the profile's points.
local function bisect(P, a, b)
  local tol = (P.opts.xtol or 1e-3) * P.se
  for _ = 1, 60 do
    if math.abs(b.value - a.value) <= tol then break end
    local mid = refit(P, 0.5 * (a.value + b.value), a.x)
    mid.bisection = true
    P.extra[#P.extra + 1] = mid
    if mid.chi2 > P.threshold then b = mid else a = mid end
  end
  local da, db = P.threshold - a.chi2, b.chi2 - P.threshold
  -- the crossing by the last bracket's line (a jump: at the jump)
  local at = db < math.huge and a.value + (b.value - a.value) * da / (da + db) or b.value
  return at, b.chi2 - a.chi2 > 0.5 * (P.threshold - P.chi2_min)
end

-- The interval's end on one side of the sorted points: bisection on the
-- first crossing outwards from the estimate; open (the outermost point)
-- when chi^2 stays below.
local function side(P, pts, mid, dir)
  local i = mid
  while pts[i + dir] do
    if pts[i + dir].chi2 > P.threshold then
      local at, jump = bisect(P, pts[i], pts[i + dir])
      return at, true, jump
    end
    i = i + dir
  end
  return pts[i].value, false, false
end

-- The standard error that scales the steps: the fit's, else 1 % of the
-- estimate (or of the nominal).
local function step_unit(fit, k)
  local se = fit:std_errors()
  if se and finite(se[fit.free[k]]) and se[fit.free[k]] > 0 then return se[fit.free[k]] end
  return 0.01 * math.max(math.abs(fit.x[k]), 1e-12)
end

local function new_profile(fit, name, k, opts)
  local loss = fit.lsq
  local chi_min, m = chi2(loss, fit.x)
  local level = opts.level or 0.95
  local P = setmetatable({ fit = fit, k = k, opts = opts, name = name, estimate = fit.x[k], chi2_min = chi_min,
    absolute = loss:absolute(), level = level, dof = m - #fit.free, jumps = {}, descents = {}, extra = {} }, Profile)
  P.threshold = threshold_of(chi_min, P.absolute, level, P.dof)
  P.se = step_unit(fit, k)
  P.lower, P.upper = {}, {}
  for i = 1, #fit.free do
    P.lower[i] = fit.lower and fit.lower[i] or -math.huge
    P.upper[i] = fit.upper and fit.upper[i] or math.huge
  end
  P.rest = {}
  for i, x in ipairs(fit.x) do if i ~= k then P.rest[#P.rest + 1] = x end end
  return P
end

-- The points of a fixed grid over [lo, hi], from the point nearest the
-- estimate outwards.
local function grid(P, lo, hi, points)
  local vals, mid = {}, 1
  for i = 1, points do vals[i] = lo + (hi - lo) * (i - 1) / (points - 1) end
  for i = 1, points do if math.abs(vals[i] - P.estimate) < math.abs(vals[mid] - P.estimate) then mid = i end end
  local out = {}
  for dir = -1, 1, 2 do
    local start = P.rest
    local i = dir < 0 and mid or mid + 1
    while i >= 1 and i <= points do
      local pt = refit(P, vals[i], start)
      out[#out + 1], start = pt, pt.x
      i = i + dir
    end
  end
  return out
end

local function sorted(list)
  table.sort(list, function(a, b) return a.value < b.value end)
  return list
end

-- run(fit, name, opts): the profile of free parameter name of fit (a
-- salta.fit_report Fit); opts: topic profile (salta.help("profile")).
function M.run(fit, name, opts)
  opts = options.check("profile", opts or {}, "salta.fit: profile")
  if opts.range and opts.span then
    error("salta.fit: profile: give option 'range' or option 'span', not both", 3)
  end
  local k
  for i, n in ipairs(fit.free) do if n == name then k = i end end
  if not k then error(("salta.fit: profile: '%s' is not a free parameter (%s)"):format(tostring(name),
    table.concat(fit.free, ", ")), 3) end
  if #fit.free < 2 then error("salta.fit: profile needs a second free parameter to re-fit", 3) end
  local P = new_profile(fit, name, k, opts)
  local lo, hi = grid_range(opts, name, P.estimate)
  local pts
  if lo then
    pts = grid(P, lo, hi, math.tointeger(opts.points or 11))
  else
    pts = walk(P, -1)
    pts[#pts + 1] = { value = P.estimate, chi2 = P.chi2_min, x = P.rest, converged = true, status = "the fit" }
    for _, pt in ipairs(walk(P, 1)) do pts[#pts + 1] = pt end
  end
  sorted(pts)
  local mid = 1
  for i, pt in ipairs(pts) do if math.abs(pt.value - P.estimate) < math.abs(pts[mid].value - P.estimate) then mid = i end end
  local left, lb, ljump = side(P, pts, mid, -1)
  local right, rb, rjump = side(P, pts, mid, 1)
  for _, pt in ipairs(P.extra) do pts[#pts + 1] = pt end
  P.points = sorted(pts)
  P.values, P.chi2 = {}, {}
  for i, pt in ipairs(P.points) do P.values[i], P.chi2[i] = pt.value, pt.chi2 end
  P.interval, P.bounded, P.end_at_jump = { left, right }, { lb, rb }, { ljump, rjump }
  P.fit, P.extra = nil, nil
  return P
end

-- A number or "-" for an infinite one.
local function num(v) return finite(v) and ("%.8g"):format(v) or tostring(v) end

function Profile:table()
  local pct = ("%g %%"):format(100 * self.level)
  local lines = { ("profile of %s (estimate %.8g, step unit %.3g): chi2_min %.6g, %s threshold %.6g (%s sigma)")
    :format(self.name, self.estimate, self.se, self.chi2_min, pct, self.threshold,
      self.absolute and "known" or "estimated") }
  lines[#lines + 1] = ("  %16s %16s %s"):format(self.name, "chi2", "re-fit")
  for _, pt in ipairs(self.points) do
    lines[#lines + 1] = ("  %16.8g %16s %s%s%s"):format(pt.value, num(pt.chi2), pt.chi2 > self.threshold and "" or "* ",
      pt.bisection and "(bisection) " or "", pt.converged and "converged" or ("not converged: " .. tostring(pt.status)))
  end
  lines[#lines + 1] = ("%s interval: [%s, %s]"):format(pct,
    self.bounded[1] and ("%.8g"):format(self.interval[1]) or ("< %.8g (open)"):format(self.interval[1]),
    self.bounded[2] and ("%.8g"):format(self.interval[2]) or ("> %.8g (open)"):format(self.interval[2]))
  for _, j in ipairs(self.jumps) do
    lines[#lines + 1] = ("warning: chi2 jumps by %.4g between %s = %.8g and %.8g (a discontinuous loss: outputs that "
      .. "jump at events?)%s"):format(j.rise, self.name, j.from, j.to, j.error and (": " .. j.error) or "")
  end
  for i, e in ipairs(self.end_at_jump) do
    if e then lines[#lines + 1] = ("warning: the interval's %s end is at a jump of chi2"):format(i == 1 and "lower"
      or "upper") end
  end
  for _, d in ipairs(self.descents) do
    lines[#lines + 1] = ("warning: chi2 %.8g at %s = %.8g is below the fit's minimum %.8g: the fit missed a better "
      .. "minimum"):format(d.chi2, self.name, d.value, self.chi2_min)
  end
  return table.concat(lines, "\n")
end

function Profile:__tostring() return self:table() end

-- plot(path): the profile and its threshold (rank 0 writes); the y axis
-- spans the interval's region, chi2_min to 3 threshold heights above it,
-- so outliers past it do not flatten the curve.
function Profile:plot(path)
  if not mpi.is_root() then return end
  local tx, ty = { self.values[1], self.values[#self.values] }, { self.threshold, self.threshold }
  local height = self.threshold - self.chi2_min
  return require("salta.plot").series(path, {
    { name = "profile chi^2", x = self.values, y = self.chi2, points = false },
    { name = ("%g %% threshold"):format(100 * self.level), x = tx, y = ty } },
    { title = "profile likelihood of " .. self.name, xlabel = self.name, ylabel = "chi^2",
      vlines = { self.estimate }, yrange = { self.chi2_min - 0.05 * height, self.chi2_min + 3 * height } })
end

return M
