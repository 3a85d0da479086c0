-- Run by spec/mpi_spec.lua under mpirun -n 2: a fit over experiments split
-- across the ranks whose callback raises on rank 1 only, at iteration 2;
-- rank 0 goes on to the next (collective) evaluation. The job must end
-- (MPI_Abort), not hang.
local salta = require("salta")
local mpi = require("salta.mpi")

assert(mpi.size() == 2, "run under mpirun -n 2")
local m = salta.dae{ name = "decay", states = { { "x", 1 } }, params = { { "k", 0.8 } },
  f = function(t, x, z, p) return { -p.k * x.x } end }
local T = {}
for i = 1, 20 do T[i] = i * 0.1 end
local losses = {}
for i, A in ipairs({ 1, 2 }) do
  local tr = m:simulate{ tf = 2, times = T, x0 = { x = A } }
  losses[i] = salta.lsq{ model = m, times = T, data = { x = tr.y.x }, free = { "k" }, x0 = { x = A } }
end
local E = salta.experiments{ losses = losses, shared = { "k" } }
salta.fit{ loss = E, start = { 0.3 }, method = "lm", print_every = 0, xtol = 0, ftol = 0, max_iter = 50,
  callback = function(it)
    if it == 2 and mpi.rank() == 1 then error("the callback fails on rank 1") end
  end }
print("rank " .. mpi.rank() .. " reached the end")
