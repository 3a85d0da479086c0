-- salta.trajectory: the result of model:simulate{}. Columns by name, the
-- event log, solver statistics, CSV output and a readable summary.

local M = {}

local Trajectory = {}
Trajectory.__index = Trajectory
Trajectory.__name = "salta.Trajectory"
M.Trajectory = Trajectory

local function by_name(names, columns)
  local out = {}
  for i, n in ipairs(names) do out[n] = columns[i] end
  return out
end

-- The algebraics the structural compiler replaced by aliases, as columns:
-- +/- the column of the variable each reads (z by name, x by name).
local function add_aliases(model, z, x)
  local st = model.structure
  if not st or #st.aliases == 0 or not z then return z end
  for _, a in ipairs(st.aliases) do
    local src = z[a.of] or (x and x[a.of])   -- a state index reduction made algebraic is in z
    if type(src) == "table" then
      local col = {}
      for i, v in ipairs(src) do col[i] = a.sign * v end
      z[a.name] = col
    elseif src then
      z[a.name] = a.sign * src
    end
  end
  return z
end

-- The input breakpoints a run crossed: { t, input, at (the table's
-- abscissa), direction ("up" or "down") }, in time order.
local function breakpoints(model, events)
  local info = model.symbolic and model.symbolic.e_input or {}
  local out = {}
  for _, e in ipairs(events) do
    local b = info[e.index]
    if b then
      local k = e.x_minus[b.read.index]
      out[#out + 1] = { t = e.t, input = b.input, direction = b.direction > 0 and "up" or "down",
        at = require("salta.piece").crossed(b.read.use.table, k, b.direction) }
    end
  end
  return out
end

-- The states and outputs (an output that is the state itself) that are
-- integer discrete variables: { x = {name = true}, y = {name = true} }.
local function integer_columns(model, kinds)
  local out = { x = {}, y = {} }
  local d = model.symbolic
  if not d then return out end
  for n, kind in pairs(kinds) do if kind == "integer" then out.x[n] = true end end
  if not next(out.x) then return out end
  for i, e in ipairs(d.h or {}) do
    if e.op == "var" and e.kind == "x" and out.x[d.x_names[e.index]] then out.y[model.outputs[i]] = true end
  end
  return out
end

-- Columns (or single values) by name turned into integers where whole.
local function to_integers(t, which)
  for n in pairs(which) do
    local col = t[n]
    if type(col) == "table" then
      for i, v in ipairs(col) do col[i] = math.tointeger(v) or v end
    elseif type(col) == "number" then
      t[n] = math.tointeger(col) or col
    end
  end
end

-- The discrete variables by name (self.discrete), booleans as declared;
-- integers (salta.hybrid integer_discretes) as Lua integers wherever they
-- are shown as they are. Returns integer_columns'.
local function add_discrete(self, model)
  local kinds = model.symbolic and model.symbolic.discrete or {}
  local ints = integer_columns(model, kinds)
  to_integers(self.x, ints.x)
  to_integers(self.y, ints.y)
  if not next(kinds) then return ints end
  self.discrete = {}
  for n, kind in pairs(kinds) do
    local col = self.x[n]
    if kind == "boolean" and col then
      local b = {}
      for i, v in ipairs(col) do b[i] = v ~= 0 end
      col = b
    end
    self.discrete[n] = col
  end
  return ints
end

