-- The bench scripts' helpers: the median, minimum and maximum of timings,
-- uniform output times, and the wait for a model's background cc build.
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

-- wait_for_cc(m): m, once the cc build it started in the background (a
-- cold cache) has landed in it, up to a minute: timings otherwise measure
-- its tcc kernels, and the compiler beside them.
function M.wait_for_cc(m)
  for _ = 1, 120 do
    if not select(2, m:backend()) then break end
    os.execute("sleep 0.5")
  end
  return m
end

return M
