-- salta.piece: a table read followed piece by piece.
--
-- A step, linear or cubic table read in f, g, h or a guard at an argument
-- that moves is held in a hidden state: the index k of the piece (0-based)
-- holding the argument. The read becomes an O(1) lookup of k (a step's
-- value; a line or a cubic around its first point), and ONE event per
-- direction the argument may move moves k: up where the argument reaches
-- the piece's end, down where it falls below its start. These are input
-- breakpoints (SALTA_EVENT_BREAKPOINT), hidden from tr:events(). So n rows
-- cost O(n) along a run, and the generated C is the table's arrays plus
-- O(1) per read.
--
-- Two kinds of read:
--   "along"   an argument affine in t, of t and the parameters alone
--             (t - delay, k t): the engine checks its range over [t0, tf]
--             first, so its first and last pieces never end (their
--             thresholds lie beyond the table); k := k + 1 or k - 1;
--   "runtime" any other moving argument (a state's, a nonlinear function
--             of t): k := the piece holding the argument (a binary
--             search), at least one on, so that after a reset of the
--             model's that moves it across many pieces one round of event
--             iteration finds its piece; leaving the table sets k to NaN,
--             an error the model explains naming the input, the time and
--             the table's end.
-- The engine starts a piece index with a down event on the side its
-- argument heads to where the argument starts on a breakpoint (x_mode
-- below -1, salta_kernel.h).

local expr = require("salta.expr")

local M = {}

-- The functions of the index emitted per table (C name suffixes); every
-- lookup's derivative is the zero function pz, so that guards and f keep
-- the index in their sparsity patterns (a guard probed alone has every
-- state it reads interpolated).
local function c_functions(tab)
  local t, n = tab.t, #tab.t
  local span = t[n] - t[1]
  local beyond, before = t[n] + math.max(1, span), t[1] - math.max(1, span)
  if beyond == math.huge then beyond = 1.7976931348623157e308 end
  if before == -math.huge then before = -1.7976931348623157e308 end
  local last = tab.interp == "linear" and n - 2 or n - 1   -- the last piece along t
  local function fmt(x) return ("%.17g"):format(x) end
  local idx = function(hi) return ("if (!(k >= 0 && k <= %d)) return NAN; const int i = (int)k;"):format(hi) end
  local out = {
    pz = "(void)k; return 0.0;",
    pv = idx(n - 1) .. " return V[i];",
    pt = idx(n - 1) .. " return T[i];",
    pend = idx(last) .. (" return i < %d ? T[i + 1] : %s;"):format(last, fmt(beyond)),
    pstart = idx(last) .. (" return i > 0 ? T[i] : %s;"):format(fmt(before)),
  }
  if tab.interp == "linear" then
    out.pb = idx(n - 2) .. " return (V[i + 1] - V[i]) / (T[i + 1] - T[i]);"
  elseif tab.interp == "cubic" then
    local h = "const double h = T[i + 1] - T[i];"
    out.pc1 = idx(n - 2) .. h .. " return (V[i + 1] - V[i]) / h - h * (2 * M[i] + M[i + 1]) / 6;"
    out.pc2 = idx(n - 2) .. " return 0.5 * M[i];"
    out.pc3 = idx(n - 2) .. h .. " return (M[i + 1] - M[i]) / (6 * h);"
  end
  return out, { beyond = beyond, before = before, last = last }
end

-- The same functions in Lua (constant folding, start values).
local function lua_functions(tab, ends)
  local t, v, m, n = tab.t, tab.v, tab.m, #tab.t
  local function at(hi, fn)
    return function(k)
      if not (k >= 0 and k <= hi) then return 0 / 0 end
      return fn(math.floor(k) + 1, k)
    end
  end
  local out = {
    pz = function() return 0.0 end,
    pv = at(n - 1, function(i) return v[i] end),
    pt = at(n - 1, function(i) return t[i] end),
    pend = at(ends.last, function(i) return i <= ends.last and t[i + 1] or ends.beyond end),
    pstart = at(ends.last, function(i) return i > 1 and t[i] or ends.before end),
    pb = at(n - 2, function(i) return (v[i + 1] - v[i]) / (t[i + 1] - t[i]) end),
  }
  if tab.interp == "cubic" then
    out.pc1 = at(n - 2, function(i)
      local h = t[i + 1] - t[i]
      return (v[i + 1] - v[i]) / h - h * (2 * m[i] + m[i + 1]) / 6
    end)
    out.pc2 = at(n - 2, function(i) return 0.5 * m[i] end)
    out.pc3 = at(n - 2, function(i) return (m[i + 1] - m[i]) / (6 * (t[i + 1] - t[i])) end)
  end
  return out
end

-- The segment k (0-based) with t[k] <= s < t[k + 1], for s in the table.
local function segment(t, s)
  local lo, hi = 1, #t
  while hi - lo > 1 do
    local mid = (lo + hi) // 2
    if t[mid] <= s then lo = mid else hi = mid end
  end
  return lo - 1.0
end

