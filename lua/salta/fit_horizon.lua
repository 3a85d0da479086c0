-- salta.fit_horizon: continuation on the time horizon (salta.fit{ horizon
-- = true | {t1, t2, ...} }). The fit runs first on the targets at t <= t1
-- (loss:window), then from its result on t <= t2, ..., and last on the
-- whole loss. An oscillating trajectory fitted over its whole horizon at
-- once has many local minima (phases matched a period off, events matched
-- to the wrong events); a short horizon has few, and each longer one
-- starts near its minimum.
--
-- horizon = true takes each stage's end from the events of the run at the
-- stage's start (loss:event_times): the first stage ends before the first
-- event, each next one before event 2 m + 1 of the run at its start, m the
-- events that the stages before it covered (midway from the event before,
-- or nine tenths of the way), so that a stage matches as many new
-- events as the ones before it matched, and starts over before the first
-- event when a stage moved them all past its end (with half again as many
-- targets); and no stage spans more than twice the last (the first, an
-- eighth of the whole), for the events of the data that the run at the
-- stage's start does not have yet. Without events (or a loss that cannot
-- tell them) in the run at the start before the last target, the horizons
-- t0 + span/6, span/3, 2 span/3.
--
-- In every stage but the last, a free parameter that the stage's data do
-- not determine is held at its value: one without influence on the
-- stage's residuals (a guard's parameter before its first event, a
-- parameter of a mode the stage never enters: J'J singular) or whose
-- relative standard error at the stage's start (salta.covariance) is above
-- hold (default 1: not even its sign is known), such as a small friction
-- against the inertia of a short acceleration. Moved, such a parameter
-- follows the noise to wherever it costs nothing (to 0 in log space, from
-- where no later stage brings it back). The stage's record names the held
-- parameters with their standard errors; the last stage, the whole loss,
-- fits them all.

local run = require("salta.fit_run")
local mpi = require("salta.mpi")
local view = require("salta.profile").view
local covariance = require("salta.covariance")

local M = {}

