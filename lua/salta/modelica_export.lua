-- salta.modelica_export: model:to_modelica(path), any salta model as
-- Base Modelica that salta.load_modelica reads back to the same model.

local M = {}

local function copy(t)
  if t == nil then return nil end
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  return out
end

-- snapshot(desc): the fields of a description that the structural
-- compiler rewrites in place, copied before it runs (the model as traced:
-- its own states, algebraics, equations and events).
function M.snapshot(desc)
  local s = copy(desc)
  for _, k in ipairs({ "x_names", "x_start", "z_names", "z_start", "f", "g", "h", "e", "r", "start", "x_mode" }) do
    s[k] = copy(desc[k])
  end
  s.vars = { x = copy(desc.vars.x), z = copy(desc.vars.z), p = copy(desc.vars.p), t = desc.vars.t }
  s.hidden = {}
  for i, h in ipairs(desc.hidden or {}) do s.hidden[i] = copy(h) end
  return s
end

local expr = require("salta.expr")
local piece = require("salta.piece")
local files = require("salta.files")

-- Names and numbers ------------------------------------------------------------

local function quote(n) return "'" .. n:gsub("[\\']", "\\%0") .. "'" end
M.quote = quote

local function string_lit(s) return '"' .. s:gsub('[\\"]', "\\%0"):gsub("\n", "\\n") .. '"' end

-- The shortest decimal that reads back as the same double.
local function number(v)
  if v ~= v or v == math.huge or v == -math.huge then return nil end
  for _, f in ipairs({ "%.15g", "%.16g", "%.17g" }) do
    local s = f:format(v)
    if tonumber(s) == v then
      if not s:find("[.eEn]") then s = s .. ".0" end
      return s
    end
  end
end

-- Expressions ------------------------------------------------------------------

-- A printer for the model's expressions: pr(node) -> text, prec, where
-- prec orders how tightly the text binds (Modelica: a sign only before
-- the first term of a sum; ^ takes primaries). special maps nodes printed
-- otherwise (input reads, modes); discrete (a set of variables) are
-- printed pre(...) (the values before an event, in a when-equation).
local ATOM, POW, MUL, ADD = 5, 4, 2, 1

local function printer(model, special, discrete, boolean)
  local memo = {}
  local pr
  local function wrap(n, min)
    local s, p = pr(n)
    if p < min then return "(" .. s .. ")" end
    return s
  end
  local function print_node(n)
    local op = n.op
    if special[n] then return special[n](pr), ATOM end
    if op == "const" then
      local s = number(n.value)
      if not s then error(("model '%s': the constant %s has no Modelica literal"):format(model, tostring(n.value)), 0) end
      if n.value < 0 then return "(" .. s .. ")", ATOM end
      return s, ATOM
    end
    if op == "var" then
      if n.kind == "t" then return "time", ATOM end
      if n.kind == "u" then error(("model '%s': an implicit unknown cannot be written as Modelica"):format(model), 0) end
      local s = discrete and discrete[n] and "pre(" .. quote(n.name) .. ")" or quote(n.name)
      -- a Boolean is no number in Modelica: its 0/1 value is an if-expression
      if boolean and boolean[n] then return ("(if %s then 1.0 else 0.0)"):format(s), ATOM end
      return s, ATOM
    end
    if op == "add" then
      if n[2].op == "neg" then return wrap(n[1], ADD) .. " - " .. wrap(n[2][1], MUL), ADD end
      return wrap(n[1], ADD) .. " + " .. wrap(n[2], MUL), ADD
    end
    if op == "neg" then return "-" .. wrap(n[1], MUL), ADD end
    if op == "mul" or op == "div" then
      return wrap(n[1], MUL) .. (op == "mul" and " * " or " / ") .. wrap(n[2], POW), MUL
    end
    if op == "pow" then return wrap(n[1], ATOM) .. " ^ " .. wrap(n[2], ATOM), POW end
    if op == "min" or op == "max" then return op .. "(" .. pr(n[1]) .. ", " .. pr(n[2]) .. ")", ATOM end
    if op == "ifle" then
      return ("(if noEvent(%s <= %s) then %s else %s)"):format(pr(n[1]), pr(n[2]), pr(n[3]), pr(n[4])), ATOM
    end
    if op == "implicit" then
      error(("model '%s': an equation solved by Newton inside a reset (%s) cannot be written as Modelica"):format(
        model, expr.show(n)), 0)
    end
    if expr.unary_num[op] and #n == 1 then return op .. "(" .. pr(n[1]) .. ")", ATOM end
    error(("model '%s': no Modelica form for '%s'"):format(model, op), 0)
  end
  pr = function(n)
    local m = memo[n]
    if not m then
      local s, p = print_node(n)
      m = { s, p }
      memo[n] = m
    end
    return m[1], m[2]
  end
  return function(n) return (pr(n)) end
