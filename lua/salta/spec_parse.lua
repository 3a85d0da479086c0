-- salta.spec_parse: the expression parser of spec files (salta.spec):
-- equations in flat-Modelica/Python syntax straight into expression nodes
-- (no eval), with errors naming the model, the field, the column and the
-- equation's text. The grammar is in doc/spec_format.md.

local expr = require("salta.expr")
local cond = require("salta.cond")

local M = {}

-- Errors -------------------------------------------------------------------------

-- ctx = { model = name, label = "g[2]", src = equation text }
local function fail(ctx, msg, col)
  local parts = {}
  if ctx.model then parts[#parts + 1] = ("model '%s': "):format(ctx.model) end
  if ctx.label then parts[#parts + 1] = ctx.label .. ": " end
  parts[#parts + 1] = msg
  if col then parts[#parts + 1] = " at column " .. col end
  if ctx.src then parts[#parts + 1] = ' in "' .. ctx.src .. '"' end
  error(table.concat(parts), 0)
end

-- Tokens ---------------------------------------------------------------------------

-- Longest first, so "**" and "<=" are not split.
local OPERATORS = { "**", "<=", ">=", "==", "+", "-", "*", "/", "^", "(", ")", ",", "=", "<", ">" }

local function number_at(src, i)
  local text = src:match("^%d+%.?%d*", i) or src:match("^%.%d+", i)
  if not text then return nil end
  local exponent = src:match("^[eE][+-]?%d+", i + #text)
  return text .. (exponent or "")
end

local function operator_at(src, i)
  for _, op in ipairs(OPERATORS) do
    if src:sub(i, i + #op - 1) == op then return op end
  end
end

-- tokens: { k = "num"|"name"|"op"|"eof", v = value, text = source, col = column }
local function tokenize(src, ctx)
  local toks, i = {}, 1
  while true do
    i = src:find("%S", i)
    if not i then break end
    local num = number_at(src, i)
    local name = not num and src:match("^[%a_][%w_]*", i)
    local op = not num and not name and operator_at(src, i)
    local text = num or name or op
    if not text then
      fail(ctx, ("syntax error: unexpected character '%s'"):format(src:sub(i, i)), i)
    end
    local kind = num and "num" or (name and "name" or "op")
    toks[#toks + 1] = { k = kind, v = num and tonumber(text) or text, text = text, col = i }
    i = i + #text
  end
  toks[#toks + 1] = { k = "eof", text = "end of equation", col = #src + 1 }
  return toks
end

-- Parser ---------------------------------------------------------------------------

local Parser = {}
Parser.__index = Parser

-- env maps a name to a node, or to a string: the error message its use raises.
-- prev_env is the environment inside prev(...); nil where prev is not allowed.
local function new_parser(src, ctx, env, prev_env)
  ctx.src = src
  return setmetatable({ toks = tokenize(src, ctx), pos = 1, ctx = ctx, env = env,
    prev_env = prev_env, in_prev = 0 }, Parser)
end

function Parser:peek() return self.toks[self.pos] end

function Parser:next()
  local t = self.toks[self.pos]
  if t.k ~= "eof" then self.pos = self.pos + 1 end
  return t
end

function Parser:fail(msg, tok) fail(self.ctx, msg, tok and tok.col) end

function Parser:unexpected(tok, expected)
  local what = tok.k == "eof" and "end of equation" or ("'" .. tok.text .. "'")
  local hint = expected and (" (expected " .. expected .. ")") or ""
  self:fail("syntax error: unexpected " .. what .. hint, tok)
end

function Parser:is(v)
  local t = self:peek()
  return t.k == "op" and t.v == v
end

function Parser:expect(v)
  local t = self:next()
  if not (t.k == "op" and t.v == v) then self:unexpected(t, "'" .. v .. "'") end
  return t
end

function Parser:expect_name()
  local t = self:next()
  if t.k ~= "name" then self:unexpected(t, "a name") end
  return t
end

function Parser:finish()
  local t = self:peek()
  if t.k ~= "eof" then self:unexpected(t) end
end

-- Binding powers: power binds tighter than unary minus (-x^2 = -(x^2)),
-- which binds tighter than * and /.
local UNARY_BP = 30
local BINARY = {
  ["+"] = { bp = 10, fn = expr.add }, ["-"] = { bp = 10, fn = expr.sub },
  ["*"] = { bp = 20, fn = expr.mul }, ["/"] = { bp = 20, fn = expr.div },
  ["^"] = { bp = 40, fn = expr.pow, right = true }, ["**"] = { bp = 40, fn = expr.pow, right = true },
}

-- A constant that folded to NaN or an infinity (0/0, log(0)) is an error
-- where it was written, never a value the model silently carries.
function Parser:finite(n, tok)
  if n.op == "const" and (n.value ~= n.value or n.value == math.huge or n.value == -math.huge) then
    self:fail(("the constant expression is %s (a division by zero, or a function outside its domain)"):format(
      n.value ~= n.value and "NaN" or tostring(n.value)), tok)
  end
  return n
end

function Parser:expression(rbp)
  local left = self:prefix()
  while true do
    local t = self:peek()
    local op = t.k == "op" and BINARY[t.v]
    if not op or op.bp <= rbp then return left end
    self:next()
    left = self:finite(op.fn(left, self:expression(op.right and op.bp - 1 or op.bp)), t)
  end
end

function Parser:prefix()
  local t = self:next()
  if t.k == "num" then return expr.const(t.v + 0.0) end
  if t.k == "name" then
    if t.v == "if" then return self:if_expression() end
    if t.v == "true" or t.v == "false" then return expr.const(t.v == "true" and 1 or 0) end
    if self:is("(") then return self:call(t) end
    return self:resolve(t)
  end
  if t.k == "op" and t.v == "-" then return expr.neg(self:expression(UNARY_BP)) end
  if t.k == "op" and t.v == "+" then return self:expression(UNARY_BP) end
  if t.k == "op" and t.v == "(" then
    local e = self:expression(0)
    self:expect(")")
    return e
  end
  self:unexpected(t)
end

function Parser:resolve(t)
  local env = self.in_prev > 0 and self.prev_env or self.env
  local v = env[t.v]
  if type(v) == "string" then self:fail(v, t) end
  if type(v) == "function" then return v() end   -- an input table alone: read at time
  if v == nil then self:fail(("unknown name '%s'"):format(t.v), t) end
  return v
end

local BINARY_FUNCS = { pow = expr.pow, min = expr.min, max = expr.max }

function Parser:arguments()
  self:expect("(")
  local args = {}
  if self:is(")") then self:next(); return args end
  repeat
    args[#args + 1] = self:expression(0)
  until not (self:is(",") and self:next())
  self:expect(")")
  return args
end

local function arity_check(p, t, args, n)
  if #args ~= n then
    p:fail(("function '%s' takes %d argument%s, got %d"):format(t.v, n, n == 1 and "" or "s", #args), t)
  end
end

function Parser:call(t)
  local name = t.v
  if name == "prev" or name == "pre" then
    if not self.prev_env and name == "pre" then   -- Modelica's pre outside a when: the value now
      local args = self:arguments()
      arity_check(self, t, args, 1)
      return args[1]
    end
    return self:prev(t)
  end
  local read = self.env[name]
  if type(read) == "function" then   -- an input table, read at its argument
    local args = self:arguments()
    arity_check(self, t, args, 1)
    return read(args[1])
  end
  if name == "der" then self:fail("der(...) is only allowed on the left of an f equation", t) end
  local unary, binary = expr.unary_num[name], BINARY_FUNCS[name]
  if not unary and not binary then self:fail(("unknown function '%s'"):format(name), t) end
  local args = self:arguments()
  if unary then
    arity_check(self, t, args, 1)
    return self:finite(expr.unary(name, args[1]), t)
  end
  arity_check(self, t, args, 2)
  return self:finite(binary(args[1], args[2]), t)
end

-- prev(e): e with every name meaning its pre-event value.
function Parser:prev(t)
  if not self.prev_env then self:fail("prev(...) is only allowed in reinit equations", t) end
  self:expect("(")
  self.in_prev = self.in_prev + 1
  local e = self:expression(0)
  self.in_prev = self.in_prev - 1
  self:expect(")")
  return e
end

-- lhs = rhs, both expressions.
function Parser:equation()
  local lhs = self:expression(0)
  self:expect("=")
  local rhs = self:expression(0)
  self:finish()
  return lhs, rhs
end

local COMPARE = { ["<"] = -1, ["<="] = -1, [">"] = 1, [">="] = 1 }
local COND_OF = { ["<"] = "lt", ["<="] = "le", [">"] = "gt", [">="] = "ge" }

function Parser:expect_word(w)
  local t = self:next()
  if not (t.k == "name" and t.v == w) then self:unexpected(t, "'" .. w .. "'") end
end

-- A condition of an if-expression: a comparison, noEvent(comparison), a
-- discrete boolean (or not one), true or false.
function Parser:if_condition()
  local t = self:peek()
  if t.k == "name" and (t.v == "noEvent" or t.v == "noevent") then
    self:next()
    self:expect("(")
    local c = self:if_condition()
    self:expect(")")
    return cond.noevent(c)
  end
  if t.k == "name" and t.v == "not" then
    self:next()
    local c = self:if_condition()
    if cond.is_cond(c) then self:fail("'not' applies to a discrete boolean here; flip the comparison instead", t) end
    return expr.sub(expr.ONE, c)
  end
  local lhs = self:expression(0)
  local op = self:peek()
  if op.k == "op" and COND_OF[op.v] then
    self:next()
    return cond[COND_OF[op.v]](lhs, self:expression(0))
  end
  return lhs   -- a 0/1 value: a discrete boolean
end

-- if c then a [elseif c2 then b ...] else e, as Modelica's if-expression:
-- in f and g a comparison switches at its zero-crossing (salta.ifelse).
function Parser:if_expression()
  local c = self:if_condition()
  self:expect_word("then")
  local a = self:expression(0)
  local t = self:next()
  if t.k == "name" and t.v == "elseif" then return cond.ifelse(c, a, self:if_expression()) end
  if not (t.k == "name" and t.v == "else") then self:unexpected(t, "'else' or 'elseif'") end
  return cond.ifelse(c, a, self:expression(0))
end

-- lhs OP rhs -> guard lhs - rhs, direction (the condition becomes true as
-- the guard falls through 0 for < and <=, rises through 0 for > and >=).
function Parser:condition()
  local lhs = self:expression(0)
  local t = self:next()
  local dir = t.k == "op" and COMPARE[t.v]
  if not dir then self:unexpected(t, "one of <, <=, >, >=") end
  local rhs = self:expression(0)
  self:finish()
  return expr.sub(lhs, rhs), dir
end

-- Public: parse one expression. env: name -> node; context: a label string
-- or { model =, label = }.
function M.expression(str, env, context)
  local ctx = type(context) == "table" and { model = context.model, label = context.label }
    or { label = context }
  local p = new_parser(str, ctx, env or {}, context and type(context) == "table" and context.prev_env)
  local e = p:expression(0)
  p:finish()
  return e
end

M.fail = fail
M.new = new_parser

return M
