-- salta.spec: loads the reference's exported model specs (JSON or YAML).
--
-- A spec holds equations as strings in flat-Modelica/Python syntax. They are
-- parsed straight into expression nodes (lua/salta/spec_parse.lua), so
-- a spec becomes the same symbolic description a salta.dae{} model traces to.

local expr = require("salta.expr")
local names = require("salta.names")
local index_of, printable = names.index_of, names.printable
local files = require("salta.files")
local cond = require("salta.cond")
local input = require("salta.input")
local hybrid = require("salta.hybrid")
local param_info = require("salta.param_info")
local frontend = require("salta.frontend")
local event_names, make_vars, with_inputs = frontend.event_names, frontend.make_vars, frontend.with_inputs

local M = {}

-- Nulls ----------------------------------------------------------------------

-- cjson and lyaml each have their own null sentinel; treat both (and a
-- missing key) alike so the two formats share one schema.
local NULL = {}
for _, name in ipairs({ "cjson", "lyaml" }) do
  local ok, mod = pcall(require, name)
  if ok and type(mod) == "table" and mod.null ~= nil then NULL[mod.null] = true end
end

local function is_null(v) return v == nil or NULL[v] == true end

-- A field that may be null, one string or a list of strings, as a list.
local function list_of(v)
  if is_null(v) then return {} end
  if type(v) ~= "table" then return { v } end
  return v
end

local parse = require("salta.spec_parse")
local fail, new_parser = parse.fail, parse.new
M.parse_expression = parse.expression

-- Declarations ------------------------------------------------------------------------

local function number_value(model, what, d, key, allow_expr)
  local v = d[key]
  if is_null(v) then v = 0.0 end
  if type(v) == "boolean" then v = v and 1.0 or 0.0 end
  if type(v) == "string" then v = tonumber(v) or v end
  if allow_expr and type(v) == "string" then return 0.0 end   -- an expression: parse_starts
  if type(v) ~= "number" then
    error(("model '%s': %s '%s' has a %s %s, expected a number"):format(model, what, d.name, type(v), key), 0)
  end
  -- a bool parameter is a 0/1 switch whatever number the file holds
  if d.type == "bool" then v = v ~= 0 and 1.0 or 0.0 end
  return v + 0.0
end

-- names, values of a list of {name, <key> = value} entries, in file order;
-- a parameter's min, max, nominal and unit in info (salta.param_info).
local function declarations(model, what, list, key, allow_expr)
  local names, values, info = {}, {}, {}
  for i, d in ipairs(list_of(list)) do
    if type(d) ~= "table" or type(d.name) ~= "string" or d.name == "" then
      error(("model '%s': %s[%d] has no name"):format(model, what, i), 0)
    end
    names[i], values[i] = d.name, number_value(model, what, d, key, allow_expr)
    if what == "parameter" then
      local attrs = {}
      for _, k in ipairs(param_info.KEYS) do if not is_null(d[k]) then attrs[k] = d[k] end end
      info[d.name] = param_info.read(model, d.name, values[i], attrs)
    end
  end
  return names, values, info
end

-- Each name denotes one thing; "time" is the independent variable.
local function check_unique(model, lists)
  local seen = { time = "the time variable" }
  for _, l in ipairs(lists) do
    for _, n in ipairs(l.names) do
      if seen[n] then
        error(("model '%s': name '%s' is declared as %s and again as %s"):format(model, n, seen[n], l.what), 0)
      end
      seen[n] = l.what
    end
  end
end

-- Equations ---------------------------------------------------------------------------

local function equation_text(ctx, s)
  if type(s) ~= "string" then fail(ctx, ("expected an equation string, got %s"):format(type(s))) end
  return s
end

-- der(<state>) = <expr>, matched to states by name.
local function parse_f(d, env, list)
  local xi, f, where = index_of(d.x_names), {}, {}
  for k, s in ipairs(list_of(list)) do
    local ctx = { model = d.name, label = ("f[%d]"):format(k) }
    local p = new_parser(equation_text(ctx, s), ctx, env)
    local der = p:expect_name()
    if der.v ~= "der" then p:fail("an f equation must read der(<state>) = <expression>", der) end
    p:expect("(")
    local st = p:expect_name()
    local i = xi[st.v]
    if not i then p:fail(("der(%s): '%s' is not a state"):format(st.v, st.v), st) end
    if where[i] then p:fail(("second equation for der(%s) (the first is %s)"):format(st.v, where[i]), st) end
    p:expect(")")
    p:expect("=")
    f[i], where[i] = p:expression(0), ctx.label
    p:finish()
  end
  for i, n in ipairs(d.x_names) do
    if not f[i] then error(("model '%s': f: no equation der(%s) = ... for state '%s'"):format(d.name, n, n), 0) end
  end
  return f
end

