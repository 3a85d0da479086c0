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

local function compare(op, a, b)
  if type(a) == "number" and type(b) == "number" then
    if op == "lt" then return a < b elseif op == "le" then return a <= b
    elseif op == "gt" then return a > b else return a >= b end
  end
  if not (type(a) == "number" or expr.is_node(a)) or not (type(b) == "number" or expr.is_node(b)) then
    error(("salta.%s: compares numbers or expressions, got %s and %s"):format(op, type(a), type(b)), 3)
  end
  local g = FLIP[op] and expr.lift(b) - expr.lift(a) or expr.lift(a) - expr.lift(b)
  return setmetatable({ op = op, g = g, event = true }, Cond)
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
  return setmetatable({ op = c.op, g = c.g, event = false }, Cond)
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

local function mode_of(g)
  return (M.hidden("mode", g, { guard = g }))
end

-- ifelse(c, a, b): a where the condition holds, else b.
function M.ifelse(c, a, b)
  if type(c) == "boolean" then return c and a or b end
  if expr.is_node(c) then   -- a discrete 0/1 value
    return c * a + (1 - c) * b
  end
  if not is_cond(c) then
    error(("salta.ifelse: the condition must be a comparison (salta.lt, salta.ge, ...), a discrete 0/1 value "
      .. "or a boolean, got %s"):format(type(c)), 2)
  end
  if c.event and active and active.modes then
    local m = mode_of(c.g)
    return m * a + (1 - m) * b
  end
  return expr.select_le(c.g, expr.ZERO, expr.lift(a), expr.lift(b))
end

return M
