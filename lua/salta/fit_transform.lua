-- salta.fit_transform: the variables an optimiser moves, u, and the free
-- parameters p they stand for, one by one:
--
--   v = log p (a log-transformed parameter) or p / s (s its nominal, so
--       that a step of 1 is a step of the nominal's size: Adam's lr and
--       L-BFGS-B's first step are relative);
--   u = v within the bounds [a, b] of v for lbfgsb and adam, which keep
--       bounds themselves; for Levenberg-Marquardt (MINPACK has none) the
--       bounds are MINUIT's transform, as lmfit's:
--         two-sided   v = a + (b - a) (sin u + 1) / 2
--         lower only  v = a - 1 + sqrt(u^2 + 1)
--         upper only  v = b + 1 - sqrt(u^2 + 1)
--       so every u is inside, and a parameter may end on its bound.
--
-- dv/du multiplies the loss's gradient and Jacobian columns (which are by
-- log p or by p) into the optimiser's: the chain rule, exact. The
-- covariance is computed from the loss's own Jacobian at the fitted p
-- (salta.covariance), so it needs no mapping back. A start on a bound of
-- a MINUIT-transformed parameter has dv/du = 0 and would stay there: it is
-- moved inside by 1e-6 of the bounds' span (or of the scale).

local M = {}

-- The map of one parameter: to_u(p), to_p(u), dv_du(u), and the bounds
-- of u the optimiser must keep (nil when the map keeps them).
local function map(log, s, lo, hi, minuit)
  local function to_v(p)
    if log then
      if p <= 0 then return -math.huge end
      return p == math.huge and math.huge or math.log(p)
    end
    return p / s
  end
  local function from_v(v) if log then return math.exp(v) end return v * s end
  local dv = log and 1 or s   -- d(the loss's variable)/dv: log p is v, p is s v
  local a, b = to_v(lo), to_v(hi)
  local m = { lower = a, upper = b }
  if not minuit or (a == -math.huge and b == math.huge) then
    m.to_u, m.to_p = to_v, from_v
    m.dv_du = function() return dv end
  elseif a > -math.huge and b < math.huge then
    local inset = 1e-6 * (b - a)
    m.to_u = function(p)
      local v = math.min(math.max(to_v(p), a + inset), b - inset)
      return math.asin(2 * (v - a) / (b - a) - 1)
    end
    m.to_p = function(u) return from_v(a + (b - a) * (math.sin(u) + 1) / 2) end
    m.dv_du = function(u) return dv * (b - a) * math.cos(u) / 2 end
  elseif a > -math.huge then
    m.to_u = function(p) return math.sqrt((math.max(to_v(p) - a, 1e-6) + 1) ^ 2 - 1) end
    m.to_p = function(u) return from_v(a - 1 + math.sqrt(u * u + 1)) end
    m.dv_du = function(u) return dv * u / math.sqrt(u * u + 1) end
  else
    m.to_u = function(p) return math.sqrt((math.max(b - to_v(p), 1e-6) + 1) ^ 2 - 1) end
    m.to_p = function(u) return from_v(b + 1 - math.sqrt(u * u + 1)) end
    m.dv_du = function(u) return -dv * u / math.sqrt(u * u + 1) end
  end
  if minuit then m.lower, m.upper = nil, nil end
  return m
end

-- new(loss, plan): the transform of plan (bounds and scale) on loss's
-- free parameters; minuit: the bounds go into the map (LM).
function M.new(loss, plan, minuit)
  local maps = {}
  for k = 1, #loss.free do
    maps[k] = map(loss.log[k], plan.scale and plan.scale[k] or 1, plan.lower[k], plan.upper[k], minuit)
  end
  local T = { maps = maps }
  function T.to_u(p)
    local u = {}
    for k, m in ipairs(maps) do u[k] = m.to_u(p[k]) end
    return u
  end
  function T.to_p(u)
    local p = {}
    for k, m in ipairs(maps) do p[k] = m.to_p(u[k]) end
    return p
  end
  -- the loss's gradient (or a Jacobian row) g at u, as the optimiser's
  function T.chain(u, g)
    local out = {}
    for k, m in ipairs(maps) do out[k] = g[k] * m.dv_du(u[k]) end
    return out
  end
  -- the optimiser's bounds: nil when every map keeps its own
  function T.bounds()
    local lo, hi, any = {}, {}, false
    for k, m in ipairs(maps) do
      lo[k], hi[k] = m.lower or -math.huge, m.upper or math.huge
      any = any or lo[k] > -math.huge or hi[k] < math.huge
    end
    if any then return lo, hi end
  end
  return T
end

return M
