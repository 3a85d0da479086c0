-- salta.modelica_parse: an LPeg grammar for the Base Modelica subset that
-- salta.modelica reads (doc/modelica.md), into a plain AST. Every node
-- carries pos, its byte offset, which M.where turns into a line and a
-- column. Constructs salta refuses (algorithm sections, for-equations,
-- connect, functions other than input tables, arrays) are recognised
-- here, so that the error names the construct and its line instead of
-- reporting a syntax error.

local lpeg = require("lpeg")
local P, S, R, C, Ct, Cp, V, Cmt, Cs = lpeg.P, lpeg.S, lpeg.R, lpeg.C, lpeg.Ct, lpeg.Cp, lpeg.V, lpeg.Cmt, lpeg.Cs

local M = {}

-- Positions -------------------------------------------------------------------

-- where(src, pos) -> line, column (1-based).
function M.where(src, pos)
  local line, last = 1, 0
  for i in src:sub(1, pos - 1):gmatch("()\n") do line, last = line + 1, i end
  return line, pos - last
end

-- An error naming the file, the line and the column.
function M.raise(src, file, pos, msg)
  local l, c = M.where(src, pos)
  error(("%s:%d:%d: %s"):format(file or "modelica", l, c, msg), 0)
end

-- The current parse: its text and file (for refusals raised while matching)
-- and the farthest offset a token was tried at (where a syntax error is).
local cur = { farthest = 1 }

local function mark()
  return Cmt(P(true), function(_, i)
    if i > cur.farthest then cur.farthest = i end
    return true
  end)
end

-- A construct salta refuses, matched where it starts: an error naming it.
local function refuse(p, what)
  return Cmt(lpeg.Cp() * p, function(_, _, pos)
    M.raise(cur.src, cur.file, pos, ("%s is not supported (doc/modelica.md lists what is)"):format(
      type(what) == "function" and what(pos) or what))
  end)
end

-- Lexical ---------------------------------------------------------------------

local nl = P("\n")
local space = S(" \t\r\n\f") + P("//") * (1 - nl) ^ 0 + P("/*") * (1 - P("*/")) ^ 0 * P("*/")
local ws = space ^ 0
local idchar = R("az", "AZ", "09") + P("_")

local function tok(p) return mark() * p * ws end
local function sym(s) return tok(P(s)) end

local KEYWORDS = {}
for w in ([[algorithm and annotation block class connect connector constant discrete each else elseif
  elsewhen encapsulated end enumeration equation expandable extends external false final flow for
  function if import impure in initial inner input loop model not operator or outer output package
  parameter partial protected public pure record redeclare replaceable return stream then true type
  when while within]]):gmatch("%a+") do KEYWORDS[w] = true end

local function kw(w) return tok(P(w) * -idchar) end

local ident = Cmt(C((R("az", "AZ") + "_") * idchar ^ 0), function(_, i, s)
  if KEYWORDS[s] then return false end
  return i, s
end)

-- Quoted identifiers keep any character but ' and \ (S-ESCAPEs decode).
local ESC = { ["'"] = "'", ['"'] = '"', ["?"] = "?", ["\\"] = "\\", a = "\a", b = "\b", f = "\f", n = "\n",
  r = "\r", t = "\t", v = "\v" }
local escape = P("\\") * C(1) / function(c) return ESC[c] or c end
local qident = P("'") * Cs((C(1 - S("'\\")) + escape) ^ 1) * P("'")
local name_part = ident + qident
-- a dotted name (AssertionLevel.error, Modelica.Math.sin); 'a.b' is one part
local name = tok(Ct(name_part * (P(".") * name_part) ^ 0) / function(parts) return table.concat(parts, ".") end)

local digits = R("09") ^ 1
local number = tok(C((digits * (P(".") * digits ^ -1) ^ -1 + P(".") * digits) * (S("eE") * S("+-") ^ -1 * digits) ^ -1)
  / tonumber)
-- an optional part: false where it is absent, so that captures keep their places
local function opt(p) return p + lpeg.Cc(false) end

local string_lit = tok(P('"') * Cs((C(1 - S('"\\')) + escape) ^ 0) * P('"'))
-- a description: a string, or strings joined with +
local description = Ct(string_lit * (sym("+") * string_lit) ^ 0) / table.concat

