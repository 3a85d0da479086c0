-- salta.modelica_expr: Base Modelica expressions (the AST of
-- salta.modelica_parse) into expression nodes, as salta.dae's closures
-- build them: if-expressions become salta.ifelse (a zero-crossing in f
-- and g, chosen where evaluated elsewhere or under noEvent), a Boolean
-- discrete variable is a 0/1 value, and conditions combine with and, or
-- and not by nesting if-expressions.
--
-- A context cx gives:
--   cx.fail(pos, msg)          raises naming the file, line and column
--   cx.lookup(name, pos)       -> "node", node | "cond", tree | "table", read
--   cx.der(name, pos)          -> the node of der(name) (or fails)
--   cx.pre(name, pos)          -> the node of pre(name) (or fails)
--   cx.noevent                 conditions are chosen where evaluated

local expr = require("salta.expr")
local cond = require("salta.cond")

local M = {}

local value, condition

-- A derived context (noEvent inside, a condition being read).
local function with(cx, fields)
  return setmetatable(fields, { __index = cx })
end

-- A constant that folded to NaN or an infinity is an error where written.
local function finite(cx, n, pos)
  if n.op == "const" and (n.value ~= n.value or n.value == math.huge or n.value == -math.huge) then
    cx.fail(pos, ("the constant expression is %s (a division by zero, or a function outside its domain)"):format(
      n.value ~= n.value and "NaN" or tostring(n.value)))
  end
  return n
end

local BINARY = { ["+"] = expr.add, ["-"] = expr.sub, ["*"] = expr.mul, ["/"] = expr.div, ["^"] = expr.pow }

-- Conditions -------------------------------------------------------------------

-- select(tree, a, b): a where the condition holds, else b (nested
-- if-expressions for and, or and not).
local function select(tree, a, b)
  local k = tree.k
  if k == "const" then return tree.v and a or b end
  if k == "not" then return select(tree[1], b, a) end
  if k == "val" then return cond.ifelse(tree.v, a, b) end
  if k == "and" or k == "or" then
    local rest = #tree > 2 and { k = k, table.unpack(tree, 2) } or tree[2]
    if k == "and" then return select(tree[1], select(rest, a, b), b) end
    return select(tree[1], a, select(rest, a, b))
  end
  if k == "eq" then   -- discrete values: equal within a half
    local c = cond.noevent(cond.lt(expr.unary("abs", expr.sub(tree.a, tree.b)), expr.const(0.5)))
    if tree.op == "<>" then a, b = b, a end
    return cond.ifelse(c, a, b)
  end
  -- a comparison: a zero-crossing (salta.ifelse), or chosen where evaluated
  local l, r = tree.a, tree.b
  if l.op == "const" and r.op == "const" then
    local v = ({ ["<"] = l.value < r.value, ["<="] = l.value <= r.value, [">"] = l.value > r.value,
      [">="] = l.value >= r.value })[tree.op]
    return v and a or b
  end
  if tree.noevent then
    -- exactly the node salta.noevent makes of a difference compared with 0
    if tree.op == "<" or tree.op == "<=" then return expr.select_le(l, r, expr.lift(a), expr.lift(b)) end
    return expr.select_le(r, l, expr.lift(a), expr.lift(b))
  end
  local c = ({ ["<"] = cond.lt, ["<="] = cond.le, [">"] = cond.gt, [">="] = cond.ge })[tree.op](l, r)
  return cond.ifelse(c, a, b)
end
M.select = select

