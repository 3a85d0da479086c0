-- salta.modelica: reads a Base Modelica file (as OpenModelica writes a
-- flattened model) into the symbolic description a salta.dae{} model
-- traces to, then compiles it (salta.model.build). doc/modelica.md lists
-- the subset and what is refused.
--
-- The steps: parse (salta.modelica_parse); declarations into states (the
-- variables under der), discrete variables (Boolean, Integer, discrete,
-- or set in a when-equation), algebraics and parameters (independent
-- ones are the model's parameters; a binding that reads others is an
-- expression substituted wherever the parameter is read); equations into
-- residuals (if-expressions and if-equations as salta.ifelse);
-- algebraics that equations give from the parameters and the time alone
-- substituted (so that a constraint between states, hidden behind a
-- ground or a source, reaches the index reduction); der(x) solved from
-- its equation where it is linear in it, else made an algebraic; when-
-- equations into events, asserts into terminal events that raise
-- (salta.modelica_events); the equations' part is salta.modelica_equations.

local parse = require("salta.modelica_parse")
local mexpr = require("salta.modelica_expr")
local expr = require("salta.expr")
local cond = require("salta.cond")
local hybrid = require("salta.hybrid")
local frontend = require("salta.frontend")
local input = require("salta.input")
local files = require("salta.files")
local mevents = require("salta.modelica_events")
local equations = require("salta.modelica_equations")

local M = {}

-- Declarations --------------------------------------------------------------------

local BASE = { Real = true, Integer = true, Boolean = true, String = true }

