-- Run by spec/mpi_spec.lua under mpirun -n 2: rank 1 raises at the top
-- level while rank 0 waits in a collective; the job must end (MPI_Abort),
-- not hang.
local mpi = require("salta.mpi")

assert(mpi.size() == 2, "run under mpirun -n 2")
mpi.allreduce({ 1 })   -- both ranks are up
if mpi.rank() == 1 then error("rank 1 fails at the top level") end
mpi.allreduce({ 1 })   -- rank 0 waits here for rank 1
print("rank " .. mpi.rank() .. " reached the end")