-- Whether a node reads only discrete values (parameters, constants and
-- the states that events alone change: the caller's set).
local function discrete_valued(cx, n)
  for v in pairs(expr.deps(n)) do
    if not (v.kind == "p" or (v.kind == "x" and cx.is_discrete and cx.is_discrete(v))) then return false end
  end
  return true
end

local RELATIONS = { ["<"] = true, ["<="] = true, [">"] = true, [">="] = true }

function condition(cx, e)
  local k = e.k
  if k == "bool" then return { k = "const", v = e.v } end
  if k == "not" then return { k = "not", condition(cx, e[1]) } end
  if k == "and" or k == "or" then
    local t = { k = k }
    for i, c in ipairs(e) do t[i] = condition(cx, c) end
    return t
  end
  if k == "rel" then
    local inner = with(cx, { in_condition = true })
    local a, b = value(inner, e[1]), value(inner, e[2])
    if RELATIONS[e.op] then return { k = "cmp", op = e.op, a = a, b = b, noevent = cx.noevent } end
    if not (discrete_valued(cx, a) and discrete_valued(cx, b)) then
      cx.fail(e.pos, ("'%s' compares Real expressions that vary continuously: compare with <, <=, > or >= "
        .. "instead"):format(e.op))
    end
    return { k = "eq", op = e.op, a = a, b = b }
  end
  if k == "name" then
    local kind, v = cx.lookup(e.v, e.pos)
    if kind == "cond" then return v end
    if kind == "node" then
      if v.op == "const" then return { k = "const", v = v.value ~= 0 } end
      return { k = "val", v = v }
    end
    cx.fail(e.pos, ("'%s' is not a Boolean value"):format(e.v))
  end
  if k == "call" and (e.name == "noEvent" or e.name == "smooth") then
    local args = e.args
    return condition(e.name == "noEvent" and with(cx, { noevent = true }) or cx, args[#args])
  end
  if k == "call" and (e.name == "edge" or e.name == "change" or e.name == "initial" or e.name == "terminal"
      or e.name == "sample") then
    cx.fail(e.pos, ("%s(...) is only supported as the condition of a when-equation"):format(e.name))
  end
  if k == "if" or k == "call" then   -- a Boolean value (pre(b), a Boolean if-expression): 0 or 1
    return { k = "val", v = value(cx, e) }
  end
  cx.fail(e.pos, "a condition must be a Boolean expression (a comparison, a Boolean variable, and, or, not)")
end
M.condition = condition

-- Values -------------------------------------------------------------------------

local UNARY = {}
for _, n in ipairs({ "sin", "cos", "tan", "asin", "acos", "atan", "exp", "log", "log10", "sqrt", "abs", "sign",
  "sinh", "cosh", "tanh", "floor", "ceil", "sigmoid" }) do UNARY[n] = n end

local CONSTANTS = { ["Modelica.Constants.pi"] = math.pi, ["Modelica.Constants.e"] = math.exp(1),
  ["Modelica.Constants.eps"] = 2.220446049250313e-16, ["Modelica.Constants.small"] = 1e-60,
  ["Modelica.Constants.inf"] = 1e60 }
M.CONSTANTS = CONSTANTS

local REFUSED = { atan2 = "atan2", integer = "integer()", div = "div()", mod = "mod()", rem = "rem()",
  delay = "delay()", spatialDistribution = "spatialDistribution()", cardinality = "cardinality()",
  ["String"] = "String()", ndims = "arrays", size = "arrays", fill = "arrays", zeros = "arrays",
  ones = "arrays", sum = "arrays", product = "arrays", cross = "arrays", transpose = "arrays",
  sample = "sample() (clocked and sampled constructs)" }

local function arity(cx, e, n)
  if #e.args ~= n then
    cx.fail(e.pos, ("function '%s' takes %d argument%s, got %d"):format(e.name, n, n == 1 and "" or "s", #e.args))
  end
  for _, a in ipairs(e.args) do
    if a.k == "named" then cx.fail(a.pos, ("function '%s' takes positional arguments"):format(e.name)) end
  end
end

local function name_arg(cx, e)
  arity(cx, e, 1)
  local a = e.args[1]
  if a.k ~= "name" then cx.fail(a.pos, ("%s(...) applies to a variable"):format(e.name)) end
  return a.v, a.pos
end

-- homotopy(actual = a, simplified = s): the actual expression.
local function homotopy(cx, e)
  for _, a in ipairs(e.args) do
    if a.k == "named" and a.name == "actual" then return value(cx, a.value) end
  end
  local a = e.args[1]
  if not a or a.k == "named" then cx.fail(e.pos, "homotopy(...) needs its actual argument") end
  return value(cx, a)
end

local function call(cx, e)
  local fname = e.name:gsub("^Modelica%.Math%.", "")
  if fname == "der" then
    if cx.in_condition then cx.fail(e.pos, "der(...) in a condition is not supported") end
    return cx.der(name_arg(cx, e))
  end
  if fname == "pre" then return cx.pre(name_arg(cx, e)) end
  if fname == "noEvent" then
    arity(cx, e, 1)
    return value(with(cx, { noevent = true }), e.args[1])
  end
  if fname == "smooth" then arity(cx, e, 2); return value(cx, e.args[2]) end
  if fname == "homotopy" then return homotopy(cx, e) end
  if fname == "edge" or fname == "change" or fname == "initial" or fname == "terminal" then
    cx.fail(e.pos, ("%s(...) is only supported as the condition of a when-equation"):format(fname))
  end
  local kind, read = cx.lookup(e.name, e.pos, true)
  if kind == "table" then arity(cx, e, 1); return read(value(cx, e.args[1])) end
  if UNARY[fname] then
    arity(cx, e, 1)
    return finite(cx, expr.unary(UNARY[fname], value(cx, e.args[1])), e.pos)
  end
  if fname == "min" or fname == "max" then
    arity(cx, e, 2)
    return finite(cx, expr[fname](value(cx, e.args[1]), value(cx, e.args[2])), e.pos)
  end
  if REFUSED[fname] then cx.fail(e.pos, ("%s is not supported"):format(REFUSED[fname])) end
  cx.fail(e.pos, ("function '%s' is not supported (doc/modelica.md lists the built-in functions salta "
    .. "reads)"):format(e.name))
end

function value(cx, e)
  local k = e.k
  if k == "num" then return expr.const(e.v + 0.0) end
  if k == "bool" then return e.v and expr.ONE or expr.ZERO end
  if k == "name" then
    if CONSTANTS[e.v] then return expr.const(CONSTANTS[e.v]) end
    local kind, v = cx.lookup(e.v, e.pos)
    if kind == "cond" then return select(v, expr.ONE, expr.ZERO) end
    if kind ~= "node" then cx.fail(e.pos, ("'%s' is not a value"):format(e.v)) end
    return v
  end
  if k == "bin" then return finite(cx, BINARY[e.op](value(cx, e[1]), value(cx, e[2])), e.pos) end
  if k == "neg" then return expr.neg(value(cx, e[1])) end
  if k == "if" then
    local n = #e
    local acc = value(cx, e[n])
    for i = n - 2, 1, -2 do acc = select(condition(cx, e[i]), value(cx, e[i + 1]), acc) end
    return expr.lift(acc)
  end
  if k == "rel" or k == "and" or k == "or" or k == "not" then
    return expr.lift(select(condition(cx, e), expr.ONE, expr.ZERO))
  end
  if k == "call" then return call(cx, e) end
  if k == "str" then cx.fail(e.pos, "a string is not a number") end
  if k == "array" then cx.fail(e.pos, "an array is not supported") end
  cx.fail(e.pos, "unexpected " .. tostring(k))
end
M.value = value

-- Literal evaluation (attributes, annotations): a number, a Boolean or a
-- string, or nil when the expression reads anything else.
function M.literal(e)
  if e.k == "num" or e.k == "bool" or e.k == "str" then return e.v end
  if e.k == "neg" then
    local v = M.literal(e[1])
    return type(v) == "number" and -v or nil
  end
  if e.k == "name" and CONSTANTS[e.v] then return CONSTANTS[e.v] end
  return nil
end

-- The names an expression reads (der(x) reads x; a call's name is not read).
function M.names(e, out)
  out = out or {}
  if type(e) ~= "table" then return out end
  if e.k == "name" then out[e.v] = out[e.v] or e.pos end
  for _, c in ipairs(e) do M.names(c, out) end
  if e.k == "call" then for _, a in ipairs(e.args) do M.names(a.k == "named" and a.value or a, out) end end
  if e.k == "array" then for _, a in ipairs(e.items) do M.names(a, out) end end
  return out
end

return M
