-- The bench scripts' helpers: the median, minimum and maximum of timings,
-- and uniform output times.
local M = {}

-- stats(xs): median, min, max (sorts xs)
function M.stats(xs)
  table.sort(xs)
  local n = #xs
  local med = n % 2 == 1 and xs[(n + 1) // 2] or (xs[n // 2] + xs[n // 2 + 1]) / 2
  return med, xs[1], xs[n]
end

-- uniform(tf, n): the n + 1 times 0, tf/n, ..., tf
function M.uniform(tf, n)
  local t = {}
  for i = 0, n do t[i + 1] = tf * i / n end
  return t
end

return M
