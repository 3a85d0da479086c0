-- salta.codegen_emit: straight-line C for expression DAGs, which
-- salta.codegen and salta.codegen_dirs write their kernels with. An
-- emitter reads leaves in place and gives every other node one temporary
-- per scope (common subexpressions computed once); an implicit node opens a
-- Newton loop; a subexpression of the parameters alone is read from the
-- model's derived values (salta_kernel.h: np_derived), computed once per
-- parameter vector, and a division by one is a product with its derived
-- reciprocal.

local expr = require("salta.expr")

local M = {}

local function literal(v)
  if v ~= v then return "NAN" end
  if v == math.huge then return "INFINITY" end
  if v == -math.huge then return "(-1e308 * 1e308)" end  -- tcc rejects -INFINITY in initialisers
  local s = string.format("%.17g", v)
  if not s:find("[%.eEn]") then s = s .. ".0" end
  if v < 0 then s = "(" .. s .. ")" end
  return s
end
M.literal = literal

local cfun = {
  sin = "sin", cos = "cos", tan = "tan", exp = "exp", log = "log", sqrt = "sqrt",
  tanh = "tanh", sinh = "sinh", cosh = "cosh", asin = "asin", acos = "acos",
  atan = "atan", abs = "fabs", log10 = "log10", floor = "floor", ceil = "ceil",
  sign = "salta_sign_", sigmoid = "salta_sigmoid_", min = "fmin", max = "fmax",
}

-- An emitter writes straight-line C for a set of expressions. Leaves are
-- read in place; every other node gets one temporary per scope, so shared
-- subexpressions are computed once (common-subexpression elimination).
-- Implicit nodes open a Newton loop; nodes that depend on its unknown are
-- emitted inside the loop, the rest are hoisted before it.
local Emitter = {}
Emitter.__index = Emitter

-- derived (optional): the model's derived values (M.new_derived); the
-- emitter reads a subexpression of the parameters alone from there.
-- known (optional): nodes whose values are at hand, by their C text.
local function new_emitter(indent, derived, known)
  return setmetatable({
    ntemp = 0,
    derived = derived,
    scopes = { { lines = {}, names = known and setmetatable({}, { __index = known }) or {}, unknown = nil,
                 indent = indent or "  " } },
  }, Emitter)
end

function Emitter:temp()
  self.ntemp = self.ntemp + 1
  return "a" .. self.ntemp
end

function Emitter:lookup(n)
  for k = #self.scopes, 1, -1 do
    local s = self.scopes[k].names[n]
    if s then return s end
  end
end

-- The innermost scope whose unknown n depends on.
function Emitter:scope_for(n)
  if #self.scopes == 1 then return self.scopes[1] end
  local d = expr.deps(n)
  for k = #self.scopes, 2, -1 do
    if d[self.scopes[k].unknown] then return self.scopes[k] end
  end
  return self.scopes[1]
end

-- f(n) once per node n (a large model asks for each many times).
local function per_node(f)
  local memo = setmetatable({}, { __mode = "k" })
  return function(n)
    local v = memo[n]
    if v == nil then
      v = f(n)
      memo[n] = v
    end
    return v
  end
end

-- The C text of constants and leaves.
local leaf_c = per_node(function(n)
  if n.op == "const" then return literal(n.value) end
  if n.kind == "t" then return "t" end
  return n.kind .. "[" .. (n.index - 1) .. "]"
end)

-- Whether n holds an implicit node; whether it reads the parameters
-- alone (no t, x, z, no implicit unknown).
local contains_implicit
contains_implicit = per_node(function(n)
  if n.op == "implicit" then return true end
  for i = 1, #n do
    if type(n[i]) == "table" and contains_implicit(n[i]) then return true end
  end
  return false
end)

local params_only = per_node(function(n)
  local any = false   -- a constant expression expr did not fold stays in place: p may be empty
  for leaf in pairs(expr.deps(n)) do
    if leaf.kind ~= "p" then return false end
    any = true
  end
  return any and not contains_implicit(n)
end)

