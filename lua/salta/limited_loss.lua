-- salta.limited_loss: a loss (salta.loss_interface) that stops its user
-- after a number of evaluations or seconds: a multi-start's per-start
-- limits (salta.fit{ starts =, start_time =, start_evals = }), so that one
-- start cannot take the run's time.
--
-- An evaluation is a call of value, value_and_grad, grad or residuals (a
-- Jacobian goes with the residuals of its point). The first is always
-- made; each later one first checks the limits and raises LIMIT's error
-- when one is reached, which the optimiser takes as a failed evaluation:
-- it keeps its last accepted iterate. An evaluation under way is not cut
-- short. state.hit names the limit reached ("time" or "evaluations").

local clock = require("salta.core").clock

local M = {}

local COUNTED = { value = true, value_and_grad = true, grad = true, residuals = true }

-- new(loss, limits): the limited loss; limits = { time = seconds, evals
-- = count } (either nil for none). Its state (evals, t0, hit) is shared
-- with its windows.
function M.new(loss, limits, state)
  state = state or { evals = 0, t0 = clock() }
  local proxy = { state = state, unlimited = loss }
  local function check()
    if state.evals >= 1 then
      if limits.evals and state.evals >= limits.evals then
        state.hit = "evaluations"
        error(("the per-start limit of %d evaluations is reached"):format(limits.evals), 0)
      end
      if limits.time and clock() - state.t0 >= limits.time then
        state.hit = "time"
        error(("the per-start time limit of %g s is reached"):format(limits.time), 0)
      end
    end
    state.evals = state.evals + 1
  end
  return setmetatable(proxy, { __index = function(_, key)
    local v = loss[key]
    if type(v) ~= "function" then return v end
    if key == "window" then return function(_, t) return M.new(loss:window(t), limits, state) end end
    if COUNTED[key] then
      return function(_, ...)
        check()
        return v(loss, ...)
      end
    end
    return function(_, ...) return v(loss, ...) end
  end })
end

return M
