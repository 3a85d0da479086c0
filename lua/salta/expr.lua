-- salta.expr: the symbolic expression DAG.
--
-- Nodes are hash-consed (one table per distinct expression), so structural
-- equality is identity and common subexpressions are shared by construction.
-- Construction simplifies locally: constant folding, neutral and absorbing
-- elements, double negation, canonical operand order for + and *.

local M = {}

local Sym = {}          -- metatable of every node
Sym.__name = "salta.expr"

local intern = setmetatable({}, { __mode = "v" })
local next_id = 0

local function is_node(v) return getmetatable(v) == Sym end
M.is_node = is_node

-- The operands of +, *, min and max are put in a canonical order, so that
-- a + b and b + a are one node. The order must follow what the operands
-- are, never when they were made: ids follow the history of the process
-- (what was built before, when the collector freed an interned node), and
-- the generated C (and so the JIT cache key) follows the operand order.
-- Each node carries rank, its first leaf (kind, then index; 0 for
-- constants, so they come first, and sums read in declaration order), and
-- sh, a 60-bit digest of its structure; ids only break ties of both (two
-- nodes of one structure do not exist at once).
local KIND_RANK = { t = 1, x = 2, z = 3, p = 4, u = 5 }

local digest = require("salta.core").hash   -- the engine's BLAKE2b (salta_hash), in hex

-- The first 60 bits of the digest of s, as an integer.
local function str_hash(s) return tonumber(digest(s):sub(1, 15), 16) end

local op_hash = setmetatable({}, { __index = function(t, op)
  local h = str_hash(op)
  t[op] = h
  return h
end })

local pack = string.pack

local function order_keys(node)
  local op = node.op
  if op == "const" then
    node.rank, node.sh = 0, string.unpack("<i8", string.pack("<d", node.value))
  elseif op == "var" then
    -- an implicit unknown's index counts the unknowns made so far in the
    -- process: its name alone identifies it
    local u = node.kind == "u"
    node.rank = ((KIND_RANK[node.kind] or 9) << 40) | (u and 0 or node.index)
    node.sh = str_hash(node.kind .. ":" .. (u and "" or node.index) .. ":" .. (node.name or ""))
  else
    -- the digest of the operator's and the operands' digests
    local rank, keys = math.maxinteger, { pack("<i8", op_hash[op]) }
    for i = 1, #node do
      local c = node[i]
      if c.op ~= "const" and c.rank < rank then rank = c.rank end
      keys[i + 1] = pack("<i8", c.sh)
    end
    node.rank, node.sh = rank == math.maxinteger and 0 or rank, str_hash(table.concat(keys))
  end
end

-- Whether a comes before b in the canonical operand order.
local function before(a, b)
  if a.rank ~= b.rank then return a.rank < b.rank end
  if a.sh ~= b.sh then return a.sh < b.sh end
  return a.id < b.id
end
M.before = before

local function make(key, node)
  local old = intern[key]
  if old then return old end
  next_id = next_id + 1
  node.id = next_id
  order_keys(node)
  setmetatable(node, Sym)
  intern[key] = node
  return node
end

-- Leaves ------------------------------------------------------------------

local function const(v)
  assert(type(v) == "number", "const: number expected")
  -- key on the exact bits so 0.1 and 0.1000000000000001 stay distinct
  local key = v ~= v and "c:nan" or string.format("c:%a", v)
  if v == 0 then key = "c:0" ; v = 0.0 end   -- fold -0 into 0
  return make(key, { op = "const", value = v + 0.0 })
end
M.const = const

-- kind: "x", "z", "p", "t" (model inputs) or "u" (an implicit unknown)
function M.var(kind, index, name)
  -- the name is part of the identity: models share no leaves, so printed
  -- expressions and generated comments always carry their own names
  return make("v:" .. kind .. ":" .. index .. ":" .. (name or ""),
    { op = "var", kind = kind, index = index, name = name })
end

local unknown_count = 0
-- A fresh placeholder for the unknown of an implicit equation.
function M.unknown(name)
  unknown_count = unknown_count + 1
  return M.var("u", unknown_count, name or ("u" .. unknown_count))
end

local ZERO, ONE, MONE = const(0), const(1), const(-1)
M.ZERO, M.ONE = ZERO, ONE
-- the interning table is weak: keep the common constants alive
M._keep = { ZERO, ONE, MONE, const(2), const(0.5) }

