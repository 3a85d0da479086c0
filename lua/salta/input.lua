-- salta.input: inputs from data (salta.table), read in model equations.
--
--   local Tout = salta.table{ t = {0, 1, 2}, v = {5, 7, 4}, interp = "linear" }
--   local Tout = salta.table{ csv = "weather.csv", t = "hour", v = "Tout", interp = "step" }
--   salta.dae{ ..., inputs = { Tout = Tout },
--     f = function(t, x, z, p, u) return { -p.a * (x.T - p.k * u.Tout(t - p.delay)) } end }
--
-- A table is a function of one argument: "linear" between its points,
-- "step" (the value of the last point at or before the argument) or
-- "cubic" (a natural cubic spline, smooth to the second derivative). Read
-- in an expression it becomes a unary function of the expression compiled
-- to C with its derivatives, so a parameter in its argument or around it
-- gets exact sensitivities. Read in f, g, h or a guard at an argument that
-- moves, it follows its table piece by piece (salta.piece): the piece is
-- a hidden state its breakpoints' events move, so the integrator never
-- steps across a kink or a jump and n rows cost O(n). Outside the table
-- the value is NaN (extrapolate = "hold": the last value holds after
-- the last point, far beyond any run's end): the engine checks the range of arguments of t
-- and the parameters first, the pieces' events that of the others, each
-- naming the input.

local expr = require("salta.expr")
local cond = require("salta.cond")
local piece = require("salta.piece")
local options = require("salta.options")

local M = {}

local Table = {}
Table.__index = Table
Table.__name = "salta.table"

local function is_table(v) return getmetatable(v) == Table end
M.is_table = is_table

local INTERP = { linear = true, step = true, cubic = true }

local function fail(fmt, ...) error(("salta.table: " .. fmt):format(...), 3) end

-- A digest of the table's exact contents (every double's bits): its C
-- functions' names, so that equal tables give the same generated source
-- (and cache key) and tables differing in any digit do not.
local function content_hash(t, v, interp)
  local parts = { interp, ";" }
  for i = 1, #t do parts[#parts + 1] = string.pack("<dd", t[i], v[i]) end
  return require("salta.core").hash(table.concat(parts)):sub(1, 16)
end

-- Natural cubic spline second derivatives at the points.
local function spline_m(t, v)
  local n = #t
  local m, c, d = {}, {}, {}
  m[1], m[n] = 0, 0
  if n < 3 then
    for i = 1, n do m[i] = 0 end
    return m
  end
  -- tridiagonal system for m[2 .. n-1] (Thomas algorithm)
  local a, b, r = {}, {}, {}
  for i = 2, n - 1 do
    local h0, h1 = t[i] - t[i - 1], t[i + 1] - t[i]
    a[i], b[i], c[i] = h0, 2 * (h0 + h1), h1
    r[i] = 6 * ((v[i + 1] - v[i]) / h1 - (v[i] - v[i - 1]) / h0)
  end
  for i = 3, n - 1 do
    local w = a[i] / b[i - 1]
    b[i] = b[i] - w * c[i - 1]
    r[i] = r[i] - w * r[i - 1]
  end
  for i = n - 1, 2, -1 do
    d[i] = (r[i] - (i < n - 1 and c[i] * d[i + 1] or 0)) / b[i]
  end
  for i = 2, n - 1 do m[i] = d[i] end
  return m
end