local function is_zero(n) return n.op == "const" and n.value == 0 end

-- 0 = e, e = 0, or lhs = rhs (the residual lhs - rhs).
local function parse_g(d, env, list)
  local g = {}
  for k, s in ipairs(list_of(list)) do
    local ctx = { model = d.name, label = ("g[%d]"):format(k) }
    local lhs, rhs = new_parser(equation_text(ctx, s), ctx, env):equation()
    g[k] = is_zero(lhs) and rhs or (is_zero(rhs) and lhs or expr.sub(lhs, rhs))
  end
  if #g ~= #d.z_names then
    error(("model '%s': g has %d equations for %d algebraic variables"):format(d.name, #g, #d.z_names), 0)
  end
  return g
end

-- No h: the outputs are the states. Otherwise name = expr per output.
local function parse_h(d, env, list)
  local items = list_of(list)
  if #items == 0 then
    local y, h = {}, {}
    for i, n in ipairs(d.x_names) do y[i], h[i] = n, d.vars.x[i] end
    return y, h
  end
  local y, h, seen = {}, {}, {}
  for k, s in ipairs(items) do
    local ctx = { model = d.name, label = ("h[%d]"):format(k) }
    local p = new_parser(equation_text(ctx, s), ctx, env)
    local t = p:expect_name()
    p:expect("=")
    if seen[t.v] then p:fail(("output '%s' is defined twice"):format(t.v), t) end
    seen[t.v] = true
    y[k], h[k] = t.v, p:expression(0)
    p:finish()
  end
  return y, h
end

-- Reinit ------------------------------------------------------------------------------

-- The environment of one reinit equation: outside prev(...) a state name is
-- its post-event value, a fresh unknown; only one state may appear so.
local function reinit_env(d, base, rec, xi, zi)
  return setmetatable({}, { __index = function(_, name)
    local i = xi[name]
    if i then
      if not rec.target then rec.target, rec.u = i, expr.unknown(name .. "+") end
      if rec.target == i then return rec.u end
      return ("reinit sets one state per equation, but both '%s' and '%s' appear after the event "
        .. "(outside prev(...))"):format(d.x_names[rec.target], name)
    end
    if zi[name] then
      return ("algebraic variable '%s' after the event is not supported in reinit "
        .. "(only states are reset; prev(%s) is its pre-event value)"):format(name, name)
    end
    return base[name]
  end })
end

-- The post-event value of the target from lhs = rhs: explicit, solved
-- symbolically when linear in it, else a Newton root from the pre-event value.
local function solve_reinit(p, lhs, rhs, rec, pre, name)
  local u = rec.u
  if lhs == u and not expr.deps(rhs)[u] then return rhs end
  local res = expr.sub(lhs, rhs)
  local d1 = expr.diff(res, u)
  if is_zero(d1) then
    p:fail(("the equation does not determine '%s' (its residual does not vary with it)"):format(name))
  end
  return expr.solve_linear(res, u) or expr.implicit(res, u, pre)
end

local function parse_reinit(d, base, r, items, label)
  local set_by, xi, zi = {}, index_of(d.x_names), index_of(d.z_names)
  local terminal = false
  for k, s in ipairs(items) do
    local ctx = { model = d.name, label = #items == 1 and label or ("%s[%d]"):format(label, k) }
    if type(s) == "string" and s:match("^%s*terminate%s*%(.*%)%s*$") then
      terminal = true
      goto continue
    end
    local rec = {}
    local p = new_parser(equation_text(ctx, s), ctx, reinit_env(d, base, rec, xi, zi), base)
    local lhs, rhs = p:equation()
    local i = rec.target
    if not i then p:fail("no state appears after the event (outside prev(...)), so nothing is reset") end
    if set_by[i] then
      p:fail(("state '%s' is already reset by %s"):format(d.x_names[i], set_by[i]))
    end
    set_by[i] = ctx.label
    r[i] = solve_reinit(p, lhs, rhs, rec, d.vars.x[i], d.x_names[i])
    ::continue::
  end
  return terminal
end

-- Events ----------------------------------------------------------------------------

-- The when clauses and their elsewhen branches, each an event (an
-- elsewhen branch is its own event: branches firing at one instant form a
-- group, so two setting one variable are an error, not a priority).
local function parse_events(d, env, env_reinit, list)
  local clauses, flat = list_of(list), {}
  for j, c in ipairs(clauses) do
    if type(c) ~= "table" then
      error(("model '%s': when[%d] must be a table (condition, reinit), got %s"):format(d.name, j, tostring(c)), 0)
    end
    flat[#flat + 1] = { clause = c, label = ("when[%d]"):format(j) }
    for k, b in ipairs(list_of(c.elsewhen)) do
      if type(b) ~= "table" then
        error(("model '%s': when[%d] elsewhen[%d] must be a table (condition, reinit), got %s"):format(
          d.name, j, k, tostring(b)), 0)
      end
      flat[#flat + 1] = { clause = b, label = ("when[%d] elsewhen[%d]"):format(j, k) }
    end
  end
  local plain = {}
  for k, f in ipairs(flat) do plain[k] = f.clause end
  d.e_names, d.e_dir, d.e, d.r, d.e_terminal = event_names(plain), {}, {}, {}, {}
  for j, f in ipairs(flat) do
    local c, label = f.clause, f.label
    local ctx = { model = d.name, label = label .. " condition" }
    d.e[j], d.e_dir[j] = new_parser(equation_text(ctx, c.condition), ctx, env):condition()
    local r = {}   -- the states the reinit sets
    d.e_terminal[j] = parse_reinit(d, env_reinit, r, list_of(c.reinit), label .. " reinit")
    d.r[j] = r
  end
end

-- Description -------------------------------------------------------------------------

-- describe_spec(tbl, name): the decoded spec table as a model description.
-- Start values written as expressions of the parameters: parsed into
-- d.start (constants for the others), their nominal values into x_start.
local function parse_starts(d, list)
  local penv = { }
  for i, n in ipairs(d.p_names) do penv[n] = d.vars.p[i] end
  local values, any = {}, false
  for i, v in ipairs(d.vars.p) do values[v] = d.p_nominal[i] end
  local start = {}
  for i, decl in ipairs(list_of(list)) do
    if type(decl.start) == "string" and not tonumber(decl.start) then
      local ctx = { model = d.name, label = ("state '%s' start"):format(decl.name) }
      local p = new_parser(decl.start, ctx, setmetatable({}, { __index = function(_, n)
        return penv[n] or ("a start value depends on the parameters only, not on '%s'"):format(n)
      end }))
      start[i] = p:expression(0)
      p:finish()
      d.x_start[i] = expr.eval(start[i], values)
      any = true
    else
      start[i] = expr.const(d.x_start[i])
    end
  end
  if any then
    for i = #start + 1, #d.x_names do start[i] = expr.const(d.x_start[i]) end
    d.start = start
  end
end

-- Input tables: { name, t = [...], v = [...], interp } or { name, csv =
-- path (relative to the spec's folder), t = column, v = column, interp }.
local function parse_inputs(d, list, dir)
  local inputs = {}
  for i, u in ipairs(list_of(list)) do
    if type(u) ~= "table" or type(u.name) ~= "string" or u.name == "" then
      error(("model '%s': inputs[%d] has no name"):format(d.name, i), 0)
    end
    local spec = {}   -- every field salta.table checks (a misspelt one is an error there)
    for k, v in pairs(u) do if not is_null(v) then spec[k] = v end end
    if not is_null(u.csv) then
      local path, why = files.inside(dir, u.csv)
      if not path then
        error(("model '%s': inputs[%d] ('%s') csv '%s': %s"):format(d.name, i, u.name, printable(u.csv), why), 0)
      end
      spec.csv = path
    end
    local ok, tab = pcall(input.new, spec)
    if not ok then error(("model '%s': input '%s': %s"):format(d.name, u.name, tostring(tab)), 0) end
    inputs[u.name] = tab
  end
  return inputs
end

-- describe_spec(tbl, name, dir): the decoded spec table as a model
-- description; dir: the folder of the spec file (for input CSV files).
function M.describe_spec(tbl, name, dir)
  name = name or "model"
  local d = { name = name }
  d.x_names, d.x_start = declarations(name, "state", tbl.states, "start", true)
  local ncont = #d.x_names
  local dn, d0 = declarations(name, "discrete variable", tbl.discrete, "start")
  d.discrete = {}
  for i, n in ipairs(dn) do
    d.x_names[ncont + i], d.x_start[ncont + i] = n, d0[i]
    local decl = list_of(tbl.discrete)[i]
    d.discrete[n] = (decl.type == "bool" or decl.type == "boolean" or type(decl.start) == "boolean") and "boolean"
      or "number"
  end
  d.z_names, d.z_start = declarations(name, "algebraic variable", tbl.alg_vars, "start")
  d.p_names, d.p_nominal, d.param_info = declarations(name, "parameter", tbl.parameters, "value")
  local inputs = parse_inputs(d, tbl.inputs, dir)
  local in_names = {}
  for n in pairs(inputs) do in_names[#in_names + 1] = n end
  check_unique(name, { { names = d.x_names, what = "a state" },
    { names = d.z_names, what = "an algebraic variable" }, { names = d.p_names, what = "a parameter" },
    { names = in_names, what = "an input" } })
  d.vars = { x = make_vars("x", d.x_names), z = make_vars("z", d.z_names),
    p = make_vars("p", d.p_names), t = expr.var("t", 1, "t") }
  local env = { time = d.vars.t }
  for _, kind in ipairs({ "x", "z", "p" }) do
    for i, n in ipairs(d[kind .. "_names"]) do env[n] = d.vars[kind][i] end
  end
  parse_starts(d, tbl.states)
  -- f and g: if-expressions switch at zero-crossings (hidden modes); f, g,
  -- h and conditions follow inputs piece by piece, reinits read them at
  -- the event; the discrete variables' rows of f are 0
  local uses_held, uses_other = {}, {}
  local env_held = with_inputs(env, d, inputs, uses_held, true)
  local env_other = with_inputs(env, d, inputs, uses_other, false)
  cond.begin(name, #d.x_names + 1)
  local ok, err = pcall(function()
    local discrete_names = { table.unpack(d.x_names, ncont + 1) }
    local cont = { name = d.name, x_names = { table.unpack(d.x_names, 1, ncont) }, vars = d.vars }
    d.f = parse_f(cont, env_held, tbl.f)
    for i = 1, #discrete_names do d.f[ncont + i] = expr.ZERO end
    d.g = parse_g(d, env_held, tbl.g)
    cond.modes_off()
    d.y_names, d.h = parse_h(d, env_held, tbl.h)   -- without h: the states, before the hidden ones
    parse_events(d, env_held, env_other, tbl.when)
  end)
  local hidden = cond.finish()
  if not ok then error(err, 0) end
  hybrid.add_hidden_states(d, hidden)
  local seen = {}
  for _, n in ipairs(d.e_names) do seen[n] = true end
  hybrid.add_hidden_events(d, name, seen)
  d.input_tables, d.input_checks = hybrid.input_tables(uses_held, uses_other, d.vars.t)
  d.inputs = inputs
  return d
end

-- Files --------------------------------------------------------------------------------

local function file_error(path, what) error(("salta.load_spec: %s: %s"):format(path, what), 0) end

local function decode_json(text)
  local ok, cjson = pcall(require, "cjson")
  if not ok then return nil, "lua-cjson is not installed" end
  local ok2, t = pcall(cjson.decode, text)
  if not ok2 then return nil, "bad JSON: " .. tostring(t) end
  return t
end

local function decode_yaml(text)
  local ok, lyaml = pcall(require, "lyaml")
  if not ok then return nil, "lyaml is not installed" end
  local ok2, t = pcall(lyaml.load, text)
  if not ok2 then return nil, "bad YAML: " .. tostring(t) end
  return t
end

-- A spec nests a few levels; a file nested hundreds deep is not one, and
-- a YAML loader takes time quadratic in its depth: refused before parsing.
local MAX_NESTING = 64

local function check_nesting(path, text)
  local depth, deepest = 0, 0
  for c in text:gmatch("[%[%]{}]") do
    depth = (c == "[" or c == "{") and depth + 1 or depth - 1
    if depth > deepest then deepest = depth end
  end
  local indent = 0
  for spaces in text:gmatch("\n( *)[^ \n]") do
    if #spaces > indent then indent = #spaces end
  end
  if deepest > MAX_NESTING or indent > 2 * MAX_NESTING then
    file_error(path, ("nested %d levels deep: not a model spec (at most %d)"):format(
      math.max(deepest, indent // 2), MAX_NESTING))
  end
end

-- The extension picks the format; anything else tries JSON, then YAML.
local function read_spec(path)
  local ok, why = files.readable(path)
  if not ok then file_error(path, why) end
  local fh, err = io.open(path, "rb")
  if not fh then file_error(path, "cannot open: " .. tostring(err)) end
  local text = fh:read("a")
  fh:close()
  check_nesting(path, text)
  local ext = (path:match("%.([%w]+)$") or ""):lower()
  local t, why
  if ext == "json" then t, why = decode_json(text)
  elseif ext == "yaml" or ext == "yml" then t, why = decode_yaml(text)
  else
    t, why = decode_json(text)
    if not t then t, why = decode_yaml(text) end
  end
  if why then file_error(path, why) end
  if type(t) ~= "table" then file_error(path, "not a spec (expected a mapping at the top level)") end
  if is_null(t.states) then file_error(path, "missing 'states'") end
  return t
end

local function default_name(path)
  local base = path:match("([^/\\]+)$") or path
  base = base:gsub("%.[^.]*$", "")
  return (base:gsub("^dae_specification_", ""))
end

-- load(path, opts) -> compiled Model. opts.name overrides the model name;
-- the rest goes to salta.model.build (backend, cache_dir).
function M.load(path, opts)
  opts = opts or {}
  require("salta.options").check("load_spec", opts, "salta.load_spec")
  local desc = M.describe_spec(read_spec(path), opts.name or default_name(path), path:match("^(.*)[/\\]"))
  return require("salta.model").build(desc, opts)
end

M.read = read_spec

return M