-- n's place among the derived values dv, taken on first use.
local function derived_slot(dv, n)
  local k = dv.at[n]
  if not k then
    k = #dv.list + 1
    dv.list[k], dv.at[n] = n, k
  end
  return "p[" .. (dv.np + k - 1) .. "]"
end

-- The C text of node n from its operands' texts a.
local function c_text(n, a)
  local op = n.op
  if op == "add" then return a[1] .. " + " .. a[2] end
  if op == "mul" then return a[1] .. " * " .. a[2] end
  if op == "div" then return a[1] .. " / " .. a[2] end
  if op == "neg" then return "-" .. a[1] end
  if op == "pow" then
    local b = n[2]
    if b.op == "const" and b.value == 2 then return a[1] .. " * " .. a[1] end
    if b.op == "const" and b.value == 0.5 then return "sqrt(" .. a[1] .. ")" end
    return "pow(" .. a[1] .. ", " .. a[2] .. ")"
  end
  if op == "ifle" then return ("%s <= %s ? %s : %s"):format(a[1], a[2], a[3], a[4]) end
  local f = assert(cfun[op] or expr.c_names[op], "codegen: no C form for " .. op)
  return f .. "(" .. table.concat(a, ", ") .. ")"
end

function Emitter:emit(n)
  local op = n.op
  if op == "const" then return leaf_c(n) end
  local known = self:lookup(n)
  if known then return known end
  if op == "var" then return leaf_c(n) end
  if self.derived and params_only(n) then return derived_slot(self.derived, n) end
  if op == "implicit" then return self:emit_implicit(n) end
  local rhs
  if op == "div" and self.derived and params_only(n[2]) then
    -- by the derived reciprocal, as expr turns a division by a constant
    -- into a product: a division's latency, at every call, off the chain
    rhs = self:emit(n[1]) .. " * " .. derived_slot(self.derived, expr.div(expr.ONE, n[2]))
  else
    local a = {}
    for i = 1, #n do a[i] = self:emit(n[i]) end
    rhs = c_text(n, a)
  end
  local scope = self:scope_for(n)
  local name = self:temp()
  scope.lines[#scope.lines + 1] = scope.indent .. "const double " .. name .. " = " .. rhs .. ";"
  scope.names[n] = name
  return name
end

function Emitter:emit_implicit(n)
  local res, u, guess = n[1], n[2], n[3]
  local outer = self:scope_for(n)
  local g = self:emit(guess)
  local name = self:temp()
  local ind = outer.indent
  local inner = { lines = {}, names = { [u] = name }, unknown = u, indent = ind .. "    " }
  self.scopes[#self.scopes + 1] = inner
  local r = self:emit(res)
  local dr = self:emit(expr.diff(res, u))
  self.scopes[#self.scopes] = nil
  -- the loop's text goes after the outer lines emitted meanwhile: the
  -- subexpressions independent of u, hoisted out of the loop, come first
  local out = outer.lines
  out[#out + 1] = ind .. "double " .. name .. " = " .. g .. ";"
  out[#out + 1] = ind .. "{ /* Newton on " .. tostring(res):sub(1, 60):gsub("%*/", "* /") .. " = 0 */"
  out[#out + 1] = ind .. "  int ok = 0;"
  out[#out + 1] = ind .. "  for (int it = 0; it < 50 && !ok; ++it) {"
  for _, l in ipairs(inner.lines) do out[#out + 1] = l end
  out[#out + 1] = ind .. "    const double du = " .. r .. " / " .. dr .. ";"
  out[#out + 1] = ind .. "    " .. name .. " -= du;"
  out[#out + 1] = ind .. "    ok = fabs(du) <= 1e-14 * (1.0 + fabs(" .. name .. "));"
  out[#out + 1] = ind .. "  }"
  out[#out + 1] = ind .. "  if (!ok || !isfinite(" .. name .. ")) return 1;"
  out[#out + 1] = ind .. "}"
  outer.names[n] = name
  return name
end


-- The model's derived values for parameter vectors of np entries: list,
-- the nodes in order of first use; at, a node's place. An emitter given it
-- reads them at p[np ..].
function M.new_derived(np) return { np = np, list = {}, at = {} } end

M.new_emitter, M.contains_implicit, M.params_only = new_emitter, contains_implicit, params_only

return M