-- salta.table{ t =, v =, interp = } or { csv =, t = column, v = column,
-- interp = } (options: topic table).
function M.new(spec)
  if type(spec) ~= "table" then fail("expects a table { t = ..., v = ..., interp = ... }") end
  options.check("table", spec, "salta.table")
  local t, v = spec.t, spec.v
  local interp = spec.interp or "linear"
  if not INTERP[interp] then fail("interp must be \"linear\", \"step\" or \"cubic\", got '%s'", interp) end
  local label = spec.name
  if spec.csv then
    local data = require("salta.data").read_csv(spec.csv)
    if type(t) ~= "string" or type(v) ~= "string" then
      fail("with csv, t and v name its columns (strings), got %s and %s", type(t), type(v))
    end
    if not data.columns[t] then fail("%s has no column '%s' (columns: %s)", spec.csv, t, table.concat(data.names, ", ")) end
    if not data.columns[v] then fail("%s has no column '%s' (columns: %s)", spec.csv, v, table.concat(data.names, ", ")) end
    label = label or v
    t, v = data.columns[t], data.columns[v]
  end
  if type(t) ~= "table" or type(v) ~= "table" then fail("t and v must be arrays of numbers") end
  if #t ~= #v then fail("t has %d values and v %d", #t, #v) end
  if #t < 2 then fail("needs at least 2 points, got %d", #t) end
  local tt, vv = {}, {}
  for i = 1, #t do
    local ti, vi = t[i], v[i]
    if type(ti) ~= "number" or ti ~= ti or ti == math.huge or ti == -math.huge then
      fail("t[%d] is %s, not a finite number", i, tostring(ti))
    end
    if type(vi) ~= "number" or vi ~= vi or vi == math.huge or vi == -math.huge then
      fail("v[%d] (at t = %g) is %s, not a finite number", i, ti, tostring(vi))
    end
    if i > 1 and not (ti > tt[i - 1]) then
      fail("t must increase: t[%d] = %g after t[%d] = %g", i, ti, i - 1, tt[i - 1])
    end
    tt[i], vv[i] = ti + 0.0, vi + 0.0
  end
  if spec.extrapolate ~= nil and spec.extrapolate ~= "none" then
    if spec.extrapolate ~= "hold" then fail("extrapolate must be \"none\" or \"hold\", got '%s'", tostring(spec.extrapolate)) end
    if interp == "cubic" then fail("extrapolate = \"hold\" needs interp \"step\" or \"linear\" (a spline's end would move)") end
    -- the last value held to far past the end (1e9 spans), as a last point
    local n = #tt
    tt[n + 1], vv[n + 1] = tt[n] + 1e9 * math.max(tt[n] - tt[1], 1), vv[n]
  end
  local self = setmetatable({ t = tt, v = vv, interp = interp, label = label, extrapolate = spec.extrapolate }, Table)
  self.hash = content_hash(tt, vv, interp)
  if interp == "cubic" then self.m = spline_m(tt, vv) end
  return self
end

-- The segment k (1 .. n-1) holding s, right-continuous; nil outside.
local function segment(self, s)
  local t, n = self.t, #self.t
  if not (s >= t[1] and s <= t[n]) then return nil end
  local lo, hi = 1, n
  while hi - lo > 1 do
    local mid = (lo + hi) // 2
    if t[mid] <= s then lo = mid else hi = mid end
  end
  return lo
end

-- The value (order 0) or a derivative of the table at s, as in the C code.
function Table:at(s, order)
  order = order or 0
  local k = segment(self, s)
  if not k then return 0 / 0 end
  local t, v = self.t, self.v
  local h, u = t[k + 1] - t[k], s - t[k]
  if self.interp == "step" then
    if order > 0 then return 0.0 end
    return s == t[k + 1] and v[k + 1] or v[k]
  elseif self.interp == "linear" then
    if order == 0 then return v[k] + (v[k + 1] - v[k]) * u / h end
    return order == 1 and (v[k + 1] - v[k]) / h or 0.0
  end
  local m0, m1, w = self.m[k], self.m[k + 1], h - u
  if order == 0 then
    return (m0 * w ^ 3 + m1 * u ^ 3) / (6 * h) + (v[k] / h - m0 * h / 6) * w + (v[k + 1] / h - m1 * h / 6) * u
  elseif order == 1 then
    return (-m0 * w ^ 2 + m1 * u ^ 2) / (2 * h) - (v[k] / h - m0 * h / 6) + (v[k + 1] / h - m1 * h / 6)
  elseif order == 2 then
    return (m0 * w + m1 * u) / h
  end
  return (m1 - m0) / h
end

-- The highest derivative order that is not zero everywhere.
local function top_order(interp) return interp == "step" and 0 or interp == "linear" and 1 or 3 end