-- Expressions -----------------------------------------------------------------

-- { first, op, pos, operand, op, pos, operand ... } folded to the left
local function fold(t)
  local acc = t[1]
  for i = 2, #t, 3 do acc = { k = "bin", op = t[i], pos = t[i + 1], acc, t[i + 2] } end
  return acc
end

local function chain(kind)   -- a or b or c: one node with every operand
  return function(t)
    if #t == 1 then return t[1] end
    local n = { k = kind, pos = t[1].pos }
    for i, e in ipairs(t) do n[i] = e end
    return n
  end
end

local function leaf(k, v) return function(pos, x) return { k = k, pos = pos, v = v == nil and x or v } end end

local RELOPS = sym("<=") / "<=" + sym(">=") / ">=" + sym("==") / "==" + sym("<>") / "<>" + sym("<") / "<"
  + sym(">") / ">"

local grammar = {
  "expr",
  expr = V("ifexpr") + V("lor") * refuse(sym(":"), "a range (a:b)") ^ -1,
  ifexpr = Ct(Cp() * kw("if") * V("expr") * kw("then") * V("expr")
    * (kw("elseif") * V("expr") * kw("then") * V("expr")) ^ 0 * kw("else") * V("expr"))
    / function(t) return { k = "if", pos = t[1], table.unpack(t, 2) } end,
  lor = Ct(V("land") * (kw("or") * V("land")) ^ 0) / chain("or"),
  land = Ct(V("lnot") * (kw("and") * V("lnot")) ^ 0) / chain("and"),
  lnot = (Cp() * kw("not") * V("relation")) / function(pos, e) return { k = "not", pos = pos, e } end
    + V("relation"),
  relation = (V("arith") * Cp() * RELOPS * V("arith"))
    / function(a, pos, op, b) return { k = "rel", op = op, pos = pos, a, b } end + V("arith"),
  -- Modelica puts a sign before the first term only (a * -b is not Modelica)
  arith = Ct(((Cp() * sym("-") * V("term")) / function(pos, t) return { k = "neg", pos = pos, t } end
      + sym("+") * V("term") + V("term"))
    * ((sym("+") / "+" + sym("-") / "-") * Cp() * V("term")) ^ 0) / fold,
  term = Ct(V("factor") * ((sym("*") / "*" + sym("/") / "/") * Cp() * V("factor")) ^ 0) / fold,
  factor = (V("primary") * Cp() * sym("^") * V("primary"))
    / function(a, pos, b) return { k = "bin", op = "^", pos = pos, a, b } end
    + V("primary"),
  primary = (Cp() * number) / leaf("num")
    + (Cp() * string_lit) / leaf("str")
    + (Cp() * kw("true")) / leaf("bool", true)
    + (Cp() * kw("false")) / leaf("bool", false)
    + (Cp() * kw("initial") * sym("(") * sym(")")) / function(pos) return { k = "call", pos = pos, name = "initial", args = {} } end
    + (Cp() * name * V("args")) / function(pos, n, args) return { k = "call", pos = pos, name = n, args = args } end
    + (Cp() * name * refuse(P("["), "an array subscript") ^ -1) / leaf("name")
    + sym("(") * V("expr") * sym(")")
    + (Cp() * sym("{") * Ct((V("expr") * (sym(",") * V("expr")) ^ 0) ^ -1) * sym("}"))
      / function(pos, items) return { k = "array", pos = pos, items = items } end
    + refuse(sym("["), "a matrix constructor [...]"),
  -- f(a, b, name = c): a named argument is { name =, value = }
  args = sym("(") * Ct((V("arg") * (sym(",") * V("arg")) ^ 0) ^ -1) * sym(")"),
  arg = (Cp() * name * sym("=") * -P("=") * V("expr"))
    / function(pos, n, e) return { k = "named", pos = pos, name = n, value = e } end + V("expr"),
}

-- Modifications, annotations ------------------------------------------------------

