-- salta.fit_horizon: continuation on the time horizon (salta.fit{ horizon
-- = true | {t1, t2, ...} }). The fit runs first on the targets at t <= t1
-- (loss:window), then from its result on t <= t2, ..., and last on the
-- whole loss; `true` takes the horizons t0 + span/6, span/3, 2 span/3. An
-- oscillating trajectory fitted over its whole horizon at once has many
-- local minima (phases matched a period off, events matched to the wrong
-- events); a short horizon has few, and each longer one starts near its
-- minimum.

local run = require("salta.fit_run")
local mpi = require("salta.mpi")

local M = {}

-- The stage end times of a horizon continuation, before the whole loss.
-- Errors name the caller of salta.fit (level 4).
local function horizons(loss, h)
  local times = loss.times
  local t_last = times[#times]
  if h == true then
    local span = t_last - loss.t0
    return { loss.t0 + span / 6, loss.t0 + span / 3, loss.t0 + 2 * span / 3 }
  end
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
  return { table.unpack(h) }
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

-- Adds a stage's result to the run's totals and history.
local function add_stage(state, window, result)
  state.stages[#state.stages + 1] = { t_end = window.times[#window.times], targets = #window.times,
    iterations = result.iterations, loss = result.loss, status = result.status, ms_per_iter = result.ms_per_iter,
    converged = result.converged, error = result.error }
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
-- converged, error and ms/iter. A stage stopped by a failed evaluation
-- fails the fit: the run ends there, its status naming the stage. So do a
-- callback that returns true and a next horizon whose loss fails at the
-- last stage's result; the result is then the last stage's (its loss is
-- that stage's window).
function M.fit(spec, plan, loss)
  loss = loss or spec.loss
  local ends = horizons(loss, spec.horizon)
  ends[#ends + 1] = math.huge
  local state = { stages = {}, iterations = 0, evaluations = 0, total = 0, stop = false,
    history = { loss = {}, gnorm = {}, ms = {}, params = {} } }
  local each = stage_spec(spec, state)
  local log = (spec.print_every or 10) > 0 and (spec.log or mpi.print) or nil
  local start, result = plan.start, nil
  for s, t_end in ipairs(ends) do
    local window = t_end < math.huge and loss:window(t_end) or loss
    if log then
      log(("-- horizon %d/%d: t <= %g, %d targets"):format(s, #ends, window.times[#window.times], #window.times))
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
    result = run.once(each, plan, window, start)
    start = result.x
    add_stage(state, window, result)
    if result.error then
      result.status = ("stopped: horizon stage %d of %d (t <= %g) failed: %s"):format(s, #ends,
        window.times[#window.times], result.status)
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