-- The C source of the table's functions (every order up to its top).
function Table:c_source()
  local n, name = #self.t, "salta_in_" .. self.hash
  local function arr(suffix, xs)
    local s = {}
    for i, x in ipairs(xs) do s[i] = string.format("%.17g", x) end
    return ("static const double %s_%s[%d] = {%s};"):format(name, suffix, #xs, table.concat(s, ", "))
  end
  local out = { arr("t", self.t), arr("v", self.v) }
  if self.m then out[#out + 1] = arr("m", self.m) end
  out[#out + 1] = ([[
static int %s_seg(double s) {
  int lo = 0, hi = %d;
  if (!(s >= %s_t[0] && s <= %s_t[hi])) return -1;
  while (hi - lo > 1) { int mid = (lo + hi) / 2; if (%s_t[mid] <= s) lo = mid; else hi = mid; }
  return lo;
}]]):format(name, n - 1, name, name, name)
  for order = 0, top_order(self.interp) do
    local body
    if self.interp == "step" then
      body = ("return s == %s_t[k + 1] ? %s_v[k + 1] : %s_v[k];"):format(name, name, name)
    elseif self.interp == "linear" then
      body = order == 0 and ("return %s_v[k] + (%s_v[k + 1] - %s_v[k]) * (s - %s_t[k]) / (%s_t[k + 1] - %s_t[k]);")
        :format(name, name, name, name, name, name)
        or ("return (%s_v[k + 1] - %s_v[k]) / (%s_t[k + 1] - %s_t[k]);"):format(name, name, name, name)
    else
      local pre = ("const double h = %s_t[k + 1] - %s_t[k], u = s - %s_t[k], w = h - u, m0 = %s_m[k], m1 = %s_m[k + 1], "
        .. "a = %s_v[k] / h - m0 * h / 6, b = %s_v[k + 1] / h - m1 * h / 6; (void)a; (void)b; (void)w; (void)u;")
        :format(name, name, name, name, name, name, name)
      local r = ({
        [0] = "return (m0 * w * w * w + m1 * u * u * u) / (6 * h) + a * w + b * u;",
        [1] = "return (-m0 * w * w + m1 * u * u) / (2 * h) - a + b;",
        [2] = "return (m0 * w + m1 * u) / h;",
        [3] = "return (m1 - m0) / h;",
      })[order]
      body = pre .. " " .. r
    end
    out[#out + 1] = ("static double %s_%d(double s) { const int k = %s_seg(s); if (k < 0) return NAN; %s }")
      :format(name, order, name, body)
  end
  out[#out + 1] = piece.c_source(self)
  return table.concat(out, "\n")
end

-- The unary expression functions of the table (registered once per content).
local registered = {}
local function register(self)
  local name = "salta_in_" .. self.hash
  if registered[name] then return name end
  local top = top_order(self.interp)
  for order = 0, top do
    local op = name .. "_" .. order
    expr.register_unary(op, function(s) return self:at(s, order) end,
      order < top and (name .. "_" .. (order + 1)) or false, op)
  end
  registered[name] = self
  return name
end

-- Reading a table at an argument: an expression (a number for a number).
function Table:read(arg)
  local name = register(self)
  if type(arg) == "number" then return self:at(arg, 0) end
  return expr.unary(name .. "_0", arg)
end

-- The piece of the table from point k on: a step's value, a line's
-- intercept and slope (v = intercept + slope s).
function Table:piece(k)
  local t, v = self.t, self.v
  if self.interp == "step" then return { v[k] } end
  local slope = (v[k + 1] - v[k]) / (t[k + 1] - t[k])
  return { v[k] - slope * t[k], slope, intercept = v[k] - slope * t[k], slope = slope }
end

-- The proxy closures receive as their fifth argument: u.name(arg).
-- uses collects { name, table, arg } for every read (for the range checks
-- and the C source). With held (f, g, h, guards), a read whose argument
-- moves follows its table by a piece index (salta.piece): use.held is
-- the index's hidden state (follow and down: how it moves).
function M.proxy(model_name, inputs, uses, time_var, held)
  local by_name = {}
  for n, tab in pairs(inputs or {}) do
    if type(n) ~= "string" then error(("model '%s': inputs are named by strings"):format(model_name), 0) end
    if not is_table(tab) then
      error(("model '%s': input '%s' must be a salta.table{...}, got %s"):format(model_name, n, type(tab)), 0)
    end
    by_name[n] = function(arg)
      if arg == nil then error(("model '%s': input '%s' needs an argument, e.g. u.%s(t)"):format(model_name, n, n), 2) end
      local e = tab:read(arg)
      if not expr.is_node(e) or not uses then return e end
      local use = { name = n, table = tab, arg = expr.lift(arg) }
      uses[#uses + 1] = use
      if not (held and cond.tracing()) then return e end
      local kind, down = piece.kind(tab, use.arg, time_var, ("model '%s': input '%s'"):format(model_name, n))
      if kind == "direct" then return e end
      local k, rec = cond.hidden("input", tab.hash .. ":" .. use.arg.id,
        { use = use, follow = kind, down = down, value = piece.start(tab, use.arg) })
      use.held = rec
      return piece.value(tab, k, use.arg)
    end
  end
  return setmetatable({}, {
    __index = function(_, k)
      local f = by_name[k]
      if f then return f end
      error(("model '%s': unknown input '%s'"):format(model_name, tostring(k)), 2)
    end,
    __newindex = function(_, k) error(("model '%s': cannot assign to input '%s'"):format(model_name, tostring(k)), 2) end,
  })
end

return M