-- (start = 1, fixed = true, experiment(StopTime = 1)): a list of
-- { name, pos, value (an expression), mods (a nested list) }.
grammar.mods = sym("(") * Ct((V("modarg") * (sym(",") * V("modarg")) ^ 0) ^ -1) * sym(")")
grammar.modarg = (Cp() * (kw("each") + kw("final")) ^ 0 * name * opt(V("mods")) * opt(sym("=") * V("expr"))
  * opt(description)) / function(pos, n, mods, value)
    return { pos = pos, name = n, mods = mods or nil, value = value or nil }
  end
grammar.annotation = kw("annotation") * V("mods")
-- a description and an annotation, either optional
grammar.comment = (opt(description) * opt(V("annotation")))
  / function(d, a) return { description = d or nil, annotation = a or nil } end

-- Declarations ----------------------------------------------------------------------

local PREFIXES = { "final", "flow", "stream", "discrete", "parameter", "constant", "input", "output" }
local prefix = P(false)
for _, w in ipairs(PREFIXES) do prefix = prefix + kw(w) / w end
grammar.prefixes = Ct(prefix ^ 0)

grammar.declaration = (Cp() * V("prefixes") * name * refuse(sym("["), "an array variable") ^ -1
  * Cp() * name * refuse(sym("["), "an array variable") ^ -1 * opt(V("mods")) * opt(sym("=") * V("expr"))
  * V("comment") * refuse(sym(","), "a declaration of several variables at once") ^ -1 * sym(";"))
  / function(pos, prefixes, typ, npos, n, mods, binding, comment)
    local pre = {}
    for _, w in ipairs(prefixes) do pre[w] = true end
    return { pos = pos, name_pos = npos, prefixes = pre, type = typ, name = n, mods = mods or {},
      binding = binding or nil, comment = comment }
  end

-- Equations -----------------------------------------------------------------------

local function list_of(rule) return Ct((V(rule) * sym(";")) ^ 0) end

grammar.equation = V("if_eq") + V("when_eq")
  + refuse(kw("for"), "a for-equation") + refuse(kw("connect"), "connect(...) (flatten the model first)")
  + (Cp() * V("lor") * sym("=") * V("expr") * V("comment"))
    / function(pos, lhs, rhs, c) return { k = "eq", pos = pos, lhs = lhs, rhs = rhs, comment = c } end
  + (Cp() * name * V("args") * V("comment"))
    / function(pos, n, args, c) return { k = "call", pos = pos, name = n, args = args, comment = c } end

grammar.if_eq = (Cp() * Ct(kw("if") * V("expr") * kw("then") * list_of("equation")
  * (kw("elseif") * V("expr") * kw("then") * list_of("equation")) ^ 0)
  * opt(kw("else") * list_of("equation")) * kw("end") * kw("if") * V("comment"))
  / function(pos, t, otherwise, c)
    local branches = {}
    for i = 1, #t, 2 do branches[#branches + 1] = { cond = t[i], eqs = t[i + 1] } end
    return { k = "if", pos = pos, branches = branches, otherwise = otherwise or nil, comment = c }
  end

grammar.when_eq = (Cp() * Ct(kw("when") * V("expr") * kw("then") * list_of("equation")
  * (Cp() * kw("elsewhen") * V("expr") * kw("then") * list_of("equation")) ^ 0)
  * kw("end") * kw("when") * V("comment"))
  / function(pos, t, c)
    local branches = { { cond = t[1], eqs = t[2], pos = pos } }
    for i = 3, #t, 3 do branches[#branches + 1] = { pos = t[i], cond = t[i + 1], eqs = t[i + 2] } end
    return { k = "when", pos = pos, branches = branches, comment = c }
  end

-- Classes -------------------------------------------------------------------------

local function end_of() return kw("end") * name * sym(";") end

grammar.section = (kw("initial") * kw("equation") * list_of("equation")) / function(eqs) return { initial = eqs } end
  + (kw("equation") * list_of("equation")) / function(eqs) return { equations = eqs } end
  + refuse(kw("initial") * kw("algorithm"), "an initial algorithm section")
  + refuse(kw("algorithm"), "an algorithm section")
  + refuse(kw("protected") + kw("public"), "a protected or public section")