local function lift(v)
  if is_node(v) then return v end
  if type(v) == "number" then return const(v) end
  error(("salta: expected a number or a symbolic expression, got %s"):format(type(v)), 3)
end
M.lift = lift

local function is_const(n, v) return n.op == "const" and (v == nil or n.value == v) end

local function key_of(op, ...)
  local parts = { op }
  for i = 1, select("#", ...) do parts[#parts + 1] = select(i, ...).id end
  return table.concat(parts, ":")
end

local function node(op, ...)
  local args = { op = op, ... }
  return make(key_of(op, ...), args)
end

-- Arithmetic with simplification -------------------------------------------

local neg, add, mul, div, pow

neg = function(a)
  if a.op == "const" then return const(-a.value) end
  if a.op == "neg" then return a[1] end
  return node("neg", a)
end

add = function(a, b)
  if a.op == "const" and b.op == "const" then return const(a.value + b.value) end
  if is_const(a, 0) then return b end
  if is_const(b, 0) then return a end
  if a.op == "neg" and a[1] == b or b.op == "neg" and b[1] == a then return ZERO end
  if a == b then return mul(const(2), a) end
  -- a negated term second, so that a sum reads a - b
  if (a.op == "neg") ~= (b.op == "neg") then
    if a.op == "neg" then a, b = b, a end
  elseif before(b, a) then
    a, b = b, a
  end
  return node("add", a, b)
end

local function sub(a, b) return add(a, neg(b)) end

mul = function(a, b)
  if a.op == "const" and b.op == "const" then return const(a.value * b.value) end
  if b.op == "const" then a, b = b, a end
  if a.op == "const" then
    if a.value == 0 then return ZERO end
    if a.value == 1 then return b end
    if a.value == -1 then return neg(b) end
    if b.op == "mul" and b[1].op == "const" then return mul(const(a.value * b[1].value), b[2]) end
  end
  if a.op == "neg" then return neg(mul(a[1], b)) end
  if b.op == "neg" then return neg(mul(a, b[1])) end
  if a.op ~= "const" and before(b, a) then a, b = b, a end
  return node("mul", a, b)
end

div = function(a, b)
  -- constants fold with IEEE semantics: 0/0 is NaN, not the 1 of x/x
  if a.op == "const" and b.op == "const" then return const(a.value / b.value) end
  if is_const(a, 0) and not is_const(b, 0) then return ZERO end
  if is_const(b, 1) then return a end
  if is_const(b, -1) then return neg(a) end
  if a == b then return ONE end
  if b.op == "const" and b.value ~= 0 then return mul(const(1 / b.value), a) end
  if a.op == "neg" then return neg(div(a[1], b)) end
  if b.op == "neg" then return neg(div(a, b[1])) end
  return node("div", a, b)
end

pow = function(a, b)
  if a.op == "const" and b.op == "const" then return const(a.value ^ b.value) end
  if is_const(b, 0) then return ONE end
  if is_const(b, 1) then return a end
  if is_const(b, -1) then return div(ONE, a) end
  return node("pow", a, b)
end

M.neg, M.add, M.sub, M.mul, M.div, M.pow = neg, add, sub, mul, div, pow

-- Elementary functions ------------------------------------------------------

local function sigmoid_num(u) return 1 / (1 + math.exp(-u)) end
local function sign_num(u) return u > 0 and 1.0 or (u < 0 and -1.0 or 0.0) end

-- Numeric meaning of each unary function (constant folding, evaluation).
local unary_num = {
  sin = math.sin, cos = math.cos, tan = math.tan, exp = math.exp,
  log = math.log, sqrt = math.sqrt, asin = math.asin, acos = math.acos,
  atan = math.atan, abs = math.abs, sign = sign_num, sigmoid = sigmoid_num,
  tanh = function(u) return (math.exp(2 * u) - 1) / (math.exp(2 * u) + 1) end,
  sinh = function(u) return (math.exp(u) - math.exp(-u)) / 2 end,
  cosh = function(u) return (math.exp(u) + math.exp(-u)) / 2 end,
  log10 = function(u) return math.log(u, 10) end,
  floor = math.floor, ceil = math.ceil,
}
M.unary_num = unary_num

-- Functions whose value folds on constants without losing IEEE semantics.
local function apply_unary(name, a)
  if a.op == "const" then
    local v = unary_num[name](a.value)
    if v == v then return const(v + 0.0) end
  end
  if name == "abs" and a.op == "neg" then a = a[1] end
  return node(name, a)
end

function M.unary(name, a)
  assert(unary_num[name], "unknown unary function " .. tostring(name))
  return apply_unary(name, lift(a))
end

local function minmax(name, a, b)
  if a.op == "const" and b.op == "const" then
    return const(name == "min" and math.min(a.value, b.value) or math.max(a.value, b.value))
  end
  if a == b then return a end
  if before(b, a) then a, b = b, a end
  return node(name, a, b)
end

function M.min(a, b) return minmax("min", lift(a), lift(b)) end
function M.max(a, b) return minmax("max", lift(a), lift(b)) end

-- select(a, b, x, y) = (a <= b) ? x : y; the derivative of min/max.
function M.select_le(a, b, x, y)
  if x == y then return x end
  if a.op == "const" and b.op == "const" then return a.value <= b.value and x or y end
  return node("ifle", a, b, x, y)
end

-- implicit(res, u, guess): the root of res(u) = 0 found by Newton from
-- guess. res is an expression in the unknown placeholder u.
function M.implicit(res, u, guess)
  assert(u.op == "var" and u.kind == "u", "implicit: placeholder expected")
  local n = make(key_of("implicit", res, u, guess), { op = "implicit", res, u, guess })
  return n
end

-- Operator overloading -------------------------------------------------------

Sym.__add = function(a, b) return add(lift(a), lift(b)) end
Sym.__sub = function(a, b) return sub(lift(a), lift(b)) end
Sym.__mul = function(a, b) return mul(lift(a), lift(b)) end
Sym.__div = function(a, b) return div(lift(a), lift(b)) end
Sym.__pow = function(a, b) return pow(lift(a), lift(b)) end
Sym.__unm = function(a) return neg(a) end
Sym.__idiv = function() error("salta: '//' (floor division) is not differentiable; use salta.floor if you mean it", 2) end
Sym.__mod = function() error("salta: '%' is not supported on symbolic expressions", 2) end

local COMPARE_MSG = "salta: symbolic expressions cannot be compared with '<', '<=', '>' or '>=': "
  .. "the model is traced once, so a comparison has no single answer. "
  .. "A condition that switches the dynamics is an event: give a guard, an expression "
  .. "whose sign change in the event's direction fires it (e.g. guard = x.h - p.h0 with "
  .. "direction = \"down\" for 'h falls below h0'); for a smooth switch use salta.sigmoid, min or max"
Sym.__lt = function() error(COMPARE_MSG, 2) end
Sym.__le = function() error(COMPARE_MSG, 2) end
Sym.__concat = function(a, b)
  return tostring(a) .. tostring(b)
end
M.COMPARE_MSG = COMPARE_MSG

-- Printing ------------------------------------------------------------------

local infix = { add = "+", mul = "*", div = "/", pow = "^" }
local prec = { add = 1, neg = 2, mul = 3, div = 3, pow = 4 }

local function show(n)
  local op = n.op
  if op == "const" then return string.format("%.17g", n.value) end
  if op == "var" then return n.name or (n.kind .. n.index) end
  local function arg(c, p)
    local s = show(c)
    if prec[c.op] and prec[c.op] <= p and c.op ~= "neg" or (c.op == "neg" and p >= 2) then
      s = "(" .. s .. ")"
    end
    return s
  end
  if op == "add" then
    if n[2].op == "neg" then return arg(n[1], 0) .. " - " .. arg(n[2][1], 1) end
    return arg(n[1], 0) .. " + " .. arg(n[2], 0)
  end
  if op == "neg" then return "-" .. arg(n[1], 2) end
  if infix[op] then return arg(n[1], prec[op] - (op == "pow" and 0 or 1)) .. " " .. infix[op] .. " " .. arg(n[2], prec[op]) end
  if op == "ifle" then
    return ("(%s <= %s ? %s : %s)"):format(show(n[1]), show(n[2]), show(n[3]), show(n[4]))
  end
  if op == "implicit" then
    return ("root(%s = 0 in %s)"):format(show(n[1]), show(n[2]))
  end
  local parts = {}
  for i = 1, #n do parts[i] = show(n[i]) end
  return op .. "(" .. table.concat(parts, ", ") .. ")"
end
M.show = show
Sym.__tostring = show

-- Dependencies --------------------------------------------------------------

-- deps(n): set {[var] = true} of the leaves n depends on (memoised). The
-- unknown of an implicit node is bound inside it, so it does not leak out.
local deps_memo = setmetatable({}, { __mode = "k" })
local function deps(n)
  local d = deps_memo[n]
  if d then return d end
  d = {}
  if n.op == "var" then
    d[n] = true
  elseif n.op == "implicit" then
    for v in pairs(deps(n[1])) do if v ~= n[2] then d[v] = true end end
  else
    for i = 1, #n do for v in pairs(deps(n[i])) do d[v] = true end end
  end
  deps_memo[n] = d
  return d
end
M.deps = deps

-- Leaves in a fixed order: by kind (t, x, z, p, u), index, then name.
-- Iterating a deps set in this order, never pairs() (the nodes'
-- addresses), makes what is built from it (derivatives, sums, and so
-- the node ids and the generated C) the same in every process.
local function leaf_before(a, b)
  if a.kind ~= b.kind then return (KIND_RANK[a.kind] or 9) < (KIND_RANK[b.kind] or 9) end
  if a.index ~= b.index then return a.index < b.index end
  if a.name ~= b.name then return (a.name or "") < (b.name or "") end
  return a.id < b.id
end
M.leaf_before = leaf_before

-- sorted(set): the keys of a set of leaves as an array in leaf order.
function M.sorted(set)
  local out = {}
  for v in pairs(set) do out[#out + 1] = v end
  table.sort(out, leaf_before)
  return out
end

-- sorted_deps(n): deps(n) as an array in leaf order (memoised).
local sorted_memo = setmetatable({}, { __mode = "k" })
function M.sorted_deps(n)
  local s = sorted_memo[n]
  if not s then
    s = M.sorted(deps(n))
    sorted_memo[n] = s
  end
  return s
end

-- Substitution ----------------------------------------------------------------

local builders

-- Rebuild n with its children passed through fn (fn returns the new child).
local function rebuild(n, fn)
  local op = n.op
  if op == "const" or op == "var" then return n end
  local a = {}
  for i = 1, #n do a[i] = fn(n[i]) end
  return builders[op](table.unpack(a, 1, #n))
end
M.rebuild = rebuild

-- substituter(map): a function replacing leaves by map[leaf] where given,
-- with one memo for every expression it is applied to (a model's
-- expressions share subexpressions).
function M.substituter(map)
  local memo = {}
  local function go(e)
    local r = memo[e]
    if r then return r end
    if e.op == "var" then r = map[e] or e
    elseif e.op == "const" then r = e
    else
      local hit = false
      for v in pairs(deps(e)) do if map[v] then hit = true; break end end
      if e.op == "implicit" then
        for v in pairs(deps(e[3])) do if map[v] then hit = true; break end end
      end
      r = hit and rebuild(e, go) or e
    end
    memo[e] = r
    return r
  end
  return go
end

-- subst(n, map): n with leaves replaced by map[leaf] where given.
function M.subst(n, map)
  return M.substituter(map)(n)
end

-- solve_linear(res, u): u from 0 = res when res = c u + rest with c free
-- of u and not 0: -rest / c; else nil.
function M.solve_linear(res, u)
  local c = M.diff(res, u)
  if is_const(c, 0) or deps(c)[u] then return nil end
  return neg(div(M.subst(res, { [u] = ZERO }), c))
end

-- Unary functions defined at run time (input tables): op's numeric value
-- fn, its derivative the unary function deriv (false: zero almost
-- everywhere), its C function cname (whose source the model emits).
local deriv_of = {}
M.c_names = {}
function M.register_unary(op, fn, deriv, cname)
  unary_num[op] = fn
  deriv_of[op] = deriv
  M.c_names[op] = cname
  builders[op] = function(a) return apply_unary(op, a) end
end

builders = {
  add = add, mul = mul, div = div, pow = pow, neg = neg,
  min = function(a, b) return minmax("min", a, b) end,
  max = function(a, b) return minmax("max", a, b) end,
  ifle = M.select_le,
  implicit = M.implicit,
}
for name in pairs(unary_num) do
  builders[name] = function(a) return apply_unary(name, a) end
end
M.builders = builders

-- Numeric evaluation (tests, constant checks) --------------------------------

-- eval(n, env): env maps a var node to its number.
function M.eval(n, env)
  local memo = {}
  local function go(e)
    local r = memo[e]
    if r then return r end
    local op = e.op
    if op == "const" then r = e.value
    elseif op == "var" then
      r = env[e]
      if r == nil then error("salta: no value for " .. show(e)) end
    elseif op == "add" then r = go(e[1]) + go(e[2])
    elseif op == "mul" then r = go(e[1]) * go(e[2])
    elseif op == "div" then r = go(e[1]) / go(e[2])
    elseif op == "pow" then r = go(e[1]) ^ go(e[2])
    elseif op == "neg" then r = -go(e[1])
    elseif op == "min" then r = math.min(go(e[1]), go(e[2]))
    elseif op == "max" then r = math.max(go(e[1]), go(e[2]))
    elseif op == "ifle" then r = go(e[1]) <= go(e[2]) and go(e[3]) or go(e[4])
    elseif op == "implicit" then
      local u, du = go(e[3]), nil
      local dres = M.diff(e[1], e[2])
      for _ = 1, 50 do
        env[e[2]] = u
        du = M.eval(e[1], env) / M.eval(dres, env)
        u = u - du
        if math.abs(du) <= 1e-14 * (1 + math.abs(u)) then break end
      end
      env[e[2]] = nil
      r = u
    else r = unary_num[op](go(e[1])) end
    memo[e] = r
    return r
  end
  return go(n)
end

-- Differentiation ---------------------------------------------------------------

local diff_memo = setmetatable({}, { __mode = "k" })

-- diff(n, v): the symbolic derivative of n by the leaf v.
function M.diff(n, v)
  local memo = diff_memo[v]
  if not memo then memo = setmetatable({}, { __mode = "k" }); diff_memo[v] = memo end
  local function d(e)
    if not deps(e)[v] then return ZERO end
    local r = memo[e]
    if r then return r end
    local op, a, b = e.op, e[1], e[2]
    if op == "var" then r = ONE
    elseif op == "add" then r = add(d(a), d(b))
    elseif op == "neg" then r = neg(d(a))
    elseif op == "mul" then r = add(mul(d(a), b), mul(a, d(b)))
    elseif op == "div" then r = div(sub(mul(d(a), b), mul(a, d(b))), mul(b, b))
    elseif op == "pow" then
      if not deps(b)[v] then
        r = mul(mul(b, pow(a, sub(b, ONE))), d(a))
      else
        r = mul(e, add(mul(d(b), apply_unary("log", a)), div(mul(b, d(a)), a)))
      end
    elseif op == "sin" then r = mul(apply_unary("cos", a), d(a))
    elseif op == "cos" then r = neg(mul(apply_unary("sin", a), d(a)))
    elseif op == "tan" then local c = apply_unary("cos", a); r = div(d(a), mul(c, c))
    elseif op == "exp" then r = mul(e, d(a))
    elseif op == "log" then r = div(d(a), a)
    elseif op == "log10" then r = div(d(a), mul(const(math.log(10)), a))
    elseif op == "sqrt" then r = div(d(a), mul(const(2), e))
    elseif op == "tanh" then r = mul(sub(ONE, mul(e, e)), d(a))
    elseif op == "sinh" then r = mul(apply_unary("cosh", a), d(a))
    elseif op == "cosh" then r = mul(apply_unary("sinh", a), d(a))
    elseif op == "asin" then r = div(d(a), apply_unary("sqrt", sub(ONE, mul(a, a))))
    elseif op == "acos" then r = neg(div(d(a), apply_unary("sqrt", sub(ONE, mul(a, a)))))
    elseif op == "atan" then r = div(d(a), add(ONE, mul(a, a)))
    elseif op == "abs" then r = mul(apply_unary("sign", a), d(a))
    elseif op == "sign" or op == "floor" or op == "ceil" then r = ZERO
    elseif op == "sigmoid" then r = mul(mul(e, sub(ONE, e)), d(a))
    elseif op == "min" then r = M.select_le(a, b, d(a), d(b))
    elseif op == "max" then r = M.select_le(a, b, d(b), d(a))
    elseif op == "ifle" then r = M.select_le(a, b, d(e[3]), d(e[4]))
    elseif deriv_of[op] ~= nil then
      r = deriv_of[op] and mul(apply_unary(deriv_of[op], a), d(a)) or ZERO
    elseif op == "implicit" then
      -- implicit function theorem: du/dv = -(dres/dv) / (dres/du) at u = e
      local u = e[2]
      local bind = { [u] = e }
      r = neg(div(M.subst(M.diff(a, v), bind), M.subst(M.diff(a, u), bind)))
    else
      error("salta: no derivative rule for " .. op)
    end
    memo[e] = r
    return r
  end
  return d(n)
end

return M