-- The end of the next stage from the events of the run at p (times
-- increasing, distinct), prev the last stage's end (-math.huge before the
-- first): before event n = 2 m + 1 with m the events at or before prev
-- (the ones its stages matched; n = 1 without), midway from event n - 1
-- (t0 for the first) or nine tenths of the way; each no later than twice
-- the last stage's span (an eighth of the whole for the first: the data
-- may switch where the run at p does not yet), unless that stage would be
-- too small; the first of these, n doubling, whose stage holds as many
-- residuals as free parameters and more targets than the last stage
-- (half again as many for another stage before the first event);
-- math.huge once none does before the last target; and that n. nil when
-- the loss cannot tell its events.
local function event_end(loss, p, prev)
  if not loss.event_times then return nil end
  local ok, times = pcall(loss.event_times, loss, p)
  if not ok then return nil end
  local targets, t0 = loss.times, loss.t0
  local per_target = loss.outputs and #loss.outputs or 1
  local function targets_to(t_end)
    local c = 0
    for _, x in ipairs(targets) do
      if x > t_end then break end
      c = c + 1
    end
    return c
  end
  local before, count, matched = targets_to(prev), 0, 0
  for _, t in ipairs(times) do
    if t < targets[#targets] then count = count + 1 end
    if t <= prev then matched = matched + 1 end
  end
  local limit = prev == -math.huge and t0 + (targets[#targets] - t0) / 8 or t0 + 2 * (prev - t0)
  local function fits(t_end, n)
    local c = targets_to(t_end)
    return c * per_target >= #loss.free and c > before and (n > 1 or c >= 1.5 * before) and c < #targets
      and t_end or nil
  end
  local n = matched > 0 and 2 * matched + 1 or 1
  while n <= count do
    local from = n > 1 and times[n - 1] or t0
    for _, f in ipairs({ 0.5, 0.9 }) do
      local t_end = from + f * (times[n] - from)
      t_end = fits(math.min(t_end, limit), n) or fits(t_end, n)
      if t_end then return t_end, n end
    end
    n = 2 * n
  end
  return fits(limit, n) or math.huge, n
end

-- The stage end times of a horizon continuation as a function of the
-- stage, its start and the last stage's end (nil: no more stages;
-- math.huge: the whole loss, the last; and, from the events, the event it
-- ends before), whether they come from the events, and their count when
-- known beforehand. Errors name the caller of salta.fit (level 4).
local function horizons(loss, h, start)
  local times = loss.times
  local t_last = times[#times]
  local list
  if h == true then
    local ok, events = pcall(function() return loss.event_times and loss:event_times(start) or {} end)
    local t1 = ok and #events > 0 and events[1] < t_last and event_end(loss, start, -math.huge)
    if t1 and t1 < math.huge then
      return function(_, p, prev)
        if prev == math.huge then return nil end
        local t_end, n = event_end(loss, p, prev)
        return t_end or math.huge, n
      end, true
    end
    local span = t_last - loss.t0
    list = { loss.t0 + span / 6, loss.t0 + span / 3, loss.t0 + 2 * span / 3 }
  else
    if type(h) ~= "table" or #h == 0 then
      error("salta.fit: horizon must be true or an increasing array of end times", 4)
    end
    for i, t in ipairs(h) do
      if type(t) ~= "number" or t ~= t or (i > 1 and t <= h[i - 1]) then
        error(("salta.fit: horizon[%d] = %s: the end times must be increasing numbers"):format(i, tostring(t)), 4)
      end
      if t >= t_last then
        error(("salta.fit: horizon[%d] = %g is not before the last target (t = %g); the last stage is always "
          .. "the whole loss"):format(i, t, t_last), 4)
      end
    end
    list = { table.unpack(h) }
  end
  list[#list + 1] = math.huge
  return function(s) return list[s] end, false, #list
end

M.DEFAULT_HOLD = 1

-- window with the free parameters held (a set of indices) at their values
-- in p: a loss over the others (nested profile views, from the last index
-- so that the earlier ones stay), and the others' values.
local function holding(window, p, held)
  local v, ks = window, {}
  for k = #p, 1, -1 do
    if held[k] then v = view(v, k, p[k]) end
  end
  local sub = {}
  for k = 1, #p do if not held[k] then sub[#sub + 1], ks[#ks + 1] = p[k], k end end
  return v, sub, ks
end

-- The free parameters (a set of indices) that window's data do not
-- determine at p: those without influence (a zero column of the residual
-- Jacobian), then those whose relative standard error (salta.covariance:
-- s^2 = 1 with known sigma, else from the residuals at p) is above hold
-- or whose J'J is singular (no influence apart from the others: held one
-- by one, the one its factorisation names); and each one's relative
-- standard error (math.huge: none). None when every one would be held or
-- the Jacobian cannot be computed; only the zero columns when there are no
-- more residuals than the others.
local function undetermined(window, p, hold)
  local held, rse = {}, {}
  local ok, J = pcall(window.jacobian, window, p)
  if not ok then return {}, {} end
  for k = 1, #p do
    local zero = true
    for _, row in ipairs(J) do zero = zero and row[k] == 0 end
    if zero then held[k], rse[k] = true, math.huge end
  end
  for _ = 1, #p do
    local v, sub, ks = holding(window, p, held)
    if #sub == 0 then break end
    local cov, why = covariance.at(v, sub)
    if cov then
      for j, k in ipairs(ks) do
        local e = math.sqrt(cov[j][j]) / math.abs(p[k])
        if not (e <= hold) then held[k], rse[k] = true, e end
      end
      break
    end
    local name = tostring(why):match("^J'J is singular at '(.-)'")
    if not name then break end
    for _, k in ipairs(ks) do
      if window.free[k] == name then held[k], rse[k] = true, math.huge end
    end
  end
  for k = 1, #p do
    if not held[k] then return held, rse end
  end
  return {}, {}
end

-- One stage's run with the parameters held (a set of indices) fixed at
-- their values in start: the optimiser on the others, the result over
-- every free parameter.
local function run_holding(each, plan, window, start, held)
  if next(held) == nil then return run.once(each, plan, window, start) end
  local v, sub_start, ks = holding(window, start, held)
  local sub = { method = plan.method, gradient = plan.gradient, start = sub_start, lower = {}, upper = {},
    bounded = false }
  for j, k in ipairs(ks) do
    sub.lower[j], sub.upper[j] = plan.lower[k], plan.upper[k]
    sub.bounded = sub.bounded or sub.lower[j] > -math.huge or sub.upper[j] < math.huge
  end
  local r = run.once(each, sub, v, sub.start)
  local function full(x)
    local out = { table.unpack(start) }
    for j, k in ipairs(ks) do out[k] = x[j] end
    return out
  end
  r.x, r.start, r.free, r.lsq = full(r.x), start, window.free, window
  for i, x in ipairs(r.history.params) do r.history.params[i] = full(x) end
  return r
end

-- Whether the stage's loss can be evaluated at start, as its method
-- evaluates first; false and the error if not.
local function evaluates_at(window, plan, start)
  return pcall(function()
    if plan.method == "lm" then return window:residuals(start), window:jacobian(start) end
    return window:value_and_grad(start, plan.gradient)
  end)
end

-- The spec of every stage: the fit's, with a callback that counts
-- iterations over the stages; state.stop says whether it asked to stop.
local function stage_spec(spec, state)
  local s = {}
  for k, v in pairs(spec) do s[k] = v end
  if spec.callback then
    s.callback = function(it, ...)
      if spec.callback(state.iterations + it, ...) then state.stop = true end
      return state.stop
    end
  end
  return s
end

-- held_text(names, rse): the held parameters with their relative
-- standard errors in the stage, as the logs and reports print them.
function M.held_text(names, rse)
  local parts = {}
  for _, n in ipairs(names) do
    parts[#parts + 1] = rse[n] == math.huge and ("%s (no influence apart from the others)"):format(n)
      or ("%s (+-%.3g %%)"):format(n, 100 * rse[n])
  end
  return table.concat(parts, ", ")
end

-- Adds a stage's result to the run's totals and history; held: the names
-- of the parameters it held, rse: their relative standard errors there.
local function add_stage(state, window, result, held, rse)
  state.stages[#state.stages + 1] = { t_end = window.times[#window.times], targets = #window.times,
    iterations = result.iterations, loss = result.loss, status = result.status, ms_per_iter = result.ms_per_iter,
    held = held, held_rse = rse, converged = result.converged, error = result.error }
  state.iterations = state.iterations + result.iterations
  state.evaluations, state.total = state.evaluations + result.evaluations, state.total + result.total_s
  for key, list in pairs(state.history) do
    for _, v in ipairs(result.history[key]) do list[#list + 1] = v end
  end
end

-- fit(spec, plan): fits loss:window(t) for each horizon t, then the whole
-- loss, each stage starting where the last ended. max_iter applies per
-- stage; iterations, evaluations and times add up over the stages;
-- ms_per_iter is the last stage's (an iteration on the loss it ends on);
-- `stages` lists each stage's end, targets, iterations, loss, status,
-- converged, error and ms/iter, and the parameters it held with their
-- relative standard errors there (held, held_rse: by name). A stage
-- stopped by a failed evaluation fails the fit: the run ends there, its
-- status naming the stage. So do a callback that returns true and a next
-- horizon whose loss fails at the last stage's result; the result is then
-- the last stage's (its loss is that stage's window). loss: the loss to
-- fit (default spec.loss; multi-start passes its limited one).
function M.fit(spec, plan, loss)
  loss = loss or spec.loss
  local next_end, by_events, count = horizons(loss, spec.horizon, plan.start)
  local hold = spec.hold or M.DEFAULT_HOLD
  local state = { stages = {}, iterations = 0, evaluations = 0, total = 0, stop = false,
    history = { loss = {}, gnorm = {}, ms = {}, params = {} } }
  local each = stage_spec(spec, state)
  local log = (spec.print_every or 10) > 0 and (spec.log or mpi.print) or nil
  local start, result, s, t_end = plan.start, nil, 0, -math.huge
  while true do
    s = s + 1
    local before
    t_end, before = next_end(s, start, t_end)
    if not t_end then break end
    local window = t_end < math.huge and loss:window(t_end) or loss
    if log then
      log(("-- horizon %s: t <= %g, %d targets%s"):format(count and ("%d/%d"):format(s, count) or s,
        window.times[#window.times], #window.times, not by_events and "" or t_end == math.huge and " (all)"
        or (", before event %d of the run at its start"):format(before)))
    end
    local ok, err = true, nil
    if s > 1 then ok, err = evaluates_at(window, plan, start) end
    if not ok then
      result.status = ("stopped: the loss on horizon %d (t <= %g) fails at the result of horizon %d: %s"):format(
        s, window.times[#window.times], s - 1, tostring(err))
      result.error, result.converged = tostring(err), false
      if log then log(result.status) end
      break
    end
    local held, rse = {}, {}
    if t_end < math.huge then held, rse = undetermined(window, start, hold) end
    local names, why = {}, {}
    for k, n in ipairs(loss.free) do
      if held[k] then names[#names + 1], why[n] = n, rse[k] end
    end
    if log and #names > 0 then
      log(("   held, not determined by this stage: %s"):format(M.held_text(names, why)))
    end
    result = run_holding(each, plan, window, start, held)
    start = result.x
    add_stage(state, window, result, #names > 0 and names or nil, #names > 0 and why or nil)
    if result.error then
      result.status = ("stopped: horizon stage %s (t <= %g) failed: %s"):format(
        count and ("%d of %d"):format(s, count) or s, window.times[#window.times], result.status)
      break
    end
    if state.stop then break end
  end
  result.start = plan.start
  result.iterations, result.evaluations, result.total_s = state.iterations, state.evaluations, state.total
  result.history, result.stages = state.history, state.stages
  return result
end

return M