grammar.model = (Cp() * (kw("model") + kw("class") + kw("block")) * name * opt(description)
  * Ct((V("declaration") + refuse(kw("extends"), "extends (flatten the model first)")) ^ 0)
  * Ct(V("section") ^ 0) * opt(V("annotation") * sym(";")) * end_of())
  / function(pos, n, desc, decls, sections, ann)
    local eqs, init = {}, {}
    for _, s in ipairs(sections) do
      for _, e in ipairs(s.equations or {}) do eqs[#eqs + 1] = e end
      for _, e in ipairs(s.initial or {}) do init[#init + 1] = e end
    end
    return { kind = "model", pos = pos, name = n, description = desc or nil, declarations = decls,
      equations = eqs, initial = init, annotation = ann or nil }
  end

-- type 'T' = Real(unit = "V") "description";
grammar.type_def = (Cp() * kw("type") * name * sym("=")
  * (kw("enumeration") * V("mods") * lpeg.Cc(true) * lpeg.Cc(false) + name * lpeg.Cc(false) * opt(V("mods")))
  * V("comment") * sym(";"))
  / function(pos, n, a, enum, mods)
    if enum then return { kind = "type", pos = pos, name = n, enumeration = true } end
    return { kind = "type", pos = pos, name = n, base = a, mods = mods or {} }
  end

-- An input table: a function with one input, one output and an external
-- clause whose annotation is __salta_table(...). Any other function is
-- refused, naming what its body has.
grammar.table_fn = (Cp() * kw("function") * name * opt(description) * Ct(V("declaration") ^ 0)
  * kw("external") * opt(string_lit) * V("annotation") * sym(";") * end_of())
  / function(pos, n, _, decls, _, ann)
    return { kind = "function", pos = pos, name = n, declarations = decls, annotation = ann }
  end

local function function_refusal(pos)
  local src = cur.src
  local fname = src:match("^function%s+('[^']*')", pos) or src:match("^function%s+([%w_.]+)", pos) or "?"
  local stop = src:find("%f[%w_]end%s+" .. fname:gsub("%p", "%%%0") .. "%s*;", pos) or #src
  local body = src:sub(pos, stop)
  local what = body:find("%f[%w_]for%f[^%w_]") and " (it has a for loop)"
    or body:find("%f[%w_]while%f[^%w_]") and " (it has a while loop)"
    or body:find("%f[%w_]algorithm%f[^%w_]") and " (it has an algorithm section)"
    or body:find("%f[%w_]external%f[^%w_]") and " (an external function other than a __salta_table input table)" or ""
  return ("function %s%s"):format(fname, what)
end

grammar.class = V("model") + V("type_def") + V("table_fn")
  + refuse(kw("function"), function_refusal)
  + refuse(kw("record"), "a record") + refuse(kw("connector"), "a connector (flatten the model first)")
  + (Cp() * kw("package") * name * opt(description) * Ct(V("class") ^ 0) * opt(V("annotation") * sym(";"))
    * end_of()) / function(pos, n, _, classes)
      return { kind = "package", pos = pos, name = n, classes = classes }
    end

grammar.file = ws * (kw("within") * name ^ -1 * sym(";")) ^ -1 * Ct(V("class") ^ 1) * -P(1)

grammar[1] = "file"
local FILE = P(grammar)
grammar[1] = "expr"
local EXPR = ws * P(grammar) * -P(1)

-- The text at the farthest point reached, for a syntax error.
local function near(src, pos)
  local s = src:sub(pos, pos + 24):match("^[^\n]*")
  if s == "" then return pos > #src and "the end of the file" or "a line break" end
  return "'" .. s .. (#s == 25 and "..." or "") .. "'"
end

local function run(patt, src, file)
  cur.src, cur.file, cur.farthest = src, file, 1
  local ok, res = pcall(lpeg.match, patt, src)
  if not ok then error(res, 0) end
  if res == nil then M.raise(src, file, cur.farthest, "syntax error near " .. near(src, cur.farthest)) end
  return res
end

-- parse(src, file) -> list of classes (packages, models, types, functions).
function M.parse(src, file)
  return run(FILE, src, file)
end

-- expression(src) -> the AST of one expression (tests, tools).
function M.expression(src, file) return run(EXPR, src, file) end

return M