-- The base type and the modifications of a type name (type 'T' = Real(...)).
local function resolve_type(S, name, pos, depth)
  if BASE[name] then return name, {} end
  local t = S.types[name]
  if not t or (depth or 0) > 16 then S.fail(pos, ("unknown type '%s'"):format(name)) end
  if t.enumeration then S.fail(pos, ("the enumeration type '%s' is not supported"):format(name)) end
  local base, mods = resolve_type(S, t.base, t.pos, (depth or 0) + 1)
  local out = { table.unpack(mods) }
  for _, m in ipairs(t.mods) do out[#out + 1] = m end
  return base, out
end

-- The attributes of a declaration (the type's, then its own): name -> AST.
local function attributes(mods)
  local a = {}
  for _, m in ipairs(mods) do
    if m.value then a[m.name] = m.value end
  end
  return a
end

-- Whether an annotation (a modification list) sets name = true.
local function annotated(ann, name)
  for _, m in ipairs(ann or {}) do
    if m.name == name and m.value and mexpr.literal(m.value) == true then return true end
  end
  return false
end

local function declare(S, dcl)
  local base, mods = resolve_type(S, dcl.type, dcl.pos)
  for _, m in ipairs(dcl.mods) do mods[#mods + 1] = m end
  local pre = dcl.prefixes
  local v = { name = dcl.name, pos = dcl.name_pos, base = base, attrs = attributes(mods), binding = dcl.binding,
    description = dcl.comment.description, output = pre.output, input = pre.input }
  if base == "String" then v.role = "string"
  elseif pre.constant then v.role = "constant"
  elseif pre.parameter then
    v.role = annotated(dcl.comment.annotation, "Evaluate") and "constant" or "parameter"
  else
    v.role = "variable"
    v.discrete = pre.discrete or base ~= "Real"
  end
  if S.vars[v.name] then S.fail(dcl.name_pos, ("'%s' is declared twice"):format(v.name)) end
  S.vars[v.name] = v
  S.order[#S.order + 1] = v
end

-- Scans -----------------------------------------------------------------------------

-- Every equation of a list, into the branches of if-equations, with
-- visit(eq, in_when).
local function each_equation(list, visit, in_when)
  for _, eq in ipairs(list) do
    visit(eq, in_when)
    if eq.k == "if" then
      for _, b in ipairs(eq.branches) do each_equation(b.eqs, visit, in_when) end
      each_equation(eq.otherwise or {}, visit, in_when)
    elseif eq.k == "when" then
      for _, b in ipairs(eq.branches) do each_equation(b.eqs, visit, true) end
    end
  end
end

-- Every call in an expression AST, with visit(call).
local function each_call(e, visit)
  if type(e) ~= "table" then return end
  if e.k == "call" then
    visit(e)
    for _, a in ipairs(e.args) do each_call(a.k == "named" and a.value or a, visit) end
  end
  for _, c in ipairs(e) do each_call(c, visit) end
  if e.k == "array" then for _, c in ipairs(e.items) do each_call(c, visit) end end
end

local function equation_exprs(eq)
  if eq.k == "eq" then return { eq.lhs, eq.rhs } end
  if eq.k == "call" then return eq.args end
  local out = {}
  for _, b in ipairs(eq.branches or {}) do out[#out + 1] = b.cond end
  return out
end

-- The states (variables under der), the variables when-equations set, and
-- how often each name is read.
local function scan(S, model)
  S.is_state, S.when_set, S.reads = {}, {}, {}
  each_equation(model.equations, function(eq, in_when)
    for _, e in ipairs(equation_exprs(eq)) do
      each_call(e, function(c)
        if c.name == "der" and c.args[1] and c.args[1].k == "name" then
          local v = S.vars[c.args[1].v]
          if not v or v.role ~= "variable" or v.base ~= "Real" then
            S.fail(c.pos, ("der(%s): '%s' is not a Real variable"):format(c.args[1].v, c.args[1].v))
          end
          S.is_state[v.name] = true
        end
      end)
      for n in pairs(mexpr.names(e)) do S.reads[n] = (S.reads[n] or 0) + 1 end
    end
    if in_when and eq.k == "eq" and eq.lhs.k == "name" then S.when_set[eq.lhs.v] = eq end
  end)
end

-- The model's equations 'v' = <expr> whose left side is a declared
-- variable (not a parameter or constant): an iterator of (eq, v).
local function defining_equations(S, model)
  return coroutine.wrap(function()
    for _, eq in ipairs(model.equations) do
      local v = eq.k == "eq" and eq.lhs.k == "name" and S.vars[eq.lhs.v]
      if v and v.role == "variable" then coroutine.yield(eq, v) end
    end
  end)
end

-- Discrete variables an equation outside when-equations defines (a
-- Boolean 'b' = x > 1, an Integer from an if-expression): read through
-- their definition wherever they appear, as Modelica's event semantics
-- give them the value of the relation.
local function inline_definitions(S, model)
  S.defined = {}
  for eq, v in defining_equations(S, model) do
    if v.discrete and not S.when_set[v.name] then
      if S.defined[v.name] then S.fail(eq.pos, ("'%s' has a second equation"):format(v.name)) end
      S.defined[v.name] = eq
    end
  end
end

-- Parameters ----------------------------------------------------------------------

local function attr_number(S, v, key, env_lookup)
  local e = v.attrs[key]
  if not e then return nil end
  local lit = mexpr.literal(e)
  if type(lit) == "number" then return lit end
  if type(lit) == "boolean" then return lit and 1 or 0 end
  if env_lookup then
    local n = env_lookup(e)
    if n and n.op == "const" then return n.value end
  end
  return nil
end

-- Whether a parameter's binding reads another parameter (a dependent one).
local function reads_parameters(S, e)
  for n in pairs(mexpr.names(e)) do
    local w = S.vars[n]
    if w and (w.role == "parameter" or w.role == "constant") then return true end
  end
  return false
end

-- The parameters: independent ones (p_names, values), dependent ones and
-- constants as expressions (S.param_expr[name]).
local function parameters(S)
  S.p_names, S.p_values, S.param_expr, S.param_info, S.dependent = {}, {}, {}, {}, {}
  for _, v in ipairs(S.order) do
    if v.role == "parameter" and v.attrs.fixed and mexpr.literal(v.attrs.fixed) == false then
      S.fail(v.pos, ("parameter '%s' has fixed = false (computed by the initialization): not supported"):format(v.name))
    end
    if v.role == "parameter" and not (v.binding and reads_parameters(S, v.binding)) then
      local e = v.binding or v.attrs.start
      local val = e and mexpr.literal(e)
      if e and val == nil then
        local ok, n = pcall(mexpr.value, S.param_cx, e)
        if not ok then error(n, 0) end
        if n.op ~= "const" then S.fail(e.pos, ("the binding of parameter '%s' is not a constant"):format(v.name)) end
        val = n.value
      end
      if type(val) == "boolean" then val = val and 1 or 0 end
      if type(val) ~= "number" then val = 0.0 end
      local i = #S.p_names + 1
      S.p_names[i], S.p_values[i] = v.name, val + 0.0
      S.param_expr[v.name] = expr.var("p", i, v.name)
    end
  end
end

-- A dependent parameter or constant: its binding, translated on first use.
local function param_value(S, v, pos)
  local e = S.param_expr[v.name]
  if e then return e end
  if S.resolving[v.name] then S.fail(pos, ("the binding of parameter '%s' reads itself"):format(v.name)) end
  S.resolving[v.name] = true
  local b = v.binding or v.attrs.start
  if not b then S.fail(v.pos, ("'%s' has no value"):format(v.name)) end
  e = mexpr.value(S.param_cx, b)
  if v.role == "constant" then   -- evaluated now, at the nominal values (Evaluate = true)
    e = expr.const(expr.eval(e, S.nominal))
  else
    S.dependent[#S.dependent + 1] = { name = v.name, binding = e }
  end
  S.resolving[v.name] = nil
  S.param_expr[v.name] = e
  return e
end

-- Units, ranges and nominal values, for the fitting tools.
local function param_info(S)
  local function num(v, key)
    return attr_number(S, v, key, function(e)
      local ok, n = pcall(mexpr.value, S.param_cx, e)
      return ok and n and n.op == "const" and n or (ok and n and expr.const(expr.eval(n, S.nominal))) or nil
    end)
  end
  for _, v in ipairs(S.order) do
    if v.role == "parameter" or v.role == "constant" then
      local unit = v.attrs.unit and mexpr.literal(v.attrs.unit)
      S.param_info[v.name] = { min = num(v, "min"), max = num(v, "max"), nominal = num(v, "nominal"),
        unit = type(unit) == "string" and unit or nil, description = v.description,
        dependent = S.param_expr[v.name] and S.param_expr[v.name].op ~= "var" or nil }
    end
  end
end

-- The model ---------------------------------------------------------------------

-- The variables: continuous states (declaration order), then discrete
-- variables (states f keeps constant), then algebraics (provisional: the
-- substitutions below renumber them).
local function variables(S)
  local xn, zn, outs = {}, {}, {}
  S.kind = {}
  for _, v in ipairs(S.order) do
    if v.role == "variable" and S.is_state[v.name] then xn[#xn + 1] = v; S.kind[v.name] = "state" end
  end
  S.ncont = #xn
  for _, v in ipairs(S.order) do
    if v.role == "variable" and not S.is_state[v.name] and not S.defined[v.name]
        and (v.discrete or S.when_set[v.name]) then
      if v.base == "Real" and not v.discrete and not S.when_set[v.name] then goto continue end
      xn[#xn + 1] = v
      S.kind[v.name] = "discrete"
    end
    ::continue::
  end
  for _, v in ipairs(S.order) do
    if v.role == "variable" and not S.kind[v.name] and not S.defined[v.name] and not S.output_def[v.name] then
      if v.input and not v.binding then
        S.fail(v.pos, ("top-level input '%s' has no value: give it a binding, or read an input table"):format(v.name))
      end
      zn[#zn + 1] = v
      S.kind[v.name] = "algebraic"
    end
  end
  S.x, S.z, S.xvar, S.zvar = xn, zn, {}, {}
  for i, v in ipairs(xn) do S.xvar[v.name] = expr.var("x", i, v.name) end
  for i, v in ipairs(zn) do S.zvar[v.name] = expr.var("z", i, v.name) end
  for _, v in ipairs(S.order) do if v.output and v.role == "variable" then outs[#outs + 1] = v end end
  S.outputs = outs
end

local function lookup(S, name, pos, quiet, tables)
  if name == "time" then return "node", S.T end
  local v = S.vars[name]
  if not v then
    local tab = tables and tables[name]
    if tab then return "table", tab end
    if quiet then return nil end
    S.fail(pos, ("unknown name '%s'"):format(name))
  end
  if S.xvar[name] then return "node", S.xvar[name] end
  if S.zvar[name] then return "node", S.zvar[name] end
  if v.role == "parameter" or v.role == "constant" then return "node", param_value(S, v, pos) end
  if v.role == "string" then S.fail(pos, ("'%s' is a String"):format(name)) end
  local def = S.defined[name]
  if def then
    if S.inlining[name] then S.fail(pos, ("the definition of '%s' reads itself"):format(name)) end
    S.inlining[name] = true
    local res
    if v.base == "Boolean" then res = { "cond", mexpr.condition(S.cx, def.rhs) }
    else res = { "node", mexpr.value(S.cx, def.rhs) } end
    S.inlining[name] = nil
    return res[1], res[2]
  end
  S.fail(pos, ("'%s' has no equation"):format(name))
end

-- The context of expressions in equations (and, with reset = true, in the
-- body of a when-equation).
local function contexts(S)
  local function fail(pos, msg) parse.raise(S.src, S.file, pos, msg) end
  S.fail = fail
  S.D = {}
  S.cx = {
    fail = fail,
    lookup = function(n, pos, quiet) return lookup(S, n, pos, quiet, S.tables_held) end,
    der = function(n, pos)
      if not S.is_state[n] then fail(pos, ("der(%s) of a variable that is not a state"):format(n)) end
      S.D[n] = S.D[n] or expr.unknown("der(" .. n .. ")")
      return S.D[n]
    end,
    pre = function(n, pos) return (select(2, lookup(S, n, pos))) end,
    is_discrete = function(var) return var.index > S.ncont end,
  }
  -- in a when-equation's body inputs are read at the event's instant
  S.cx_reset = setmetatable({
    lookup = function(n, pos, quiet) return lookup(S, n, pos, quiet, S.tables_other) end,
    der = function(_, pos) fail(pos, "der(...) in a when-equation's body is not supported") end,
  }, { __index = S.cx })
  S.param_cx = {
    fail = fail,
    lookup = function(n, pos)
      local v = S.vars[n]
      if n == "time" or (v and v.role ~= "parameter" and v.role ~= "constant") then
        fail(pos, ("a parameter's binding or a start value reads '%s', which is not a parameter"):format(n))
      end
      if not v then fail(pos, ("unknown name '%s'"):format(n)) end
      return "node", param_value(S, v, pos)
    end,
    der = function(_, pos) fail(pos, "der(...) in a parameter's binding") end,
    pre = function(_, pos) fail(pos, "pre(...) in a parameter's binding") end,
  }
end

-- Outputs: the variables declared output; one an equation 'y' = <expr>
-- defines and nothing else reads is an output only (not an algebraic).
local function output_definitions(S, model)
  S.output_def = {}
  for eq, v in defining_equations(S, model) do
    if v.output and v.base == "Real" and not v.discrete and not S.is_state[v.name] and not S.when_set[v.name]
        and (S.reads[v.name] or 0) == 1 and not mexpr.names(eq.rhs)[v.name] then
      S.output_def[v.name] = eq
    end
  end
end

-- Input tables ------------------------------------------------------------------

-- A function whose external annotation is __salta_table(t = {...}, v =
-- {...}, interp = "linear") or (csv = "file.csv", t = "column", v =
-- "column"): an input table read as name(arg).
local function table_input(S, fn)
  local spec
  for _, m in ipairs(fn.annotation or {}) do
    if m.name == "__salta_table" then spec = m.mods or {} end
  end
  if not spec then S.fail(fn.pos, ("function '%s' is not supported (only __salta_table input tables)"):format(fn.name)) end
  local t = {}
  for _, m in ipairs(spec) do
    local v = m.value
    if v and v.k == "array" then
      local xs = {}
      for i, item in ipairs(v.items) do
        xs[i] = mexpr.literal(item)
        if type(xs[i]) ~= "number" then S.fail(item.pos, "a table's entries must be numbers") end
      end
      t[m.name] = xs
    elseif v then
      t[m.name] = mexpr.literal(v)
      if t[m.name] == nil then S.fail(v.pos, ("__salta_table's %s must be a literal"):format(m.name)) end
    end
  end
  if t.csv then
    local path, why = files.inside(S.dir, t.csv)
    if not path then S.fail(fn.pos, ("input table '%s': csv '%s': %s"):format(fn.name, t.csv, why)) end
    t.csv = path
  end
  local ok, tab = pcall(input.new, t)
  if not ok then S.fail(fn.pos, ("input table '%s': %s"):format(fn.name, tostring(tab))) end
  return tab
end

-- Start values -------------------------------------------------------------------

-- initial equation: 'x' = <expression of the parameters> (a start value).
local function initial_equations(S, list)
  for _, eq in ipairs(list) do
    if not (eq.k == "eq" and eq.lhs.k == "name" and S.xvar[eq.lhs.v]) then
      S.fail(eq.pos, "an initial equation must read 'state' = <expression of the parameters>")
    end
    S.start_expr[eq.lhs.v] = mexpr.value(S.param_cx, eq.rhs)
  end
end

-- The start of a variable: an expression of the parameters (its start
-- attribute, an initial equation or when initial()).
local function start_of(S, v)
  if S.start_expr[v.name] then return S.start_expr[v.name] end
  local a = v.attrs.start
  if not a then return expr.ZERO end
  return mexpr.value(S.param_cx, a)
end

local function starts(S)
  local x0, start, any = {}, {}, false
  for i, v in ipairs(S.x) do
    start[i] = start_of(S, v)
    x0[i] = expr.eval(start[i], S.nominal)
    any = any or start[i].op ~= "const"
  end
  local z0 = {}
  for _, v in ipairs(S.z) do z0[v.name] = expr.eval(start_of(S, v), S.nominal) end
  return x0, any and start or nil, z0
end

-- Outputs ---------------------------------------------------------------------------

-- The variables declared output, or else every variable (the states, the
-- discrete variables, the algebraics and the inlined ones, in their order).
local function outputs(S)
  local list = #S.outputs > 0 and S.outputs or nil
  if not list then
    list = {}
    for _, v in ipairs(S.order) do if v.role == "variable" then list[#list + 1] = v end end
  end
  local names, h = {}, {}
  for i, v in ipairs(list) do
    names[i] = v.name
    local def = S.output_def[v.name]
    h[i] = def and mexpr.value(S.cx, def.rhs) or mexpr.value(S.cx, { k = "name", v = v.name, pos = v.pos })
  end
  return names, h
end

-- Assembly ----------------------------------------------------------------------

-- The final algebraics: the known ones substituted, der(x) placeholders
-- replaced by f (or a new algebraic der(x)); go rewrites an expression.
local function renumber(S, f)
  local zn, z0, zv, zmap = {}, {}, {}, {}
  for _, v in ipairs(S.z) do
    local old = S.zvar[v.name]
    if S.known[old] then
      zmap[old] = S.known[old]
    else
      local j = #zn + 1
      zn[j], z0[j], zv[j] = v.name, S.z_start[v.name], expr.var("z", j, v.name)
      if zv[j] ~= old then zmap[old] = zv[j] end
    end
  end
  local goz, map, fx = expr.substituter(zmap), {}, {}
  for k, val in pairs(zmap) do map[k] = val end
  for i = 1, S.ncont do
    if f[i] then
      fx[i] = goz(f[i])
    else
      local j = #zn + 1
      zn[j], z0[j] = "der(" .. S.x[i].name .. ")", 0.0
      zv[j] = expr.var("z", j, zn[j])
      fx[i] = zv[j]
    end
    map[S.D[S.x[i].name]] = fx[i]
  end
  return expr.substituter(map), fx, zn, z0, zv
end

local function event_lists(d, events, go)
  local named = {}
  for j, ev in ipairs(events) do named[j] = { comment = ev.comment } end
  d.e_names, d.e_dir, d.e, d.r, d.e_terminal = frontend.event_names(named), {}, {}, {}, {}
  for j, ev in ipairs(events) do
    local r = {}
    for i, v in pairs(ev.r) do r[i] = go(expr.lift(v)) end
    d.e_dir[j], d.e[j], d.r[j], d.e_terminal[j] = ev.dir, go(ev.guard), r, ev.terminal
  end
end

-- Translates the equations, the outputs and the events with the model's
-- hidden states being made (cond.begin .. finish).
local function translate(S, model)
  S.whens, S.asserts, S.static_asserts = {}, {}, {}
  cond.begin(S.name, #S.x + 1)
  local ok, err = pcall(function()
    S.rows = equations.residuals(S, model.equations, {})
    cond.modes_off()
    S.y_names, S.h = outputs(S)
    S.events = {}
    for _, w in ipairs(S.whens) do mevents.when_equation(S, w, S.events) end
    for _, a in ipairs(S.asserts) do mevents.assert_equation(S, a, S.events) end
  end)
  local hidden = cond.finish()
  if not ok then error(err, 0) end
  return hidden
end

local function prepare(S, model, functions)
  contexts(S)
  for _, dcl in ipairs(model.declarations) do declare(S, dcl) end
  scan(S, model)
  inline_definitions(S, model)
  output_definitions(S, model)
  variables(S)
  S.T, S.nominal, S.resolving, S.inlining, S.start_expr = expr.var("t", 1, "t"), {}, {}, {}, {}
  parameters(S)
  for i, n in ipairs(S.p_names) do S.nominal[S.param_expr[n]] = S.p_values[i] end
  for _, v in ipairs(S.order) do
    if v.role == "parameter" or v.role == "constant" then param_value(S, v, v.pos) end
  end
  param_info(S)
  S.inputs = {}
  for n, fn in pairs(functions) do S.inputs[n] = table_input(S, fn) end
  local dd = { name = S.name, vars = { t = S.T } }
  S.uses_held, S.uses_other = {}, {}
  S.tables_held = frontend.with_inputs({}, dd, S.inputs, S.uses_held, true)
  S.tables_other = frontend.with_inputs({}, dd, S.inputs, S.uses_other, false)
  initial_equations(S, model.initial)
end

local function describe(S, model, functions)
  prepare(S, model, functions)
  local hidden = translate(S, model)   -- first: when initial() gives start values
  local x0, start, z0 = starts(S)
  S.z_start = z0
  S.known = equations.eliminate_known(S, S.rows)
  local go, fx, zn, z0f, zv = renumber(S, equations.solve_derivatives(S, S.rows))
  local d = { name = S.name, x_names = {}, x_start = x0, z_names = zn, z_start = z0f, p_names = S.p_names,
    p_nominal = S.p_values, n_continuous = S.ncont, discrete = {}, x_mode = {}, start = start, inputs = S.inputs }
  local xv, pv = {}, {}
  for i, v in ipairs(S.x) do
    d.x_names[i], xv[i] = v.name, S.xvar[v.name]
    if i > S.ncont then
      d.discrete[v.name] = v.base == "Boolean" and "boolean" or v.base == "Integer" and "integer" or "number"
    end
  end
  for i, n in ipairs(S.p_names) do pv[i] = S.param_expr[n] end
  d.vars = { x = xv, z = zv, p = pv, t = S.T }
  d.f, d.g = fx, {}
  for i = S.ncont + 1, #S.x do d.f[i] = expr.ZERO end
  for _, r in ipairs(S.rows) do if not r.removed then d.g[#d.g + 1] = go(r.e) end end
  d.y_names, d.h = S.y_names, {}
  for i, e in ipairs(S.h) do d.h[i] = go(expr.lift(e)) end
  mevents.split_asserts(S, go)
  event_lists(d, S.events, go)
  for _, h in ipairs(hidden) do
    if h.guard then h.guard = go(h.guard) end
    if h.value then h.value = go(h.value) end
  end
  hybrid.add_hidden_states(d, hidden)
  local seen = {}
  for _, n in ipairs(d.e_names) do seen[n] = true end
  hybrid.add_hidden_events(d, S.name, seen)
  d.input_tables, d.input_checks = hybrid.input_tables(S.uses_held, S.uses_other, S.T)
  return d
end

-- Files ---------------------------------------------------------------------------

-- The model of a file's classes: opts.model, else the only one, else the
-- one named as its package.
local function find_model(S, classes, want)
  local models, types, fns, top = {}, {}, {}, nil
  local function walk(list)
    for _, c in ipairs(list) do
      if c.kind == "package" then top = top or c.name; walk(c.classes)
      elseif c.kind == "model" then models[#models + 1] = c
      elseif c.kind == "type" then types[c.name] = c
      elseif c.kind == "function" then fns[c.name] = c end
    end
  end
  walk(classes)
  S.types = types
  local names = {}
  for i, m in ipairs(models) do
    names[i] = m.name
    if m.name == want or (not want and (#models == 1 or m.name == top)) then return m, fns end
  end
  if #models == 0 then error(("%s: no model in the file"):format(S.file), 0) end
  error(("%s: %s (models: %s; choose one with opts.model)"):format(S.file, want and ("no model '" .. want .. "'")
    or "several models", table.concat(names, ", ")), 0)
end

-- Checks run after every simulate: asserts on the parameters, an assert's
-- terminal event, and asserts already violated at the start.
local function assert_checks(S, d)
  local checks = {}
  for j, n in ipairs(d.e_names) do
    local ev = S.events[j]
    if ev and ev.assert then checks[#checks + 1] = { index = j, name = n, check = ev.assert } end
  end
  local static = S.static_asserts
  return function(m, tr, p)
    local env = {}
    for i, v in ipairs(d.vars.p) do env[v] = p[i] end
    for _, a in ipairs(static) do
      local g = expr.eval(a.guard, env)
      if a.dir * g > 0 then error(("model '%s': assert failed: %s (%s)"):format(m.name, a.message, expr.show(a.guard)
        .. (a.dir < 0 and " < 0" or " > 0")), 0) end
    end
    local te = tr:stats().terminal_event
    for _, c in ipairs(checks) do
      if te == c.name then
        error(("model '%s': assert failed at t = %.10g: %s"):format(m.name, tr.t_end, c.check.message), 0)
      end
    end
    if #checks > 0 and #tr.t > 0 then
      local x, z = {}, {}
      for i, n in ipairs(m.states) do x[i] = tr.x[n][1] end
      for i, n in ipairs(m.algebraics) do z[i] = tr.z[n][1] end
      local gs = m:eval("guard", tr.t[1], x, z, p)
      for _, c in ipairs(checks) do
        if c.check.dir * gs[c.index] > 0 then
          error(("model '%s': assert failed at t = %.10g: %s"):format(m.name, tr.t[1], c.check.message), 0)
        end
      end
    end
  end
end

local function experiment(S, model)
  for _, m in ipairs(model.annotation or {}) do
    if m.name == "experiment" then
      local ex = {}
      local keys = { StartTime = "t0", StopTime = "tf", Tolerance = "rtol", Interval = "interval" }
      for _, a in ipairs(m.mods or {}) do
        local v = a.value and mexpr.literal(a.value)
        if keys[a.name] and type(v) == "number" then ex[keys[a.name]] = v end
      end
      return ex
    end
  end
end

local OPTIONS = { name = "string", model = "string", backend = "string", cache_dir = "string", structural = "boolean" }

local function check_options(opts)
  for k, v in pairs(opts) do
    if not OPTIONS[k] then
      local keys = {}
      for o in pairs(OPTIONS) do keys[#keys + 1] = o end
      table.sort(keys)
      error(("salta.load_modelica: unknown option '%s' (options: %s)"):format(tostring(k), table.concat(keys, ", ")), 0)
    end
    if type(v) ~= OPTIONS[k] then
      error(("salta.load_modelica: option '%s' must be a %s, got %s"):format(k, OPTIONS[k], type(v)), 0)
    end
  end
end

-- describe_text(src, file, opts): the description of a Base Modelica text,
-- and the import's state (for the model's extra fields).
function M.describe_text(src, file, opts)
  opts = opts or {}
  local S = { src = src, file = file or "modelica", dir = (file or ""):match("^(.*)[/\\]") or ".", vars = {}, order = {} }
  local model, fns = find_model(S, parse.parse(src, S.file), opts.model)
  S.name = opts.name or model.name
  local d = describe(S, model, fns)
  return d, S, model
end

-- load(path, opts) -> a compiled model (salta.model.build) with
-- experiment, param_info and dependent as read from the file.
function M.load(path, opts)
  opts = opts or {}
  if type(path) ~= "string" then error("salta.load_modelica: expects a file path", 2) end
  check_options(opts)
  local ok, why = files.readable(path)
  if not ok then error(("salta.load_modelica: %s: %s"):format(path, why), 0) end
  local fh = assert(io.open(path, "rb"))
  local src = fh:read("a")
  fh:close()
  local d, S, model = M.describe_text(src, path, opts)
  local m = require("salta.model").build(d, { backend = opts.backend, cache_dir = opts.cache_dir,
    structural = opts.structural })
  m.experiment = experiment(S, model)
  m.param_info, m.dependent, m.dependent_nodes = S.param_info, {}, S.dependent
  for _, dp in ipairs(S.dependent) do m.dependent[dp.name] = expr.show(dp.binding) end
  m.after_simulate = assert_checks(S, d)
  m:after_simulate({ t = {}, stats = function() return {} end }, m:vector("params", nil, m.params, m.p0))
  return m
end

return M