-- new(model, raw): raw is what the engine returned (columns per variable).
function M.new(model, raw, opts)
  local self = setmetatable({
    model = model.name, t = raw.t,
    y = by_name(model.outputs, raw.y),
    x = by_name(model.states, raw.x),
    z = by_name(model.algebraics, raw.z),
    outputs = model.outputs, t0 = opts.t0, tf = opts.tf,
    _events = {}, _stats = raw.stats,
  }, Trajectory)
  add_aliases(model, self.z, self.x)
  require("salta.structure").add_stats(model.structure, raw.stats)
  local ints = add_discrete(self, model)
  -- a terminal event ended the run: t_end (< tf) and the event's name
  local te = raw.stats and raw.stats.terminal_event
  if te then
    raw.stats.terminal_event = model.events[te]
    self.t_end = raw.stats.t_end
  end
  -- with sensitivities: d t_end / d each direction (0 when the run reached tf)
  local sens = opts.sens
  if sens and raw.t_end_p then self.dt_end = by_name(sens, raw.t_end_p) end
  local hidden = model.symbolic and model.symbolic.e_hidden or {}
  self._breakpoints = breakpoints(model, raw.events)
  for _, e in ipairs(raw.events) do
    if hidden[e.index] then goto continue end   -- an input's breakpoint
    self._events[#self._events + 1] = {
      t = e.t, index = e.index, name = e.name, group = e.group, group_size = e.group_size,
      simultaneous = e.group_size > 1, cascade = e.cascade, rate = e.rate, rate_scale = e.rate_scale,
      x_minus = by_name(model.states, e.x_minus), x_plus = by_name(model.states, e.x_plus),
      z_minus = by_name(model.algebraics, e.z_minus), z_plus = by_name(model.algebraics, e.z_plus),
    }
    local rec = self._events[#self._events]
    if sens and e.tau_p then rec.dtau = by_name(sens, e.tau_p) end
    to_integers(rec.x_minus, ints.x)
    to_integers(rec.x_plus, ints.x)
    add_aliases(model, rec.z_minus, rec.x_minus)
    add_aliases(model, rec.z_plus, rec.x_plus)
    ::continue::
  end
  if raw.steps then
    self.steps = { t = raw.steps.t, x = by_name(model.states, raw.steps.x),
      z = by_name(model.algebraics, raw.steps.z) }
    to_integers(self.steps.x, ints.x)
    add_aliases(model, self.steps.z, self.steps.x)
  end
  return self
end

function Trajectory:events() return self._events end
function Trajectory:breakpoints() return self._breakpoints end
function Trajectory:stats() return self._stats end

-- Segment boundaries: t0, each distinct event time, tf (or the end a
-- terminal event set).
function Trajectory:segments()
  local b, tf = { self.t0 }, self.t_end or self.tf
  for _, e in ipairs(self._events) do
    if e.t ~= b[#b] then b[#b + 1] = e.t end
  end
  if b[#b] ~= tf then b[#b + 1] = tf end
  return b
end

-- x in the fewest significant digits that read back as x.
local function shortest(x)
  for d = 15, 16 do
    local s = ("%." .. d .. "g"):format(x)
    if tonumber(s) == x then return s end
  end
  return ("%.17g"):format(x)
end

-- at(t): outputs at time t (a table by name), linearly interpolated between
-- the stored output times and never across an event (right-continuous).
-- A t outside the output times is an error: no extrapolation.
function Trajectory:at(t)
  local ts = self.t
  if type(t) ~= "number" or t ~= t then
    local got = t ~= t and "NaN" or type(t) == "string" and ("the string '%s'"):format(t) or tostring(t)
    error(("trajectory:at: t must be a number, got %s"):format(got), 2)
  end
  if #ts == 0 then error("trajectory:at: the trajectory has no output times", 2) end
  if t < ts[1] or t > ts[#ts] then
    error(("trajectory:at: t = %s is outside the output times [%s, %s]"):format(shortest(t), shortest(ts[1]),
      shortest(ts[#ts])), 2)
  end
  local lo, hi = 1, #ts
  while hi - lo > 1 do           -- last index with ts[i] <= t
    local mid = (lo + hi) // 2
    if ts[mid] <= t then lo = mid else hi = mid end
  end
  if ts[hi] <= t then lo = hi end
  local out = {}
  local a, b = lo, lo + 1
  local crosses = false
  if b <= #ts then
    for _, e in ipairs(self._events) do
      if e.t > ts[a] and e.t <= ts[b] then crosses = true; break end
    end
  end
  for _, n in ipairs(self.outputs) do
    local col = self.y[n]
    if ts[a] == t or b > #ts or crosses or col[a] == col[b] then
      out[n] = col[a]
    else
      local w = (t - ts[a]) / (ts[b] - ts[a])
      out[n] = (1 - w) * col[a] + w * col[b]
    end
  end
  return out
end

local function fmt(v) return string.format("%.17g", v) end

-- to_csv(path): header "t,<outputs>" (names quoted where CSV needs it),
-- numbers with 17 significant digits; the whole file or nothing
-- (salta.files).
function Trajectory:to_csv(path)
  local field = require("salta.data").field
  local header = { "t" }
  for i, n in ipairs(self.outputs) do header[i + 1] = field(n) end
  local lines = { table.concat(header, ",") }
  for k, t in ipairs(self.t) do
    local row = { fmt(t) }
    for _, n in ipairs(self.outputs) do row[#row + 1] = fmt(self.y[n][k]) end
    lines[#lines + 1] = table.concat(row, ",")
  end
  return require("salta.files").write(path, table.concat(lines, "\n") .. "\n", "trajectory:to_csv")
end

function Trajectory:__tostring()
  local st = self._stats
  local lines = {
    ("trajectory of '%s': %d output times on [%g, %g], %d events, %d steps"):format(
      self.model, #self.t, self.t0, self.tf, #self._events, st.steps),
  }
  local show = {}
  for i = 1, math.min(#self.outputs, 6) do show[i] = self.outputs[i] end
  local head = { ("%12s"):format("t") }
  for _, n in ipairs(show) do head[#head + 1] = ("%12s"):format(n:sub(1, 12)) end
  if #self.outputs > #show then head[#head + 1] = " ..." end
  lines[#lines + 1] = table.concat(head)
  local n = #self.t
  local rows = n <= 8 and n or 6
  for r = 1, rows do
    local k = (n <= 8 or r <= 3) and r or n - (6 - r)
    if n > 8 and r == 4 then lines[#lines + 1] = ("%12s"):format("...") end
    local cells = { ("%12.6g"):format(self.t[k]) }
    for _, nm in ipairs(show) do cells[#cells + 1] = ("%12.6g"):format(self.y[nm][k]) end
    lines[#lines + 1] = table.concat(cells)
  end
  for i, e in ipairs(self._events) do
    if i > 5 then lines[#lines + 1] = ("  ... %d more events"):format(#self._events - 5); break end
    lines[#lines + 1] = ("  event %-20s at t = %.9g%s"):format("'" .. e.name .. "'", e.t,
      e.simultaneous and " (simultaneous)" or "")
  end
  return table.concat(lines, "\n")
end

return M