-- The pieces holding an argument's value, 0-based, NaN outside the table:
-- "piece" right-continuous (a start; a step table's last point is a piece
-- of its own), "pup" for an argument rising through it (NaN from the
-- table's end on) and "pdown" for one falling through it (NaN from its
-- start down).
local ARG_FUNCTIONS = {
  piece = function(tab, s)
    local t, n = tab.t, #tab.t
    if not (s >= t[1] and s <= t[n]) then return 0 / 0 end
    if s == t[n] then return tab.interp == "step" and n - 1.0 or n - 2.0 end
    return segment(t, s)
  end,
  pup = function(tab, s)
    local t = tab.t
    if not (s >= t[1] and s < t[#t]) then return 0 / 0 end
    return segment(t, s)
  end,
  pdown = function(tab, s)
    local t = tab.t
    if not (s > t[1] and s <= t[#t]) then return 0 / 0 end
    local k = segment(t, s)
    return s == t[k + 1] and k - 1 or k
  end,
}

local function arg_c_source(tab, name)
  local n, last = #tab.t, tab.interp == "step" and #tab.t - 1 or #tab.t - 2
  local T = name .. "_t"
  return {
    ("static double %s_piece(double s) { if (!(s >= %s[0] && s <= %s[%d])) return NAN; "
      .. "if (s == %s[%d]) return %d; return %s_seg(s); }"):format(name, T, T, n - 1, T, n - 1, last, name),
    ("static double %s_pup(double s) { if (!(s >= %s[0] && s < %s[%d])) return NAN; return %s_seg(s); }")
      :format(name, T, T, n - 1, name),
    ("static double %s_pdown(double s) { if (!(s > %s[0] && s <= %s[%d])) return NAN; "
      .. "const int k = %s_seg(s); return s == %s[k] ? k - 1 : k; }"):format(name, T, T, n - 1, name, T),
  }
end

-- The C source of a table's piece functions (the arrays are the table's).
function M.c_source(tab)
  local name = "salta_in_" .. tab.hash
  local fns = c_functions(tab)
  local names = {}
  for suffix in pairs(fns) do names[#names + 1] = suffix end
  table.sort(names)
  local out = arg_c_source(tab, name)
  for _, suffix in ipairs(names) do
    local body = fns[suffix]:gsub("%f[%w_]([TVM])%[", function(a)
      return ("%s_%s["):format(name, a:lower())
    end)
    out[#out + 1] = ("static double %s_%s(double k) { %s }"):format(name, suffix, body)
  end
  return table.concat(out, "\n")
end

-- The unary expression functions of a table's pieces (registered once
-- per content): ops[suffix] is the op's name.
local registered = {}
local function ops_of(tab)
  local name = "salta_in_" .. tab.hash
  local ops = registered[name]
  if ops then return ops end
  local emitted, ends = c_functions(tab)
  ops = {}
  local zero = name .. "_pz"
  for suffix, fn in pairs(lua_functions(tab, ends)) do
    if emitted[suffix] then
      local op = name .. "_" .. suffix
      expr.register_unary(op, fn, suffix ~= "pz" and zero or false, op)
      ops[suffix] = op
    end
  end
  for suffix, fn in pairs(ARG_FUNCTIONS) do
    local op = name .. "_" .. suffix
    expr.register_unary(op, function(s) return fn(tab, s) end, false, op)
    ops[suffix] = op
  end
  registered[name] = ops
  return ops
end

local function call(tab, suffix, a) return expr.unary(ops_of(tab)[suffix], a) end

-- How a read of tab at arg follows it (T: the time variable): "direct"
-- (evaluated where it is: an argument that does not move, or a cubic
-- table along t, smooth), "along" or "runtime" (see the header); and
-- whether the argument may decrease. An argument reading an algebraic
-- variable is refused (its piece could not be set at the start).
function M.kind(tab, arg, T, what)
  local moves, state = false, false
  for v in pairs(expr.deps(arg)) do
    if v.kind == "z" then
      error(("%s is read at %s, which reads algebraic variable '%s': an input's argument may read t, the "
        .. "states and the parameters"):format(what, expr.show(arg), v.name), 0)
    end
    moves = moves or v == T or v.kind == "x"
    state = state or v.kind == "x"
  end
  if not moves then return "direct" end
  local rate = expr.diff(arg, T)
  if state or expr.deps(rate)[T] then return "runtime", true end
  if tab.interp == "cubic" then return "direct" end
  return "along", not (rate.op == "const" and rate.value > 0)
end

-- The read's value at piece k (an index variable).
function M.value(tab, k, arg)
  if tab.interp == "step" then return call(tab, "pv", k) end
  local u = arg - call(tab, "pt", k)
  if tab.interp == "linear" then return call(tab, "pv", k) + call(tab, "pb", k) * u end
  return call(tab, "pv", k) + u * (call(tab, "pc1", k) + u * (call(tab, "pc2", k) + u * call(tab, "pc3", k)))
end

-- The piece holding an argument's value (a start value, a reset).
function M.start(tab, arg) return call(tab, "piece", arg) end

-- The events of a read: { {guard, dir, reset} } (up, then down where the
-- argument may decrease), on index k.
function M.events(tab, k, arg, kind, down)
  local list
  if kind == "along" then
    list = { { arg - call(tab, "pend", k), 1, k + 1 } }
    if down then list[2] = { arg - call(tab, "pstart", k), -1, k - 1 } end
  else
    -- at least one piece on (a re-solved discrete trajectory may find
    -- the argument a rounding short of the breakpoint), NaN outside
    local up, down = call(tab, "pup", arg), call(tab, "pdown", arg)
    list = { { arg - call(tab, "pt", k + 1), 1, expr.select_le(up, k + 1, k + 1, up) },
      { arg - call(tab, "pt", k), -1, expr.select_le(k - 1, down, k - 1, down) } }
  end
  return list
end

-- The table's abscissa a piece event crossed: from piece k, up or down.
function M.crossed(tab, k, dir)
  return tab.t[math.floor(k) + (dir > 0 and 2 or 1)]
end

return M