end

-- The nodes of hidden states printed as what made them: a mode as the
-- comparison it follows, an input's piece by piece value as the read.
local function specials(d)
  local special, by_hash = {}, {}
  for name, tab in pairs(d.inputs or {}) do by_hash[tab.hash] = name end
  for _, h in ipairs(d.hidden or {}) do
    if h.kind == "mode" and h.compare then   -- as written, so that its events keep their names
      local c = h.compare
      special[h.var] = function(pr) return ("(if %s %s %s then 1.0 else 0.0)"):format(pr(c[2]), c[1], pr(c[3])) end
    elseif h.kind == "mode" then
      special[h.var] = function(pr) return ("(if %s < 0.0 then 1.0 else 0.0)"):format(pr(h.guard)) end
    elseif h.kind == "input" then
      local u = h.use
      special[piece.value(u.table, h.var, u.arg)] = function(pr) return quote(u.name) .. "(" .. pr(u.arg) .. ")" end
    end
  end
  -- reads evaluated where they are: salta_in_<hash>_0(arg)
  local meta = { __index = function(t, n)
    if type(n) ~= "table" or not n.op then return nil end
    local hash = n.op:match("^salta_in_(%x+)_0$")
    local name = hash and by_hash[hash]
    if not name then return nil end
    local f = function(pr) return quote(name) .. "(" .. pr(n[1]) .. ")" end
    rawset(t, n, f)
    return f
  end }
  return setmetatable(special, meta)
end

-- Declarations -----------------------------------------------------------------

