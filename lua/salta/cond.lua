-- salta.cond: conditions in model equations (salta.lt/le/gt/ge,
-- salta.ifelse, salta.noevent), as Modelica's if-expressions.
--
-- A comparison of expressions is a condition. salta.ifelse(c, a, b) in f or
-- g makes it a zero-crossing: a hidden mode (a discrete state, 1 while the
-- condition holds) selects the branch, and a hidden event on the
-- comparison's difference flips it, so the integrator stops there and the
-- equations switch branch; Jacobians and sensitivities follow the active
-- branch. The engine sets each mode from its guard at the start. In
-- outputs, guards and resets, or under salta.noevent, the branch is chosen
-- where the expression is evaluated, without an event.

local expr = require("salta.expr")

local M = {}

local Cond = {}
Cond.__index = Cond
Cond.__name = "salta.condition"

local function is_cond(v) return getmetatable(v) == Cond end
M.is_cond = is_cond

-- The comparison as "g < 0" (le, ge: g <= 0; ties are a single instant).
local FLIP = { lt = false, le = false, gt = true, ge = true }
-- As written, and its negation (the names of its events).
local SYMBOL = { lt = "<", le = "<=", gt = ">", ge = ">=" }
local NEGATION = { lt = "ge", le = "gt", gt = "le", ge = "lt" }

local function compare(op, a, b)
  if type(a) == "number" and type(b) == "number" then
    if op == "lt" then return a < b elseif op == "le" then return a <= b
    elseif op == "gt" then return a > b else return a >= b end
  end
  if not (type(a) == "number" or expr.is_node(a)) or not (type(b) == "number" or expr.is_node(b)) then
    error(("salta.%s: compares numbers or expressions, got %s and %s"):format(op, type(a), type(b)), 3)
  end
  local g = FLIP[op] and expr.lift(b) - expr.lift(a) or expr.lift(a) - expr.lift(b)
  return setmetatable({ op = op, g = g, event = true, a = a, b = b }, Cond)
end

-- A comparison's text, e.g. "v < 0" (negated: "v >= 0"), at most 40
-- characters.
local function shortest(num)
  local v = tonumber(num)
  for digits = 15, 16 do
    local s = ("%." .. digits .. "g"):format(v)
    if tonumber(s) == v then return s end
  end
  return num
end

local function text(c, negated)
  local function show(v)
    -- numbers in the fewest digits that read back (0.3, not 0.29999999999999999)
    local s = type(v) == "number" and shortest(v) or expr.show(v):gsub("%d+%.%d+", shortest)
    if (utf8.len(s) or 0) > 18 then s = s:sub(1, utf8.offset(s, 16) - 1) .. "..." end
    return s
  end
  return ("%s %s %s"):format(show(c.a), SYMBOL[negated and NEGATION[c.op] or c.op], show(c.b))
end

for op in pairs(FLIP) do
  M[op] = function(a, b) return compare(op, a, b) end
end

-- noevent(c): the same condition, chosen where evaluated (no zero-crossing).
function M.noevent(c)
  if type(c) == "boolean" then return c end
  if not is_cond(c) then
    error(("salta.noevent: expects a condition (salta.lt, ...), got %s"):format(type(c)), 2)
  end
  return setmetatable({ op = c.op, g = c.g, event = false, a = c.a, b = c.b }, Cond)
end

-- The model being traced: where f and g create hidden states (the modes
-- of if-expressions; f, g, h and guards the piece indices of input
-- tables); nil outside, where conditions need no event.
local active

-- begin(model_name, first_index): the hidden states created until finish()
-- are states first_index, first_index + 1, ...; if-expressions are
-- zero-crossings until modes_off().
function M.begin(model_name, first_index)
  active = { name = model_name, next = first_index, hidden = {}, by_key = {}, modes = true }
end

-- After f and g: conditions are chosen where evaluated (h, guards), while
-- input reads still create hidden states.
function M.modes_off() active.modes = false end

-- finish(): the hidden states created, in order: { name, var, kind, ... }.
function M.finish()
  local a = active
  active = nil
  return a and a.hidden or {}
end

function M.tracing() return active ~= nil end

-- hidden(kind, key, fields): the hidden state for key (one per key),
-- named "_<kind><k>", with fields kept for the model to complete it: its
-- variable and its record.
function M.hidden(kind, key, fields)
  local h = active.by_key[key]
  if h then return h.var, h end
  local k = #active.hidden + 1
  h = fields or {}
  h.kind, h.name = kind, "_" .. kind .. k
  h.var = expr.var("x", active.next, h.name)
  active.next = active.next + 1
  active.hidden[k] = h
  active.by_key[key] = h
  return h.var, h
end

-- The mode of condition c; label: the name its events take (nil: its
-- comparison's). One condition, one label.
local function mode_of(c, label)
  local _, h = M.hidden("mode", c.g, { guard = c.g, text = text(c), negation = text(c, true),
    compare = { SYMBOL[c.op], expr.lift(c.a), expr.lift(c.b) } })
  if label and h.label and h.label ~= label then
    error(("salta.ifelse: the condition %s is named both '%s' and '%s'"):format(h.text, h.label, label), 3)
  end
  h.label = h.label or label
  return h.var
end

-- ifelse(c, a, b [, {name = "stall"}]): a where the condition holds, else
-- b. A condition that makes a zero-crossing makes two events, named after
-- the condition (name, or the comparison as written: "v < 0"), which
-- fires when it becomes true, and after its negation ("not stall",
-- "v >= 0"), which fires when it becomes false.
function M.ifelse(c, a, b, opts)
  local label = type(opts) == "table" and opts.name or nil
  if opts ~= nil and (type(label) ~= "string" or label == "") then
    error(("salta.ifelse: the fourth argument is { name = \"...\" }, a non-empty name for the condition's events, "
      .. "got %s"):format(type(opts) == "table" and tostring(opts.name) or type(opts)), 2)
  end
  if type(c) == "boolean" then return c and a or b end
  if expr.is_node(c) then   -- a discrete 0/1 value
    return c * a + (1 - c) * b
  end
  if not is_cond(c) then
    error(("salta.ifelse: the condition must be a comparison (salta.lt, salta.ge, ...), a discrete 0/1 value "
      .. "or a boolean, got %s"):format(type(c)), 2)
  end
  if c.event and active and active.modes then
    local m = mode_of(c, label)
    return m * a + (1 - m) * b
  end
  return expr.select_le(c.g, expr.ZERO, expr.lift(a), expr.lift(b))
end

return M
