-- make demo: the flagship example, for now a small fit that uses only the
-- model compiler. The spring of models/spring_latch.lua has a force F
-- defined implicitly by 0 = F + c F^3 - k x. We measure F at a few
-- displacements with the true (k, c), then recover (k, c) from a wrong start
-- by Gauss-Newton, using the compiled g and its exact Jacobians:
--   dF/dp = -g_F^-1 g_p   (implicit function theorem).
local m = dofile("models/spring_latch.lua")()
print(m)

local TRUE = { k = 4.0, c = 0.1 }
local function params(k, c)
  local p = {}
  for i, n in ipairs(m.params) do p[i] = m.p0[n] end
  p[1], p[2] = k, c          -- k and c are the first two parameters
  return p
end

-- F(x) by Newton on g with the exact g_F.
local function force(x, p)
  local F = 0.0
  for _ = 1, 50 do
    local g = m:eval("g", 0, { x, 0 }, { F }, p)[1]
    local gF = m:jacobian("g", "z", 0, { x, 0 }, { F }, p)[1][1]
    F = F - g / gF
    if math.abs(g) < 1e-14 then break end
  end
  return F
end

local xs, data = {}, {}
for i = 1, 8 do xs[i] = -2 + 4 * (i - 1) / 7 end
for i, x in ipairs(xs) do data[i] = force(x, params(TRUE.k, TRUE.c)) end

-- Levenberg-Marquardt: Gauss-Newton steps, damped by lambda where the
-- loss would grow.
local function evaluate(k, c)
  local p = params(k, c)
  local JtJ, Jtr, loss = { { 0, 0 }, { 0, 0 } }, { 0, 0 }, 0
  for i, x in ipairs(xs) do
    local F = force(x, p)
    local r = F - data[i]
    local gF = m:jacobian("g", "z", 0, { x, 0 }, { F }, p)[1][1]
    local gp = m:jacobian("g", "p", 0, { x, 0 }, { F }, p)[1]
    local J = { -gp[1] / gF, -gp[2] / gF }
    for a = 1, 2 do
      Jtr[a] = Jtr[a] + J[a] * r
      for b = 1, 2 do JtJ[a][b] = JtJ[a][b] + J[a] * J[b] end
    end
    loss = loss + r * r / #xs
  end
  return loss, JtJ, Jtr
end

local k, c, lambda = 3.0, 0.3, 1e-3
local loss, JtJ, Jtr = evaluate(k, c)
print(("%4s %16s %16s %12s"):format("iter", "k", "c", "loss"))
for it = 0, 50 do
  print(("%4d %16.12f %16.12f %12.3e"):format(it, k, c, loss))
  if loss < 1e-26 then break end
  while true do
    local a, b, d = JtJ[1][1] * (1 + lambda), JtJ[1][2], JtJ[2][2] * (1 + lambda)
    local det = a * d - b * b
    local k1 = k - (d * Jtr[1] - b * Jtr[2]) / det
    local c1 = c - (a * Jtr[2] - b * Jtr[1]) / det
    local l1, J1, r1 = evaluate(k1, c1)
    if l1 == l1 and l1 < loss then
      k, c, loss, JtJ, Jtr, lambda = k1, c1, l1, J1, r1, lambda / 10
      break
    end
    lambda = lambda * 10
  end
end
print(("fitted k = %.12g (true %g), c = %.12g (true %g)"):format(k, TRUE.k, c, TRUE.c))
assert(math.abs(k - TRUE.k) < 1e-8 and math.abs(c - TRUE.c) < 1e-8, "demo fit did not converge")
