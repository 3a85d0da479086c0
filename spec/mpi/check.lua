-- Run by spec/mpi_spec.lua alone and under mpirun -n 2: prints (rank 0)
-- an experiments loss, its gradient, a fit and a multi-start fit, and
-- (every rank) the error a failure on rank 1 raises everywhere.
local salta = require("salta")
local mpi = require("salta.mpi")

local m = salta.dae{ name = "decay", states = { { "x", 1 } }, params = { { "k", 0.8 }, { "b", 0.3 } },
  f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
local T = {}
for i = 1, 40 do T[i] = i * 0.1 end
local g = salta.gaussian(9)
local losses = {}
for i, A in ipairs({ 1, 2.5, 0.2, 1.7 }) do
  local tr = m:simulate{ tf = 4, times = T, x0 = { x = A }, rtol = 1e-12, atol = 1e-14 }
  local x = {}
  for j, v in ipairs(tr.y.x) do x[j] = v + 0.05 * g() end
  losses[i] = salta.lsq{ model = m, times = T, data = { x = x }, free = { "k", "b", "x0.x" }, x0 = { x = A },
    sigma = 0.05, rtol = 1e-10, atol = 1e-12 }
end
local E = salta.experiments{ losses = losses, shared = { "k", "b" } }
local p = { 0.75, 0.32, 1.1, 2.4, 0.25, 1.6 }
local v, grad = E:value_and_grad(p)
local function fmt(xs)
  local s = {}
  for k, x in ipairs(xs) do s[k] = ("%.17g"):format(x) end
  return table.concat(s, " ")
end
mpi.print("size " .. mpi.size())
mpi.print(("value %.17g"):format(v))
mpi.print("grad " .. fmt(grad))
local r = salta.fit{ loss = E, start = { 0.6, 0.5, 1, 2, 0.5, 1.5 }, method = "lm", print_every = 1 }
mpi.print("fit " .. fmt(r.x))
local ms = salta.fit{ loss = losses[1], method = "lm", starts = 6, sampling = "sobol",
  lower = { 0.1, 0, 0.5 }, upper = { 2, 1, 2 } }
mpi.print("multistart " .. fmt(ms.x) .. (" %.17g"):format(ms.loss))

-- a failure on one rank is raised on every rank
local bad = salta.dae{ name = "bad", states = { { "x", 1 } }, params = { { "k", 1 } },
  f = function(t, x, z, p) return { -x.x / (p.k - 1) } end }
local Lbad = salta.lsq{ model = bad, times = T, data = { x = T }, free = { "k" }, rtol = 1e-8, atol = 1e-10 }
local F = salta.experiments{ losses = { losses[1], Lbad }, shared = { "k" } }
local ok, err = pcall(F.value, F, { 1, 0.3, 1 })
print(("rank %d agree: %s"):format(mpi.rank(), ok and "no error" or tostring(err)))
