-- salta.experiments: one loss over several experiments.
--
--   local E = salta.experiments{
--     losses = { L1, L2, ... },        -- salta.lsq losses, each on its own model
--                                      -- instance, data, times, x0 and inputs
--     names = { "low", "high" },       -- (default exp1, exp2, ...)
--     shared = { "C1_C", "L1_L" },     -- one value for all experiments
--   }
--
-- Every other free parameter of an experiment's loss is local to it and
-- is named "<name>@<experiment>" (e.g. "x0.C3_v@exp2"). The free
-- parameters are the shared ones, then each experiment's local ones. E has
-- the interface of a loss (salta.loss_interface), so salta.fit, every
-- optimiser and the covariance work unchanged. The value is the sum of the experiments'
-- losses; residuals and Jacobian rows are theirs, concatenated.
--
-- Under mpirun (salta.mpi) the experiments are split across the ranks
-- round-robin and their results summed with MPI_Allreduce; a failure on
-- any rank is raised on every rank.

local mpi = require("salta.mpi")
local options = require("salta.options")
local interface = require("salta.loss_interface")

local M = {}

local Experiments = {}
Experiments.__index = Experiments
Experiments.__name = "salta.experiments"

local function fail(fmt, ...) error(("salta.experiments: " .. fmt):format(...), 3) end

