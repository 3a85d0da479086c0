-- salta.multistart: K local fits from starts sampled in a box, for
-- non-convex losses (as pyPESTO's multi-start).
--
--   local r = salta.fit{ loss = L, method = "lm", starts = 32, sampling = "latin" | "sobol" | "uniform",
--     lower = {...}, upper = {...}, seed = 1 }
--   print(r:table())            -- the best fit
--   print(r:starts_table())     -- every start, sorted by final loss
--   r:waterfall("waterfall.png")
--
-- starts = K samples K points of the box [lower, upper] (log-uniformly for
-- log-transformed parameters); starts = { {..}, {..} } gives them. The box
-- (within the model's min and max) places the starts and bounds every
-- local fit. start_time (seconds) and start_evals (loss evaluations) limit
-- each start (salta.limited_loss): a start stopped by one keeps its last
-- iterate and says which. A start whose fit fails is kept, with its
-- message, as a loss of +inf, and never aborts the run: when every start
-- fails the result says so (converged false, loss +inf). The starts' tally
-- ends the status (salta.fit_status). Under mpirun the starts are split across
-- the ranks (each evaluates its losses alone) and gathered, so every rank
-- returns the same result.

local mpi = require("salta.mpi")
local plan_of = require("salta.fit_plan")
local run = require("salta.fit_run")
local horizon = require("salta.fit_horizon")
local clock = require("salta.core").clock
local limited = require("salta.limited_loss")

local M = {}

-- Sobol direction numbers (Joe and Kuo, new-joe-kuo-6.21201) for
-- dimensions 2 .. 13: degree s, coefficients a, initial m.
local SOBOL = {
  { 1, 0, { 1 } }, { 2, 1, { 1, 3 } }, { 3, 1, { 1, 3, 1 } }, { 3, 2, { 1, 1, 1 } },
  { 4, 1, { 1, 1, 3, 3 } }, { 4, 4, { 1, 3, 5, 13 } }, { 5, 2, { 1, 1, 5, 5, 17 } },
  { 5, 4, { 1, 1, 5, 5, 5 } }, { 5, 7, { 1, 1, 7, 11, 19 } }, { 5, 11, { 1, 1, 5, 1, 1 } },
  { 5, 13, { 1, 1, 1, 3, 11 } }, { 5, 14, { 1, 3, 5, 5, 31 } },
}
local BITS = 30

local function sobol_directions(d)
  if d == 1 then
    local v = {}
    for i = 1, BITS do v[i] = 1 << (BITS - i) end
    return v
  end
  local s, a, m = table.unpack(SOBOL[d - 1])
  local v = {}
  for i = 1, BITS do
    if i <= s then
      v[i] = m[i] << (BITS - i)
    else
      local x = v[i - s] ~ (v[i - s] >> s)
      for k = 1, s - 1 do
        if (a >> (s - 1 - k)) & 1 == 1 then x = x ~ v[i - k] end
      end
      v[i] = x
    end
  end
  return v
end

-- The first K points of [0, 1)^n of the Sobol sequence (its first is the
-- corner 0; 2^k of them fill the 2^k strata of every dimension), by Gray
-- code.
local function sobol(K, n)
  if n > #SOBOL + 1 then error(("salta.fit: sobol sampling covers %d parameters, got %d"):format(#SOBOL + 1, n), 5) end
  local dirs, x, out = {}, {}, {}
  for d = 1, n do dirs[d], x[d] = sobol_directions(d), 0 end
  out[1] = {}
  for d = 1, n do out[1][d] = 0 end
  for i = 2, K do
    local c, j = 1, i - 2   -- from point i - 1: the rightmost zero bit of its index (0-based)
    while j & 1 == 1 do j, c = j >> 1, c + 1 end
    local pt = {}
    for d = 1, n do
      x[d] = x[d] ~ dirs[d][c]
      pt[d] = x[d] / (1 << BITS)
    end
    out[i] = pt
  end
  return out
end

-- the same starts on every platform and rank
local uniform_gen = require("salta.data").uniform

local function latin(K, n, rnd)
  local out = {}
  for i = 1, K do out[i] = {} end
  for d = 1, n do
    local perm = {}
    for i = 1, K do perm[i] = i end
    for i = K, 2, -1 do
      local j = math.floor(rnd() * i) + 1
      perm[i], perm[j] = perm[j], perm[i]
    end
    for i = 1, K do out[i][d] = (perm[i] - 1 + rnd()) / K end
  end
  return out
end

-- A list of starts, checked: each an array of one value per free
-- parameter or a table by name (whose names salta.fit checks). Errors
-- name the caller of salta.fit (level 4: M.starts tail-calls this).
local function given_starts(loss, given)
  local n = #loss.free
  local what = ("each an array of %d values (%s) or a table by name"):format(n, table.concat(loss.free, ", "))
  if #given == 0 then
    error(("salta.fit: starts must be a count >= 1 or a non-empty list of starts (%s), got an empty table")
      :format(what), 4)
  end
  for i, s in ipairs(given) do
    if type(s) ~= "table" or next(s) == nil or (#s > 0 and #s ~= n) then
      error(("salta.fit: starts[%d] must be a start (%s), got %s"):format(i, what,
        type(s) == "table" and ("%d values"):format(#s) or tostring(s)), 4)
    end
    for k, name in ipairs(loss.free) do
      local v = #s > 0 and s[k] or s[name]
      if type(v) ~= "number" then
        error(("salta.fit: starts[%d] gives %s for '%s', not a number"):format(i, tostring(v), name), 4)
      end
    end
  end
  return given
end

-- The starts: given, or K points of the box. Errors name the caller of
-- salta.fit (level 4).
function M.starts(loss, spec, lower, upper)
  local given = spec.starts
  if type(given) == "table" then return given_starts(loss, given) end
  local K = math.tointeger(given)
  if not K or K < 1 then error("salta.fit: starts must be a count >= 1 or a list of starts", 4) end
  local n = #loss.free
  for k, name in ipairs(loss.free) do
    if not (lower[k] > -math.huge and upper[k] < math.huge) then
      error(("salta.fit: sampling starts needs finite bounds: '%s' has [%g, %g]"):format(name, lower[k], upper[k]), 4)
    end
  end
  local sampling = spec.sampling or "latin"
  local unit
  if sampling == "sobol" then unit = sobol(K, n)
  elseif sampling == "latin" then unit = latin(K, n, uniform_gen(spec.seed or 1))
  elseif sampling == "uniform" then
    local rnd = uniform_gen(spec.seed or 1)
    unit = {}
    for i = 1, K do unit[i] = {} for d = 1, n do unit[i][d] = rnd() end end
  else
    error(("salta.fit: sampling must be \"latin\", \"sobol\" or \"uniform\", got %s"):format(tostring(sampling)), 4)
  end
  local out = {}
  for i, u in ipairs(unit) do
    local s = {}
    for k = 1, n do
      local lo, hi = lower[k], upper[k]
      if loss.log[k] and lo > 0 then
        s[k] = math.exp(math.log(lo) + u[k] * (math.log(hi) - math.log(lo)))
      else
        s[k] = lo + u[k] * (hi - lo)
      end
    end
    out[i] = s
  end
  return out
end

-- run(spec, starts, fit_one, lower, upper): fit_one(start) -> a Fit on
-- this rank's share of the starts (each loss evaluated by this rank alone),
-- then every start's outcome on every rank. Returns the outcomes sorted by
-- loss and the best one's Fit (rebuilt from the gathered numbers on the
-- ranks that did not run it).
local LIMITS = { "time", "evaluations" }

function M.run(starts, fit_one, rebuild)
  local K = #starts
  local n = #starts[1]
  local local_fits, messages, seconds = {}, {}, {}
  for i = 1, K do
    if mpi.mine(i) then
      local t0 = clock()
      local ok, r = mpi.locally(pcall, fit_one, starts[i])
      if ok then local_fits[i] = r else messages[i] = tostring(r) end
      seconds[i] = clock() - t0
    end
  end
  -- gather: per start, x (n), loss, iterations, evaluations, converged,
  -- failed, the limit that stopped it (an index into LIMITS) and seconds
  local width = n + 7
  local flat = {}
  for i = 1, K * width do flat[i] = 0 end
  for i = 1, K do
    if mpi.mine(i) then
      local base, r = (i - 1) * width, local_fits[i]
      if r then
        for k = 1, n do flat[base + k] = r.x[k] end
        flat[base + n + 1] = r.loss == r.loss and r.loss or math.huge
        flat[base + n + 2], flat[base + n + 3] = r.iterations, r.evaluations
        flat[base + n + 4] = r.converged and 1 or 0
        flat[base + n + 6] = r.limit == "time" and 1 or r.limit == "evaluations" and 2 or 0
      else
        flat[base + n + 1], flat[base + n + 5] = math.huge, 1
      end
      flat[base + n + 7] = seconds[i]
    end
  end
  local all = mpi.allreduce(flat)
  local outcomes = {}
  for i = 1, K do
    local base = (i - 1) * width
    local o = { index = i, start = starts[i], x = {}, loss = all[base + n + 1], iterations = all[base + n + 2],
      evaluations = all[base + n + 3], converged = all[base + n + 4] == 1, failed = all[base + n + 5] == 1,
      limit = LIMITS[math.tointeger(all[base + n + 6])], seconds = all[base + n + 7], rank = (i - 1) % mpi.size() }
    for k = 1, n do o.x[k] = all[base + k] end
    o.message = mpi.bcast(o.rank == mpi.rank() and (messages[i] or (local_fits[i] and local_fits[i].status)) or nil,
      o.rank)
    outcomes[i] = o
  end
  table.sort(outcomes, function(a, b)
    if a.loss ~= b.loss then return a.loss < b.loss end
    return a.index < b.index
  end)
  local best = outcomes[1]
  local fit = local_fits[best.index] or rebuild(best)
  return outcomes, fit
end

-- summary(outcomes): the starts' tally in words: "best of 16 starts: 12
-- converged, 3 unconverged, 1 failed".
function M.summary(outcomes)
  local conv, failed, limited = 0, 0, { time = 0, evaluations = 0 }
  local first_failure
  for _, o in ipairs(outcomes) do
    if o.failed then
      failed = failed + 1
      first_failure = first_failure or o
    elseif o.converged then conv = conv + 1 end
    if o.limit then limited[o.limit] = limited[o.limit] + 1 end
  end
  local text = ("%d starts: %d converged, %d unconverged"):format(#outcomes, conv, #outcomes - conv - failed)
  if limited.time + limited.evaluations > 0 then
    text = text .. (" (%d at the time limit, %d at the evaluation limit)"):format(limited.time, limited.evaluations)
  end
  text = text .. (", %d failed"):format(failed)
  if first_failure then
    text = text .. (" (start %d: %s)"):format(first_failure.index, tostring(first_failure.message))
  end
  return text
end

-- A fit result from an outcome gathered from another rank, or of a start
-- that failed (every start failed: its start values, loss +inf).
local function from_outcome(spec, loss, o)
  local failed = o.failed
  return {
    method = spec.method or "lm", free = loss.free, x = failed and o.start or o.x, loss = o.loss,
    iterations = math.tointeger(o.iterations), evaluations = math.tointeger(o.evaluations),
    status = failed and ("stopped: every start failed; the best ranked, start %d: %s"):format(o.index,
      tostring(o.message)) or o.message or "-",
    converged = o.converged, error = failed and tostring(o.message) or nil, limit = o.limit,
    start = o.start, truth = spec.truth, total_s = 0, history = { loss = {}, gnorm = {}, ms = {}, params = {} },
    lsq = loss, ms_per_iter = 0,
  }
end

-- One start's fit: the plan's optimiser (or a horizon continuation) on
-- the loss under the per-start limits; a start stopped by a limit keeps
-- its last accepted iterate and says which limit.
local function fit_start(local_spec, plan, loss, start)
  local limits = { time = local_spec.start_time, evals = local_spec.start_evals }
  local L = (limits.time or limits.evals) and limited.new(loss, limits) or loss
  local r
  if local_spec.horizon then
    local p = {}
    for k, v in pairs(plan) do p[k] = v end
    p.start = start
    r = horizon.fit(local_spec, p, L)
  else
    r = run.once(local_spec, plan, L, start)
  end
  if rawget(r.lsq, "unlimited") then r.lsq = r.lsq.unlimited end
  local hit = L ~= loss and L.state.hit
  if hit then
    r.limit = hit
    r.status = ("stopped at the per-start %s limit after %d iterations"):format(hit == "time" and "time" or
      "evaluation", r.iterations)
  end
  return r
end

-- fit(spec): salta.fit{ starts = ... }: the starts from the box [lower,
-- upper], a local fit from each (salta.fit_run, or a horizon
-- continuation) within the box. The
-- best fit's result, with every start's outcome (starts) and the wall
-- time (multistart_s).
function M.fit(spec)
  local loss = spec.loss
  local lower, upper = plan_of.bounds(loss, plan_of.by_name(loss, spec.lower, "lower", function() return -math.huge end),
    plan_of.by_name(loss, spec.upper, "upper", function() return math.huge end))
  local starts = M.starts(loss, spec, lower, upper)
  for i, s in ipairs(starts) do starts[i] = plan_of.by_name(loss, s, ("starts[%d]"):format(i)) end
  local local_spec = {}
  for k, v in pairs(spec) do local_spec[k] = v end
  local_spec.starts, local_spec.sampling, local_spec.seed = nil, nil, nil
  local_spec.print_every = spec.print_every or 0
  local_spec.start = starts[1]   -- the plan's checks: a start inside the box
  local plan = plan_of.prepare(local_spec)
  local t0 = clock()
  local outcomes, best = M.run(starts, function(start) return fit_start(local_spec, plan, loss, start) end,
    function(o) return from_outcome(spec, loss, o) end)
  best.starts, best.multistart_s = outcomes, clock() - t0
  best.starts_summary = M.summary(outcomes)
  return best
end

return M
