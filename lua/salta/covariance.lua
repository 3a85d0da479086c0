-- salta.covariance: the linearised covariance of least-squares parameter
-- estimates, s^2 (J'J)^-1 in natural units (what scipy's curve_fit returns
-- as pcov), from a loss (salta.loss_interface) at its fitted parameters.
--
--   local cov, err = require("salta.covariance").at(loss, x)

local M = {}

-- The inverse of a symmetric positive definite matrix by Cholesky; nil and
-- the first index whose pivot is not positive otherwise.
local function spd_inverse(A)
  local n, L = #A, {}
  for i = 1, n do
    L[i] = {}
    for j = 1, i do
      local s = A[i][j]
      for k = 1, j - 1 do s = s - L[i][k] * L[j][k] end
      if i == j then
        if not (s > 1e-14 * math.abs(A[i][i])) then return nil, i end
        L[i][i] = math.sqrt(s)
      else
        L[i][j] = s / L[j][j]
      end
    end
  end
  -- columns of L^-1, then A^-1 = L^-T L^-1
  local Li = {}
  for i = 1, n do
    Li[i] = {}
    for j = 1, i do
      local s = i == j and 1 or 0
      for k = j, i - 1 do s = s - L[i][k] * Li[k][j] end
      Li[i][j] = s / L[i][i]
    end
  end
  local inv = {}
  for i = 1, n do
    inv[i] = {}
    for j = 1, n do
      local s = 0
      for k = math.max(i, j), n do s = s + Li[k][i] * Li[k][j] end
      inv[i][j] = s
    end
  end
  return inv
end
M.spd_inverse = spd_inverse

-- at(loss, x): the covariance at free parameters x, with J the Jacobian of
-- the unscaled residuals w (y - d) and s^2 = their sum of squares / (m - n)
-- (m finite data, n free parameters), or 1 with known sigma. nil and a message when m <= n, J'J
-- is singular (a parameter the data do not determine) or the Jacobian
-- cannot be computed there. By the forward sensitivities. A loss with its
-- own likelihood answers loss:covariance_at(x).
function M.at(loss, x)
  if loss.covariance_at then return loss:covariance_at(x) end   -- a likelihood's own (salta.noise)
  local n = #x
  local ok, J, r = pcall(function() return loss:jacobian(x), loss:residuals(x) end)
  if not ok then return nil, tostring(J) end
  local m = #r   -- one residual per finite datum
  if m <= n then return nil, ("%d data for %d parameters: no residual degrees of freedom"):format(m, n) end
  -- the loss's residuals are r = w (y - d) / sqrt(N) with N the data of
  -- their loss (of their experiment, for salta.experiments): unscaled here
  local counts = loss:residual_counts()
  local A, ssr = {}, 0
  for i = 1, n do A[i] = {}; for j = 1, n do A[i][j] = 0 end end
  for row, Jr in ipairs(J) do
    local u = math.sqrt(counts[row])
    ssr = ssr + (u * r[row]) ^ 2
    for i = 1, n do
      local ji = u * Jr[i] / (loss.log[i] and x[i] or 1)   -- d/d log p = p d/dp
      if ji ~= 0 then
        for j = 1, i do A[i][j] = A[i][j] + ji * u * Jr[j] / (loss.log[j] and x[j] or 1) end
      end
    end
  end
  for i = 1, n do for j = i + 1, n do A[i][j] = A[j][i] end end
  local inv, bad = spd_inverse(A)
  if not inv then
    return nil, ("J'J is singular at '%s': the data do not determine it apart from the others"):format(
      loss.free[bad])
  end
  -- known sigma: the residuals are in units of their standard deviations,
  -- so s^2 is 1
  local s2 = loss:absolute() and 1 or ssr / (m - n)
  for i = 1, n do for j = 1, n do inv[i][j] = inv[i][j] * s2 end end
  return inv
end

return M