function M.new(spec)
  if type(spec) ~= "table" then fail("expected a table { losses = {...}, shared = {...} }") end
  options.check("experiments", spec, "salta.experiments")
  local losses = spec.losses
  if type(losses) ~= "table" or #losses == 0 then fail("losses must be a non-empty list of salta.lsq losses") end
  local names = spec.names or {}
  local shared, is_shared = spec.shared or {}, {}
  for k, n in ipairs(shared) do
    if type(n) ~= "string" then fail("shared[%d] must be a parameter's name, got %s", k, tostring(n)) end
    if is_shared[n] then fail("shared lists '%s' twice (shared[%d] and shared[%d])", n, is_shared[n], k) end
    is_shared[n] = k
  end
  local self = setmetatable({ losses = losses, names = {}, free = {}, log = {}, maps = {}, shared = shared },
    Experiments)
  local index = {}
  for k, n in ipairs(shared) do
    self.free[k], index[n] = n, k
  end
  local used = {}
  for i, L in ipairs(losses) do
    local missing = interface.missing(L)
    if missing then fail("losses[%d] is not a salta.lsq loss (%s)", i, missing) end
    local en = names[i] or ("exp" .. i)
    if used[en] then fail("two experiments are named '%s'", en) end
    used[en], self.names[i] = true, en
    local map = {}
    for k, n in ipairs(L.free) do
      if is_shared[n] then
        map[k] = index[n]
        if self.log[index[n]] ~= nil and self.log[index[n]] ~= L.log[k] then
          fail("shared parameter '%s' is log-transformed in some experiments and not in others", n)
        end
        self.log[index[n]] = L.log[k]
      else
        local gname = n .. "@" .. en
        self.free[#self.free + 1] = gname
        map[k] = #self.free
        index[gname] = #self.free
        self.log[#self.free] = L.log[k]
      end
    end
    self.maps[i] = map
  end
  for k, n in ipairs(shared) do
    if self.log[k] == nil then fail("shared parameter '%s' is free in no experiment", n) end
  end
  self.index = index
  -- the targets of all experiments, for a horizon continuation
  local times, t0 = {}, math.huge
  for _, L in ipairs(losses) do
    for _, t in ipairs(L.times) do times[#times + 1] = t end
    t0 = math.min(t0, L.t0)
  end
  table.sort(times)
  self.times, self.t0 = times, t0
  return self
end

-- Why key is not a free parameter: what the experiment its "@" suffix
-- names frees, or that there is no such experiment.
local function not_free(self, key)
  local base, en = key:match("^(.*)@([^@]*)$")
  if not en then
    return ("free: %s; local parameters are named <name>@<experiment>"):format(table.concat(self.free, ", "))
  end
  for i, n in ipairs(self.names) do
    if n == en then
      local k = self.index[base]
      if k and k <= #self.shared then return ("'%s' is shared: give it as '%s'"):format(base, base) end
      local own = {}
      for c, g in ipairs(self.maps[i]) do own[c] = self.free[g] end
      return ("experiment '%s' frees %s"):format(en, table.concat(own, ", "))
    end
  end
  return ("no experiment is named '%s' (experiments: %s)"):format(en, table.concat(self.names, ", "))
end

-- Refuses a name in p (parameters by name) that is not a free parameter.
local function check_names(self, p)
  for key in pairs(p) do
    if not self.index[key] then
      error(("salta.experiments: '%s' is not a free parameter (%s)"):format(tostring(key),
        not_free(self, tostring(key))), 0)
    end
  end
end

-- The free values of experiment i from global values p (an array or a
-- table by name).
function Experiments:part(p, i)
  if type(p) ~= "table" then error("salta.experiments: parameters must be an array or a table by name", 3) end
  local by_name = #p == 0 and next(p) ~= nil
  if not by_name and #p ~= #self.free then
    error(("salta.experiments: %d parameter values, expected %d (%s)"):format(#p, #self.free,
      table.concat(self.free, ", ")), 3)
  end
  if by_name then check_names(self, p) end
  local out = {}
  for k, g in ipairs(self.maps[i]) do
    local v = by_name and p[self.free[g]] or p[g]
    if v == nil then error(("salta.experiments: no value for '%s'"):format(self.free[g]), 3) end
    out[k] = v
  end
  return out
end

-- fn(i, L, acc) on the experiments this rank owns, each adding its results
-- into the flat array acc (n zeros); then acc summed over the ranks.
local function over(self, n, fn)
  local acc = {}
  for k = 1, n do acc[k] = 0 end
  mpi.agree(function()
    for i, L in ipairs(self.losses) do
      if mpi.mine(i) then fn(i, L, acc) end
    end
  end)
  return mpi.allreduce(acc)
end

function Experiments:value(p, opts)
  return over(self, 1, function(i, L, acc) acc[1] = acc[1] + L:value(self:part(p, i), opts) end)[1]
end

function Experiments:value_and_grad(p, opts)
  local n = #self.free
  local r = over(self, n + 1, function(i, L, acc)
    local v, g = L:value_and_grad(self:part(p, i), opts)
    acc[1] = acc[1] + v
    for k, gk in ipairs(g) do acc[1 + self.maps[i][k]] = acc[1 + self.maps[i][k]] + gk end
  end)
  return r[1], { table.unpack(r, 2, n + 1) }
end

function Experiments:grad(p, opts)
  local _, g = self:value_and_grad(p, opts)
  return g
end

-- The residual rows of each experiment: their counts and offsets.
function Experiments:rows()
  if not self.row_offsets then
    local off, counts = {}, {}
    local total = 0
    for i, L in ipairs(self.losses) do
      off[i] = total
      counts[i] = #L:residual_counts()
      total = total + counts[i]
    end
    self.row_offsets, self.row_counts, self.nrows = off, counts, total
  end
  return self.row_offsets, self.row_counts, self.nrows
end

function Experiments:residuals(p)
  local off, _, m = self:rows()
  return over(self, m, function(i, L, acc)
    for k, r in ipairs(L:residuals(self:part(p, i))) do acc[off[i] + k] = r end
  end)
end

function Experiments:jacobian(p)
  local off, _, m = self:rows()
  local n = #self.free
  local flat = over(self, m * n, function(i, L, acc)
    for k, row in ipairs(L:jacobian(self:part(p, i))) do
      local base = (off[i] + k - 1) * n
      for c, v in ipairs(row) do acc[base + self.maps[i][c]] = v end
    end
  end)
  local J = {}
  for r = 1, m do J[r] = { table.unpack(flat, (r - 1) * n + 1, r * n) } end
  return J
end

-- The number of data behind each residual row's scaling (each experiment
-- scales its residuals by 1 / sqrt of its own count): for the covariance.
function Experiments:residual_counts()
  local _, counts = self:rows()
  local out = {}
  for i, c in ipairs(counts) do for _ = 1, c do out[#out + 1] = c end end
  return out
end

-- Known sigma in every experiment (the covariance's scale is then fixed).
function Experiments:absolute()
  for _, L in ipairs(self.losses) do if not L:absolute() then return false end end
  return true
end

-- The nominal value of free parameter k (for a fit's default start): the
-- first experiment that has it.
function Experiments:nominal(k)
  for i, L in ipairs(self.losses) do
    for c, g in ipairs(self.maps[i]) do
      if g == k then return L:nominal(c) end
    end
  end
end

-- log_sigma(): the sum of the experiments' (salta.goodness).
function Experiments:log_sigma()
  local s = 0
  for _, L in ipairs(self.losses) do
    if not L.log_sigma then return nil end
    s = s + L:log_sigma()
  end
  return s
end

-- attributes(k): free parameter k's min, max and nominal (salta.param_info)
-- from the first experiment whose model declares any.
function Experiments:attributes(k)
  for i, L in ipairs(self.losses) do
    for c, g in ipairs(self.maps[i]) do
      if g == k and L.attributes and next(L:attributes(c)) then return L:attributes(c) end
    end
  end
  return {}
end

-- window(t_end): the experiments over their targets at t <= t_end; one
-- with none there contributes nothing.
function Experiments:window(t_end)
  local w = setmetatable({}, Experiments)
  for k, v in pairs(self) do w[k] = v end
  w.losses, w.row_offsets = {}, nil
  for i, L in ipairs(self.losses) do
    w.losses[i] = #L.times > 0 and L.times[1] <= t_end and L:window(t_end) or M.empty(L)
  end
  local times = {}
  for _, t in ipairs(self.times) do if t <= t_end then times[#times + 1] = t end end
  w.times = times
  return w
end

-- A stand-in for an experiment with no targets in a window: a loss of no
-- residuals (salta.loss_interface), free as L.
function M.empty(L)
  local e = { free = L.free, log = L.log, times = {}, t0 = L.t0 }
  -- a zero gradient at p, which must be a point of L's free parameters
  local function zeros(p)
    if type(p) ~= "table" or (#p ~= #L.free and not (#p == 0 and next(p))) then
      error(("salta.experiments: %s parameter values, expected %d (%s)"):format(type(p) == "table" and #p or "no",
        #L.free, table.concat(L.free, ", ")), 3)
    end
    local g = {}
    for k = 1, #L.free do g[k] = 0 end
    return g
  end
  function e.value(_, p) zeros(p) return 0 end
  function e.value_and_grad(_, p) return 0, zeros(p) end
  function e.grad(_, p) return zeros(p) end
  function e.residuals(_, p) zeros(p) return {} end
  function e.jacobian(_, p) zeros(p) return {} end
  function e.residual_counts() return {} end
  function e.absolute() return L:absolute() end
  function e.mesh_check() return true end
  function e.nominal(_, c) return L:nominal(c) end
  function e.attributes(_, c) return L.attributes and L:attributes(c) or {} end
  function e.log_sigma() return 0 end
  function e.window() return e end
  function e.stats() return {} end
  return e
end

function Experiments:mesh_check(p, opts)
  for i, L in ipairs(self.losses) do
    local ok, why = L:mesh_check(self:part(p, i), opts)
    if not ok then return false, ("experiment '%s': %s"):format(self.names[i], why) end
  end
  return true
end

-- stats(): each experiment's last run statistics, by name (this rank's).
function Experiments:stats()
  local out = {}
  for i, L in ipairs(self.losses) do if mpi.mine(i) then out[self.names[i]] = L:stats() end end
  return out
end

function Experiments:__tostring()
  return ("salta experiments: %d losses (%s), free: %s"):format(#self.losses, table.concat(self.names, ", "),
    table.concat(self.free, ", "))
end

return M
