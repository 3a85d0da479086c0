-- salta.fit_status: the verdict of a fit, over every horizon stage and
-- every start, in words that do not call a wrong result converged:
--
--   converged: <the optimiser's own reason>
--   converged to a misfit: chi2/dof = 1278 > 1.07 (...)   sigma known,
--       chi2 / dof above its 0.999 quantile (salta.goodness)
--   not converged: <reason>                   e.g. maximum iterations
--   stopped: <what failed>                    a failed evaluation, a stage
--
-- and, where they apply, the horizon stages that did not converge and the
-- starts' tally. The optimiser's own words stay in result.reason (MINPACK's
-- info code in its words, L-BFGS-B's task string, a shared stop rule); ok
-- is true only for a converged fit that is not a misfit and whose goodness
-- could be computed (result.goodness_error says why not).

local goodness = require("salta.goodness")

local M = {}

-- The stages of a horizon continuation that ended short of convergence
-- (the last one is the fit's own), in words; nil when none.
local function stage_notes(stages)
  local out = {}
  for s = 1, #(stages or {}) - 1 do
    local st = stages[s]
    if not st.converged then
      out[#out + 1] = ("horizon stage %d of %d (t <= %g) ended %s: %s"):format(s, #stages, st.t_end,
        st.error and "failed" or "unconverged", st.status)
    end
  end
  return #out > 0 and table.concat(out, "; ") or nil
end

-- finish(result, level): result (salta.fit_run's, horizon's or
-- multistart's) with goodness, reason, ok and its status; level: the
-- misfit test's (default 0.999).
function M.finish(result, level)
  result.reason = result.reason or result.status
  local okg, g = pcall(goodness.of, result.lsq, result.x, level)
  if okg then result.goodness = g else result.goodness_error = tostring(g) end
  local misfit = okg and g.misfit
  local reason = result.reason
  if result.error or (reason or ""):match("^stopped") then
    result.status = reason
  elseif result.converged and misfit then
    result.status = ("converged to a misfit: chi2/dof = %.4g > %.4g (the %g quantile of chi2/dof for %d dof, sigma "
      .. "known): the model or sigma does not describe the data; %s"):format(g.reduced_chi2, g.misfit_threshold,
      g.misfit_level, g.dof, reason)
  elseif result.converged then
    result.status = "converged: " .. reason
  else
    result.status = "not converged: " .. reason
  end
  if not okg and not result.error then result.status = result.status .. "; no goodness of fit: " .. tostring(g) end
  local notes = stage_notes(result.stages)
  if notes then result.status = result.status .. "; " .. notes end
  if result.starts_summary then result.status = result.status .. " (" .. result.starts_summary .. ")" end
  result.ok = result.converged == true and okg and not misfit and not result.error
  return result
end

return M
