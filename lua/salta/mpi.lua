-- salta.mpi: the ranks of an MPI run (mpirun -n K salta script.lua), or a
-- single process.
--
--   local mpi = require("salta.mpi")
--   mpi.rank(), mpi.size()            -- 0-based rank, number of ranks
--   mpi.allreduce(xs)                 -- element-wise sum over the ranks (a new array)
--   mpi.allreduce_max(v)              -- the largest number over the ranks
--   mpi.bcast(s, root)                -- root's string (or nil) on every rank
--   mpi.agree(fn, ...)                -- fn(...) on every rank; if it fails on any,
--                                        every rank raises the error of the lowest one
--
-- The binding (salta.mpi_core, over Debian's OpenMPI) is built only where
-- mpi.h is found, and loaded only when the process was started by mpirun
-- (OMPI_COMM_WORLD_SIZE set): a plain run never initialises MPI.
--
-- An error no rank catches ends the whole job: the salta host prints it and
-- calls salta.mpi_core.abort (MPI_Abort); any other host (lua5.4) exits
-- non-zero, and the binding's exit handler aborts instead of finalising.
-- Without that, the failed rank would wait in MPI_Finalize while the others
-- wait for it in a collective.

local M = {}

local core
if os.getenv("OMPI_COMM_WORLD_SIZE") or os.getenv("PMI_SIZE") then
  local ok, mod = pcall(require, "salta.mpi_core")
  if not ok then
    error("salta.mpi: started by mpirun, but the MPI binding (salta.mpi_core) is not built: install "
      .. "libopenmpi-dev and run make: " .. tostring(mod), 0)
  end
  core = mod
end

M.enabled = core ~= nil

-- Within locally(), work is this rank's alone: mine() is every item and
-- the collectives are identities (a multi-start's fits on one rank).
local alone = 0

function M.locally(fn, ...)
  alone = alone + 1
  local res = table.pack(pcall(fn, ...))
  alone = alone - 1
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- Whether the collectives go over the ranks (under mpirun, not locally()).
local function together() return core ~= nil and alone == 0 end

function M.rank() return core and core.rank() or 0 end
function M.size() return core and core.size() or 1 end

function M.allreduce(xs)
  if not together() then return { table.unpack(xs) } end
  return core.allreduce_sum(xs)
end

function M.allreduce_max(v)
  if not together() then return v end
  return core.allreduce_max(v)
end

function M.bcast(s, root)
  if not together() then return s end
  return core.bcast_string(s, root or 0)
end

-- Whether this rank does work item k (1-based) of a round-robin split.
function M.mine(k) return alone > 0 or (k - 1) % M.size() == M.rank() end

-- fn(...) on every rank, with one outcome everywhere: its results, or the
-- error of the lowest-ranked failure raised on every rank (no rank waits
-- for a collective the others left).
function M.agree(fn, ...)
  local res = table.pack(pcall(fn, ...))
  if not together() then
    if not res[1] then error(res[2], 0) end
    return table.unpack(res, 2, res.n)
  end
  local failed = res[1] and math.huge or M.rank()
  local first = -core.allreduce_max(-failed)   -- the lowest failing rank, or huge
  if first ~= math.huge then
    local msg = core.bcast_string(M.rank() == first and tostring(res[2]) or nil, math.tointeger(first))
    error(msg, 0)
  end
  return table.unpack(res, 2, res.n)
end

-- Only rank 0 prints and writes files.
function M.is_root() return M.rank() == 0 end

-- print on rank 0 only.
function M.print(...) if M.is_root() then print(...) end end

return M