local function attrs(list)
  local out = {}
  for _, a in ipairs(list) do if a[2] ~= nil then out[#out + 1] = a[1] .. " = " .. a[2] end end
  return #out > 0 and "(" .. table.concat(out, ", ") .. ")" or ""
end

local function param_lines(m, d, pr, out)
  local info = m.param_info or {}
  for i, n in ipairs(d.p_names) do
    local pi = info[n] or {}
    local a = attrs({ { "min", pi.min and number(pi.min) }, { "max", pi.max and number(pi.max) },
      { "nominal", pi.nominal and number(pi.nominal) }, { "unit", pi.unit and string_lit(pi.unit) } })
    out[#out + 1] = ("    parameter Real %s%s = %s%s;"):format(quote(n), a, number(d.p_nominal[i]),
      pi.description and (" " .. string_lit(pi.description)) or "")
  end
  for _, dp in ipairs(m.dependent_nodes or {}) do
    out[#out + 1] = ("    parameter Real %s = %s;"):format(quote(dp.name), pr(dp.binding))
  end
end

-- The start of state i: an expression of the parameters or a number.
local function start_text(d, i, pr)
  local s = d.start and d.start[i]
  if s and s.op ~= "const" then return pr(s) end
  return number(d.x_start[i])
end

local function hidden_set(d)
  local set = {}
  for _, h in ipairs(d.hidden or {}) do set[h.index] = true end
  return set
end

-- Whether the outputs are the default ones (every state, discrete
-- variable and algebraic, by name): then none is marked.
local function default_outputs(d, own)
  local names = {}
  for i = 1, own do names[#names + 1] = { d.x_names[i], d.vars.x[i] } end
  for i, n in ipairs(d.z_names) do names[#names + 1] = { n, d.vars.z[i] } end
  if #names ~= #d.y_names then return false end
  for k, nv in ipairs(names) do
    if d.y_names[k] ~= nv[1] or d.h[k] ~= nv[2] then return false end
  end
  return true
end

local function variable_lines(d, own, pr, out_marks, out)
  for i = 1, own do
    local n = d.x_names[i]
    local o = out_marks[n] and "output " or ""
    if i <= (d.n_continuous or own) then
      out[#out + 1] = ("    %sReal %s(start = %s, fixed = true);"):format(o, quote(n), start_text(d, i, pr))
    elseif d.discrete[n] == "boolean" then
      local s = d.start and d.start[i] and d.start[i].op ~= "const" and pr(d.start[i])
        or (d.x_start[i] ~= 0 and "true" or "false")
      out[#out + 1] = ("    %sBoolean %s(start = %s, fixed = true);"):format(o, quote(n), s)
    else
      out[#out + 1] = ("    %sdiscrete Real %s(start = %s, fixed = true);"):format(o, quote(n), start_text(d, i, pr))
    end
  end
  for i, n in ipairs(d.z_names) do
    out[#out + 1] = ("    %sReal %s(start = %s);"):format(out_marks[n] and "output " or "", quote(n), number(d.z_start[i]))
  end
end

-- Input tables: functions whose external annotation holds the table.
local function table_lines(d, out)
  local names = {}
  for n in pairs(d.inputs or {}) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do
    local tab = d.inputs[n]
    local ts, vs = {}, {}
    for i = 1, #tab.t do ts[i], vs[i] = number(tab.t[i]), number(tab.v[i]) end
    out[#out + 1] = ("  function %s \"an input table (salta.table)\""):format(quote(n))
    out[#out + 1] = "    input Real 'u';"
    out[#out + 1] = "    output Real 'y';"
    out[#out + 1] = ("  external \"C\" annotation(__salta_table(interp = %s,\n      t = {%s},\n      v = {%s}));"):format(
      string_lit(tab.interp), table.concat(ts, ", "), table.concat(vs, ", "))
    out[#out + 1] = ("  end %s;"):format(quote(n))
  end
end

-- Events ------------------------------------------------------------------------

-- The number of the model's own events (the hidden ones come after them).
local function own_events(d)
  local n = #d.e - 2 * #(d.modes or {})
  for j in pairs(d.e_hidden or {}) do if d.e_hidden[j] then n = n - 1 end end
  return n
end

local function condition_text(g, dir, pr)
  local a, b = g, expr.ZERO
  if g.op == "add" and g[2].op == "neg" then a, b = g[1], g[2][1]
  elseif g.op == "add" and g[1].op == "const" then a, b = g[2], expr.const(-g[1].value) end
  local A, B = pr(a), pr(b)
  if dir > 0 then return A .. " > " .. B end
  if dir < 0 then return A .. " < " .. B end
  return A .. " > " .. B .. " or " .. A .. " < " .. B
end

-- A value set to discrete variable i: true or false for a Boolean.
local function boolean_value(d, i, r, pr)
  if d.discrete[d.x_names[i]] ~= "boolean" then return pr(r) end
  if r.op == "const" then return r.value ~= 0 and "true" or "false" end
  return ("%s > 0.5"):format(pr(r))
end

local function event_lines(d, pr, pr_reset, out)
  for j = 1, own_events(d) do
    out[#out + 1] = ("    when %s then"):format(condition_text(d.e[j], d.e_dir[j], pr))
    for i = 1, #d.x_names do
      local r = d.r[j][i]
      if r ~= nil and r ~= d.vars.x[i] then
        if i <= (d.n_continuous or #d.x_names) then
          out[#out + 1] = ("      reinit(%s, %s);"):format(quote(d.x_names[i]), pr_reset(r))
        else
          out[#out + 1] = ("      %s = %s;"):format(quote(d.x_names[i]), boolean_value(d, i, r, pr_reset))
        end
      end
    end
    if d.e_terminal[j] then out[#out + 1] = ("      terminate(%s);"):format(string_lit(d.e_names[j])) end
    out[#out + 1] = ("    end when %s;"):format(string_lit(d.e_names[j]))
  end
end

-- Equations, outputs ---------------------------------------------------------------

local function equation_lines(d, own, pr, extra_outputs, out)
  for i = 1, (d.n_continuous or own) do
    out[#out + 1] = ("    der(%s) = %s;"):format(quote(d.x_names[i]), pr(d.f[i]))
  end
  for _, g in ipairs(d.g) do out[#out + 1] = ("    0.0 = %s;"):format(pr(g)) end
  for _, k in ipairs(extra_outputs) do
    out[#out + 1] = ("    %s = %s;"):format(quote(d.y_names[k]), pr(d.h[k]))
  end
end

-- Which outputs are variables marked output, and which need a declaration.
local function output_plan(d, own)
  local marks, extra = {}, {}
  if default_outputs(d, own) then return marks, extra end
  local var_of = {}
  for i = 1, own do var_of[d.x_names[i]] = d.vars.x[i] end
  for i, n in ipairs(d.z_names) do var_of[n] = d.vars.z[i] end
  for k, n in ipairs(d.y_names) do
    if var_of[n] == d.h[k] then marks[n] = true
    elseif var_of[n] then
      error(("model '%s': output '%s' is not the variable of that name: Modelica cannot name both"):format(d.name, n), 0)
    else extra[#extra + 1] = k end
  end
  return marks, extra
end

-- text(m): the model as Base Modelica.
function M.text(m)
  local d = m.source or m.symbolic
  local hidden = hidden_set(d)
  local own = 0
  for i = 1, #d.x_names do if not hidden[i] then own = i end end
  local special = specials(d)
  local discrete, boolean = {}, {}
  for i = (d.n_continuous or own) + 1, own do
    discrete[d.vars.x[i]] = true
    if d.discrete[d.x_names[i]] == "boolean" then boolean[d.vars.x[i]] = true end
  end
  local pr = printer(d.name, special, nil, boolean)
  local pr_reset = printer(d.name, special, discrete, boolean)
  local marks, extra = output_plan(d, own)
  local out = { "//! base 0.1.0", ("package %s"):format(quote(d.name)) }
  table_lines(d, out)
  out[#out + 1] = ("  model %s \"written by salta\""):format(quote(d.name))
  param_lines(m, d, pr, out)
  variable_lines(d, own, pr, marks, out)
  for _, k in ipairs(extra) do out[#out + 1] = ("    output Real %s;"):format(quote(d.y_names[k])) end
  out[#out + 1] = "  equation"
  equation_lines(d, own, pr, extra, out)
  event_lines(d, pr, pr_reset, out)
  local ex = m.experiment
  if ex then
    out[#out + 1] = ("    annotation(experiment(%s));"):format(table.concat((function()
      local a = {}
      for _, kv in ipairs({ { "StartTime", ex.t0 }, { "StopTime", ex.tf }, { "Tolerance", ex.rtol },
        { "Interval", ex.interval } }) do
        if kv[2] then a[#a + 1] = kv[1] .. " = " .. number(kv[2]) end
      end
      return a
    end)(), ", "))
  end
  out[#out + 1] = ("  end %s;"):format(quote(d.name))
  out[#out + 1] = ("end %s;"):format(quote(d.name))
  return table.concat(out, "\n") .. "\n"
end

-- write(m, path): the text written whole or not at all.
function M.write(m, path)
  if type(path) ~= "string" then error(("model '%s': to_modelica expects a file path"):format(m.name), 3) end
  files.write(path, M.text(m), ("model '%s': to_modelica"):format(m.name))
  return path
end

return M
