-- salta.goodness: how well a fit's model describes its data, under the
-- Gaussian likelihood of its residuals: chi^2, its reduced value, the
-- maximised log-likelihood and the information criteria AIC, AICc and BIC.
--
-- With m finite data and n free parameters, e_i the weighted errors w (y -
-- d) and sigma_i their known standard deviations (salta.lsq's sigma):
--
--   sigma known    chi2 = sum (e_i / sigma_i)^2, reduced chi2 = chi2 / (m - n)
--                  -2 log L = chi2 + sum log(2 pi sigma_i^2),    k = n
--   sigma unknown  chi2 = sum e_i^2 (the SSR), reduced chi2 = SSR / (m - n)
--                  (the residual variance s^2); sigma^2 is estimated too,
--                  by its maximum likelihood SSR / m:
--                  -2 log L = m (log(2 pi SSR / m) + 1) - 2 sum log w_i,  k = n + 1
--   noise model    (salta.noise) -2 log L = sum (e_i / sigma_i)^2 + log(2 pi sigma_i^2)
--                  with sigma_i the model's, k = n (its parameters among them)
--
--   AIC = -2 log L + 2 k     AICc = AIC + 2 k (k + 1) / (m - k - 1)     BIC = -2 log L + k log m
--
-- The constants are kept, so that criteria of fits with sigma known,
-- estimated or modelled on the same data compare. With sigma known, the
-- misfit test: chi2 / dof above the level-quantile of chi^2_dof / dof (level
-- 0.999 by default: a correct model and sigma exceed it once in a
-- thousand fits).

local stats = require("salta.stats")

local M = {}

M.MISFIT_LEVEL = 0.999

-- The information criteria of -2 log L with k parameters and m data.
local function criteria(g, neg2ll, k, m)
  g.neg2_log_likelihood, g.k = neg2ll, k
  g.aic = neg2ll + 2 * k
  g.aicc = m - k - 1 > 0 and g.aic + 2 * k * (k + 1) / (m - k - 1) or nil
  g.bic = neg2ll + k * math.log(m)
end

-- of(loss, x [, level]): the goodness of loss (salta.loss_interface) at
-- free values x: { m, n, dof, chi2, reduced_chi2, absolute,
-- neg2_log_likelihood, k, aic, aicc, bic, misfit, misfit_threshold }. A
-- loss with its own likelihood (salta.noise) answers loss:goodness(x).
function M.of(loss, x, level)
  if loss.goodness then return loss:goodness(x) end
  local r, counts = loss:residuals(x), loss:residual_counts()
  local m, n = #r, #x
  local chi2 = 0
  for i, v in ipairs(r) do chi2 = chi2 + v * v * counts[i] end
  local g = { m = m, n = n, dof = m - n, chi2 = chi2, absolute = loss:absolute() }
  g.reduced_chi2 = g.dof > 0 and chi2 / g.dof or nil
  local log_sigma = loss.log_sigma and loss:log_sigma()
  if log_sigma then
    if g.absolute then
      criteria(g, chi2 + 2 * log_sigma + m * math.log(2 * math.pi), n, m)
    elseif chi2 > 0 then
      criteria(g, m * (math.log(2 * math.pi * chi2 / m) + 1) + 2 * log_sigma, n + 1, m)
    end
  end
  if g.absolute and g.dof > 0 then
    g.misfit_level = level or M.MISFIT_LEVEL
    g.misfit_threshold = stats.chi2_quantile(g.misfit_level, g.dof) / g.dof
    g.misfit = g.reduced_chi2 > g.misfit_threshold
  end
  return g
end

-- text(g): one line: chi2, reduced chi2 and the criteria.
function M.text(g)
  local parts = { ("chi2 %.6g over %d dof: %s %.6g"):format(g.chi2, g.dof,
    g.absolute ~= false and "chi2/dof" or "s^2 (SSR/dof)", g.reduced_chi2 or 0 / 0) }
  if g.misfit_threshold then
    parts[#parts + 1] = ("misfit above %.4g (the %g quantile)"):format(g.misfit_threshold, g.misfit_level)
  end
  if g.aic then
    parts[#parts + 1] = ("-2 log L %.8g (k = %d); AIC %.8g, AICc %s, BIC %.8g"):format(g.neg2_log_likelihood, g.k,
      g.aic, g.aicc and ("%.8g"):format(g.aicc) or "-", g.bic)
  end
  return table.concat(parts, "; ")
end

return M
