-- salta.model: the model DSL (salta.dae) and the compiled model object.
--
-- A model is traced once: f, g, h, guards and resets are called with
-- symbolic arguments and return expressions, which the code generator turns
-- into C kernels with exact sparse Jacobians.

local expr = require("salta.expr")
local jit = require("salta.jit")
local names = require("salta.names")
local index_of, printable = names.index_of, names.printable
local options = require("salta.options")
local cond = require("salta.cond")
local input = require("salta.input")
local hybrid = require("salta.hybrid")
local param_info = require("salta.param_info")

local M = {}

local Model = {}
Model.__index = Model
Model.__name = "salta.Model"
M.Model = Model

-- Declarations ----------------------------------------------------------------

-- Normalises a list of declarations into names and values. Accepts
-- {"a", "b"}, {{"a", 1.0}, ...}, {{name = "a", start = 1.0}, ...} and, for
-- maps {a = 1.0, b = 2.0}, sorts by name so the order is reproducible.
-- With allow_fn, a value may be a function (of the parameters): it is
-- returned in fns[i], with values[i] = 0. A parameter's table may carry
-- min, max, nominal and unit ({"k", 1.0, min = 0} or k = {1.0, min = 0}):
-- info[name] (salta.param_info).
local function declarations(model_name, what, decl, value_key, overrides, allow_fn)
  local names, values, seen, fns, info = {}, {}, {}, {}, {}
  decl = decl or {}
  if type(decl) ~= "table" then
    error(("model '%s': %s must be a table, got %s"):format(model_name, what, type(decl)), 0)
  end
  local list = {}
  if #decl > 0 then
    for i, d in ipairs(decl) do
      if type(d) == "string" then list[i] = { d, 0.0 }
      elseif type(d) == "table" then
        list[i] = { d.name or d[1], d[value_key] or d.value or d.start or d[2] or 0.0, d }
      else
        error(("model '%s': %s[%d] must be a name or {name, value}"):format(model_name, what, i), 0)
      end
    end
  else
    for k, v in pairs(decl) do
      if type(v) == "table" then list[#list + 1] = { k, v[value_key] or v.value or v[1], v }
      else list[#list + 1] = { k, v } end
    end
    table.sort(list, function(a, b) return tostring(a[1]) < tostring(b[1]) end)
  end
  for i, d in ipairs(list) do
    local name, v = d[1], d[2]
    if type(name) ~= "string" or name == "" then
      error(("model '%s': %s[%d] has no name"):format(model_name, what, i), 0)
    end
    if seen[name] then error(("model '%s': %s '%s' is declared twice"):format(model_name, what, name), 0) end
    if overrides and overrides[name] ~= nil then v = overrides[name] end
    if allow_fn and type(v) == "function" then
      fns[i], v = v, 0.0
    elseif type(v) ~= "number" then
      error(("model '%s': %s '%s' needs a number%s, got %s"):format(model_name, what, name,
        allow_fn and " or a function of the parameters" or "", type(v)), 0)
    end
    seen[name] = true
    names[i], values[i] = name, v + 0.0
    if what == "parameter" then info[name] = param_info.read(model_name, name, values[i], d[3]) end
  end
  return names, values, fns, info
end
M.declarations = declarations

-- A read-only proxy mapping names (and 1-based indices) to leaf nodes.
local function proxy(model_name, what, kind, names)
  local by_name = {}
  local vars = {}
  for i, n in ipairs(names) do
    vars[i] = expr.var(kind, i, n)
    by_name[n] = vars[i]
  end
  local p = setmetatable({}, {
    __index = function(_, k)
      local v = by_name[k] or (math.type(k) == "integer" and vars[k])
      if v then return v end
      error(("model '%s': unknown %s '%s'"):format(model_name, what, tostring(k)), 2)
    end,
    __newindex = function(_, k)
      error(("model '%s': cannot assign to %s '%s' (closures return their values)"):format(
        model_name, what, tostring(k)), 2)
    end,
  })
  return p, vars
end

-- Tracing ------------------------------------------------------------------------

-- Calls fn(...) and prefixes any error with the model and the equation.
local function trace(model_name, what, fn, ...)
  if type(fn) ~= "function" then
    error(("model '%s': %s must be a function, got %s"):format(model_name, what, type(fn)), 0)
  end
  local ok, res = pcall(fn, ...)
  if not ok then
    local msg = tostring(res)
    if not msg:find("model '" .. model_name .. "'", 1, true) then
      msg = ("model '%s', %s: %s"):format(model_name, what, msg)
    end
    error(msg, 0)
  end
  return res
end

local function check_value(model_name, what, label, v)
  if expr.is_node(v) then return v end
  if type(v) == "number" then return expr.const(v) end
  if type(v) == "boolean" then
    error(("model '%s', %s: %s is a boolean; comparisons are not expressions. %s"):format(
      model_name, what, label, "A condition that switches the dynamics is an event guard (an expression whose sign change fires it)"), 0)
  end
  error(("model '%s', %s: %s must be a number or expression, got %s"):format(model_name, what, label, type(v)), 0)
end

-- Turns what a closure returned into an array matching names: a sequence
-- of exactly #names values, or a table keyed by those names.
local function collect(model_name, what, res, names)
  if type(res) ~= "table" or expr.is_node(res) then
    error(("model '%s', %s: must return a table of %d values (%s), got %s"):format(
      model_name, what, #names, table.concat(names, ", "), expr.is_node(res) and "one expression" or type(res)), 0)
  end
  local n, count = #res, 0
  for _ in pairs(res) do count = count + 1 end
  local out = {}
  if n > 0 or count == 0 then
    if n ~= #names or count ~= n then
      error(("model '%s', %s: returned %d values, expected %d (one per %s)"):format(
        model_name, what, count, #names, #names > 0 and table.concat(names, ", ") or "nothing"), 0)
    end
    for i = 1, n do out[i] = check_value(model_name, what, "value " .. i, res[i]) end
  else
    local index, unknown = index_of(names), {}
    for k in pairs(res) do if not index[k] then unknown[#unknown + 1] = tostring(k) end end
    if #unknown > 0 then
      table.sort(unknown)
      error(("model '%s', %s: returned a value for unknown name '%s' (expected %s)"):format(
        model_name, what, unknown[1], table.concat(names, ", ")), 0)
    end
    -- in declaration order: a number becomes a constant node, and nodes
    -- are numbered as they are made (see expr.leaf_before)
    for i, nm in ipairs(names) do
      if res[nm] == nil then
        error(("model '%s', %s: no value for '%s'"):format(model_name, what, nm), 0)
      end
      out[i] = check_value(model_name, what, "'" .. nm .. "'", res[nm])
    end
  end
  return out
end

local DIRECTIONS = { up = 1, down = -1, both = 0 }

-- Start values given as functions of the parameters: traced with the
-- parameter proxy into expressions of p alone (one per state, constants for
-- the others), or nil when every start value is a number. x0 takes their
-- values at the nominal parameters.
local function start_values(name, xn, x0, fns, P, pv, p0)
  if next(fns) == nil then return nil end
  local env = {}
  for i, v in ipairs(pv) do env[v] = p0[i] end
  local exprs = {}
  for i, n in ipairs(xn) do
    if fns[i] then
      local what = "start of state '" .. n .. "'"
      local v = trace(name, what, fns[i], P)
      if type(v) ~= "number" and not expr.is_node(v) then
        error(("model '%s', %s: must return a number or an expression of the parameters, got %s"):format(
          name, what, type(v)), 0)
      end
      exprs[i] = check_value(name, what, "the start value", v)
      for dep in pairs(expr.deps(exprs[i])) do
        if dep.kind ~= "p" then
          error(("model '%s', %s: reads '%s'; a start value depends on the parameters only"):format(
            name, what, expr.show(dep)), 0)
        end
      end
      x0[i] = expr.eval(exprs[i], env)
      if x0[i] ~= x0[i] or x0[i] == math.huge or x0[i] == -math.huge then
        error(("model '%s', %s: is %s at the nominal parameters"):format(name, what, tostring(x0[i])), 0)
      end
    else
      exprs[i] = expr.const(x0[i])
    end
  end
  return exprs
end

-- Discrete variables: { {"on", true}, {"count", 0} } (or a map): names,
-- values (booleans as 1 and 0) and which were booleans.
local function discrete_declarations(name, decl)
  local list, boolean = {}, {}
  if decl == nil then return {}, {}, {} end
  if type(decl) ~= "table" then
    error(("model '%s': discrete must be a table, got %s"):format(name, type(decl)), 0)
  end
  local function value(v, i)
    if type(v) == "boolean" then boolean[i] = true; return v and 1 or 0 end
    return v
  end
  if #decl > 0 then
    for i, d in ipairs(decl) do
      if type(d) == "table" then
        list[i] = { d.name or d[1], value(d.start or d.value or d[2] or 0, i) }
      else
        list[i] = d
      end
    end
  else
    local keys = {}
    for k in pairs(decl) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    for i, k in ipairs(keys) do list[i] = { k, value(decl[k], i) } end
  end
  local names, values = declarations(name, "discrete variable", list, "start")
  return names, values, boolean
end

-- g traced into d.g (algebraic equations, one per algebraic).
local function traced_g(d, spec, name, zn, T, X, Z, P, U)
  if #zn == 0 then
    d.g = {}
    return
  end
  if not spec.g then error(("model '%s': %d algebraics but no g"):format(name, #zn), 0) end
  local gn = {}
  for i = 1, #zn do gn[i] = "equation " .. i end
  d.g = collect(name, "g", trace(name, "g", spec.g, T, X, Z, P, U), gn)
end

-- h traced into d.y_names and d.h (every state and algebraic without h;
-- the hidden states come later).
local function traced_h(d, spec, T, X, Z, P, U)
  local name = d.name
  if not spec.h then
    d.y_names, d.h = {}, {}
    local nv = #d.x_names
    for i = 1, nv do d.y_names[i], d.h[i] = d.x_names[i], d.vars.x[i] end
    for i, n in ipairs(d.z_names) do d.y_names[nv + i], d.h[nv + i] = n, d.vars.z[i] end
    return
  end
  local res = trace(name, "h", spec.h, T, X, Z, P, U)
  local yn = spec.outputs
  if not yn then
    yn = {}
    if type(res) == "table" and #res == 0 then
      for k in pairs(res) do yn[#yn + 1] = k end
      table.sort(yn)
    else
      for i = 1, type(res) == "table" and #res or 0 do yn[i] = "y" .. i end
    end
  end
  d.y_names, d.h = yn, collect(name, "h", res, yn)
end

-- The reset of event 'what' traced into r (the states it names, by index).
local function traced_reset(d, what, fn, args, x_index)
  local name, xn = d.name, d.x_names
  local r = {}
  if not fn then return r end
  local res = trace(name, what .. " reset", fn, table.unpack(args))
  if type(res) ~= "table" or expr.is_node(res) then
    error(("model '%s', %s reset: must return {state = value, ...}, got %s"):format(name, what, type(res)), 0)
  end
  local named = {}
  for k, v in pairs(res) do
    local i = x_index[k] or (math.type(k) == "integer" and k >= 1 and k <= #xn and k)
    named[#named + 1] = { i = i, k = tostring(k), v = v }
  end
  -- by state, not by pairs() (as in collect): the traced order is the generated C's
  table.sort(named, function(a, b)
    if (a.i or 0) ~= (b.i or 0) then return (a.i or 0) < (b.i or 0) end
    return a.k < b.k
  end)
  for _, nv in ipairs(named) do
    local i, v = nv.i, nv.v
    if not i then
      error(("model '%s', %s reset: names unknown state '%s' (states: %s)"):format(
        name, what, nv.k, table.concat(xn, ", ")), 0)
    end
    if type(v) == "boolean" and d.discrete[xn[i]] then v = v and 1 or 0 end
    r[i] = check_value(name, what .. " reset", "'" .. xn[i] .. "'", v)
  end
  return r
end

-- The model's events traced into d.e_names, d.e_dir, d.e, d.r and
-- d.e_terminal; guards read inputs through U (piece by piece), resets
-- through U_reset (at the event's instant). Returns the names seen.
local function traced_events(d, spec, T, X, Z, P, U, U_reset)
  local name = d.name
  d.e_names, d.e_dir, d.e, d.r, d.e_terminal = {}, {}, {}, {}, {}
  local seen, x_index = {}, index_of(d.x_names)
  for j, ev in ipairs(spec.events or {}) do
    options.check("event", ev, ("model '%s': event %d"):format(name, j))
    local en = ev.name or ("event" .. j)
    if seen[en] then error(("model '%s': event '%s' is declared twice"):format(name, en), 0) end
    seen[en] = true
    local what = "event '" .. en .. "'"
    local dir = DIRECTIONS[ev.direction or "both"]
    if not dir then
      error(("model '%s', %s: direction must be \"up\", \"down\" or \"both\", got %s"):format(
        name, what, tostring(ev.direction)), 0)
    end
    local gval = trace(name, what .. " guard", ev.guard, T, X, Z, P, U)
    d.e[j] = check_value(name, what .. " guard", "the guard", gval)
    d.r[j] = traced_reset(d, what, ev.reset, { T, X, Z, P, U_reset }, x_index)
    d.e_names[j], d.e_dir[j], d.e_terminal[j] = en, dir, ev.terminal == true
  end
  return seen
end

-- f traced into d.f: the continuous states' derivatives, then zeros for
-- the discrete variables (constant between events).
local function traced_f(d, spec, T, X, Z, P, U)
  local name, ncont, xn = d.name, d.n_continuous, d.x_names
  local res = ncont > 0 and trace(name, "f", spec.f, T, X, Z, P, U) or {}
  if type(res) == "table" and not expr.is_node(res) then
    for k in pairs(res) do
      if d.discrete[k] then
        error(("model '%s', f: gives a derivative for discrete variable '%s'; discrete variables change only "
          .. "in the resets of events"):format(name, k), 0)
      end
    end
  end
  d.f = ncont > 0 and collect(name, "f", res, { table.unpack(xn, 1, ncont) }) or {}
  for i = ncont + 1, #xn do d.f[i] = expr.ZERO end
end

-- Every closure traced into d, in the order that numbers the nodes: f,
-- g, then (the modes of if-expressions off) h and the events. Returns the
-- events' names.
local function traced_equations(d, spec, T, X, Z, P, U, U_other)
  traced_f(d, spec, T, X, Z, P, U)
  traced_g(d, spec, d.name, d.z_names, T, X, Z, P, U)
  cond.modes_off()
  traced_h(d, spec, T, X, Z, P, U)
  return traced_events(d, spec, T, X, Z, P, U, U_other)
end

-- Builds the symbolic description of a salta.dae{} table.
local function describe(spec)
  local name = spec.name or "model"
  if type(name) ~= "string" then error("salta.dae: name must be a string", 0) end
  local xn, x0, x0_fns = declarations(name, "state", spec.states, "start", spec.start, true)
  local ncont = #xn
  local dn, d0, boolean = discrete_declarations(name, spec.discrete)
  for i, n in ipairs(dn) do xn[ncont + i], x0[ncont + i] = n, d0[i] end
  local zn, z0 = declarations(name, "algebraic", spec.algebraics, "start", spec.start)
  local pn, p0, _, pinfo = declarations(name, "parameter", spec.params or spec.parameters, "value")
  local all = {}
  for _, list in ipairs({ xn, zn, pn }) do
    for _, n in ipairs(list) do
      if all[n] then error(("model '%s': name '%s' is declared twice"):format(name, n), 0) end
      all[n] = true
    end
  end
  if #xn == 0 and #zn == 0 then error(("model '%s': no states and no algebraics"):format(name), 0) end
  local X, xv = proxy(name, "state", "x", xn)
  local Z, zv = proxy(name, "algebraic", "z", zn)
  local P, pv = proxy(name, "parameter", "p", pn)
  local T = expr.var("t", 1, "t")
  -- inputs: the fifth argument of every closure; f, g, h and guards follow
  -- a moving argument's table piece by piece, resets read it where they are
  local uses_held, uses_other = {}, {}
  local U = input.proxy(name, spec.inputs, uses_held, T, true)
  local U_other = input.proxy(name, spec.inputs, uses_other, T, false)
  local d = {
    name = name, x_names = xn, z_names = zn, p_names = pn, x_start = x0, z_start = z0,
    p_nominal = p0, param_info = pinfo, vars = { x = xv, z = zv, p = pv, t = T },
    n_continuous = ncont, discrete = {}, x_mode = {}, inputs = spec.inputs,
  }
  for i, n in ipairs(dn) do d.discrete[n] = boolean[i] and "boolean" or "number" end
  d.start = start_values(name, xn, x0, x0_fns, P, pv, p0)
  -- f gives the continuous states' derivatives; discrete values, the
  -- modes of if-expressions in f and g and the pieces of inputs stay
  -- constant between events
  cond.begin(name, #xn + 1)
  local ok, seen = pcall(traced_equations, d, spec, T, X, Z, P, U, U_other)
  local hidden = cond.finish()
  if not ok then error(seen, 0) end
  hybrid.add_hidden_states(d, hidden)
  hybrid.add_hidden_events(d, name, seen)
  d.input_tables, d.input_checks = hybrid.input_tables(uses_held, uses_other, T)
  return d
end
M.describe = describe

-- The compiled model ---------------------------------------------------------

-- fn(...) with the collector's pause at 400 %: building a large model
-- allocates much short-lived text and few long-lived tables, and the
-- default pause collects too often (-30 % build time at 10,000
-- equations).
local function with_gc_pause(fn, ...)
  local old = collectgarbage("setpause", 400)
  local res = table.pack(pcall(fn, ...))
  collectgarbage("setpause", old)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- Names reach generated C (as escaped literals), JSON, CSV, plots and
-- messages: a control character (a newline, a NUL) or bytes that are not
-- UTF-8 in one are refused here, naming the field; any other character
-- (quotes, backslashes, non-ASCII letters) is kept.
local NAME_FIELDS = { { "x_names", "state" }, { "z_names", "algebraic" }, { "p_names", "parameter" },
  { "y_names", "output" }, { "e_names", "event" } }

local function check_names(desc)
  local function check(what, n)
    local bad = n:find("[%z\1-\31\127]")
    if bad then
      error(("model '%s': %s name '%s' has a control character (byte %d at position %d); names must be "
        .. "printable"):format(printable(desc.name), what, printable(n), n:byte(bad), bad), 0)
    end
    local ok, at = utf8.len(n)
    if not ok then
      error(("model '%s': %s name '%s' is not UTF-8 text (byte %d at position %d)"):format(printable(desc.name),
        what, printable(n), n:byte(at), at), 0)
    end
  end
  check("model", desc.name)
  for _, f in ipairs(NAME_FIELDS) do
    for _, n in ipairs(desc[f[1]]) do check(f[2], n) end
  end
end

local function build(desc, opts)
  opts = opts or {}
  check_names(desc)
  -- the description as traced, before the structural compiler rewrites it (model:to_modelica)
  local source = require("salta.modelica_export").snapshot(desc)
  if opts.structural ~= false then require("salta.structure").compile(desc) end
  local core_model, info = jit.compile(desc, opts)
  local self = setmetatable({
    name = desc.name, core = core_model, symbolic = desc, compile_info = info,
    states = desc.x_names, algebraics = desc.z_names, params = desc.p_names,
    outputs = desc.y_names, events = desc.e_names, structure = desc.structure, source = source,
    param_info = desc.param_info or {},
  }, Model)
  self.x0, self.z0, self.p0 = {}, {}, {}
  for i, n in ipairs(desc.x_names) do self.x0[n] = desc.x_start[i] end
  for i, n in ipairs(desc.z_names) do self.z0[n] = desc.z_start[i] end
  for i, n in ipairs(desc.p_names) do self.p0[n] = desc.p_nominal[i] end
  return self
end

-- build(desc, opts): compiles a symbolic description into a Model.
function M.build(desc, opts)
  return with_gc_pause(build, desc, opts)
end

function M.dae(spec)
  if type(spec) ~= "table" then error("salta.dae: expected a table describing the model", 2) end
  options.check("dae", spec, ("salta.dae%s"):format(type(spec.name) == "string" and " '" .. spec.name .. "'" or ""))
  return with_gc_pause(function()
    return build(describe(spec), { backend = spec.backend, cache_dir = spec.cache_dir, structural = spec.structural })
  end)
end

-- A vector argument: nil (defaults), an array, or a table keyed by names.
function Model:vector(what, v, names, defaults)
  if v == nil then
    local out = {}
    for i, n in ipairs(names) do out[i] = defaults[n] end
    return out
  end
  if type(v) ~= "table" then
    error(("model '%s': %s must be a table, got %s"):format(self.name, what, type(v)), 3)
  end
  if #v > 0 or next(v) == nil then
    if #v ~= #names then
      error(("model '%s': %s has %d values, expected %d"):format(self.name, what, #v, #names), 3)
    end
    return v
  end
  local out, index = {}, {}
  for i, n in ipairs(names) do out[i] = defaults[n]; index[n] = i end
  for k, val in pairs(v) do
    if not index[k] then
      local dummy = false
      for _, n in ipairs(self.structure and self.structure.dummies or {}) do dummy = dummy or n == k end
      error(("model '%s': %s has unknown name '%s'%s"):format(self.name, what, tostring(k), dummy
        and " (index reduction made it algebraic, a dummy derivative: the constraints give its value; "
          .. "set the states " .. table.concat(names, ", ") .. ")" or ""), 3)
    end
    out[index[k]] = val
  end
  return out
end

local FN = { f = "f", g = "g", h = "h", guard = "e", e = "e", reset = "r", r = "r" }

local function point(self, t, x, z, p)
  return t or 0.0, self:vector("x", x, self.states, self.x0),
    self:vector("z", z, self.algebraics, self.z0), self:vector("p", p, self.params, self.p0)
end

local function event_index(self, which, event)
  if which ~= "r" then return 1 end
  if type(event) == "string" then
    for j, n in ipairs(self.events) do if n == event then return j end end
    error(("model '%s': no event '%s'"):format(self.name, event), 3)
  end
  return event or 1
end

-- m:eval(fn, t, x, z, p [, event]): fn is "f", "g", "h", "guard" or "reset".
function Model:eval(fn, t, x, z, p, event)
  local which = FN[fn] or error(("model '%s': unknown function '%s'"):format(self.name, tostring(fn)), 2)
  return self.core:eval(which, event_index(self, which, event), point(self, t, x, z, p))
end

-- m:jacobian(fn, wrt, t, x, z, p [, event]) -> dense matrix (array of rows)
function Model:jacobian(fn, wrt, t, x, z, p, event)
  local which = FN[fn] or error(("model '%s': unknown function '%s'"):format(self.name, tostring(fn)), 2)
  local ev = event_index(self, which, event)
  local rows, cols = self.core:pattern(which, ev, wrt)
  local vals = self.core:jac(which, ev, wrt, point(self, t, x, z, p))
  local nr = which == "r" and #self.states or #self.core:eval(which, ev, point(self, t, x, z, p))
  local nc = ({ x = #self.states, z = #self.algebraics, p = #self.params, t = 1 })[wrt]
  local J = {}
  for i = 1, nr do
    J[i] = {}
    for j = 1, nc do J[i][j] = 0.0 end
  end
  for k = 1, #vals do J[rows[k]][cols[k]] = vals[k] end
  if which == "r" and wrt == "x" then   -- the states the reset keeps (left out of its pattern)
    local r = self.symbolic.r[ev]
    for i, xi in ipairs(self.symbolic.vars.x) do
      if r[i] == nil or r[i] == xi then J[i][i] = 1.0 end
    end
  end
  return J, rows, cols
end

-- m:simulate{ t0=, tf=, times=, params=, x0=, and the engine's options
-- (rtol=, atol=, method=, ...: salta.help("simulate")) } -> trajectory.
-- times defaults to 101 uniform points (or the model file's experiment
-- interval); atol may be a number or one value per state and algebraic.
function Model:simulate(opts)
  opts = opts or {}
  options.check("simulate", opts, ("model '%s': simulate"):format(self.name))
  local ex = self.experiment or {}   -- a model file's defaults (Modelica's experiment annotation)
  local t0 = opts.t0 or ex.t0 or 0.0
  local times = opts.times
  local tf = opts.tf or (times and times[#times]) or ex.tf
  if not tf then error(("model '%s': simulate needs tf or times"):format(self.name), 2) end
  if not times then
    local n = ex.interval and tf == ex.tf and t0 == (ex.t0 or 0.0) and math.ceil((tf - t0) / ex.interval - 1e-9) or 100
    times = {}
    for i = 0, n do times[i + 1] = t0 + (tf - t0) * i / n end
  end
  local raw_opts = options.engine_values(opts)
  raw_opts.t0, raw_opts.tf, raw_opts.rtol = t0, tf, opts.rtol or ex.rtol
  local p = self:vector("params", opts.params, self.params, self.p0)
  local x0 = opts.x0 and self:vector("x0", opts.x0, self.states, self.x0) or nil
  local raw, err = self.core:simulate_raw(raw_opts, p, x0, times)
  -- the engine names model, element and time
  if not raw then error(self:explain(err), 0) end
  local tr = require("salta.trajectory").new(self, raw, { t0 = t0, tf = tf })
  if self.after_simulate then self:after_simulate(tr, p) end   -- a model file's asserts
  return tr
end

-- Whether a start value of the model's own states is an expression of
-- the parameters (hidden states start from their inputs and modes).
function Model:start_follows_params()
  local d = self.symbolic
  if not d.start then return false end
  local hidden = {}
  for _, h in ipairs(d.hidden or {}) do hidden[h.index] = true end
  for i, e in ipairs(d.start) do
    if not hidden[i] and e.op ~= "const" then return true end
  end
  return false
end

-- An engine error told in the model's terms (index reduction): an error
-- object whose tostring is the message and whose code
-- (salta.errcode(err)) the engine's status.
function Model:explain(err)
  return require("salta.structure").explain(self.structure, err)
end

-- m:to_modelica(path): the model as Base Modelica (salta.modelica_export).
function Model:to_modelica(path)
  return require("salta.modelica_export").write(self, path)
end

function Model:c_source()
  return self.compile_info.source
end

-- m:backend() -> "tcc" | "cc": the kernels the model runs now (a model
-- built with tcc while cc builds it in the background takes the cc
-- kernels when they land, between runs), and whether it awaits them.
function Model:backend()
  return self.core:backend()
end

-- The model's own states and events apart from the hidden ones (modes of
-- if-expressions, pieces of input tables, and their switching events).
function Model:counts()
  local d = self.symbolic
  local kinds = { mode = 0, input = 0 }
  for _, h in ipairs(d.hidden or {}) do kinds[h.kind] = (kinds[h.kind] or 0) + 1 end
  local hidden = #(d.hidden or {})
  local events = d.n_declared_events or #self.events
  return { states = #self.states - hidden, hidden_states = hidden, modes = kinds.mode, pieces = kinds.input,
    events = events, hidden_events = #self.events - events }
end

local function plural(n, word, words) return ("%d %s"):format(n, n == 1 and word or words or word .. "s") end

function Model:__tostring()
  local c = self:counts()
  local states, events = plural(c.states, "state"), plural(c.events, "event")
  if c.hidden_states > 0 then
    local kinds = {}
    if c.modes > 0 then kinds[#kinds + 1] = plural(c.modes, "if-expression mode") end
    if c.pieces > 0 then kinds[#kinds + 1] = plural(c.pieces, "input piece index", "input piece indices") end
    states = states .. (" (+%d hidden: %s)"):format(c.hidden_states, table.concat(kinds, ", "))
  end
  if c.hidden_events > 0 then events = events .. (" (+%d hidden: switches and input breakpoints)"):format(c.hidden_events) end
  local backend, pending = self:backend()
  return ("salta model '%s': %s, %s, %s, %s, %s (%s backend%s)"):format(self.name, states,
    plural(#self.algebraics, "algebraic"), plural(#self.params, "parameter"), plural(#self.outputs, "output"), events,
    backend, pending and ", cc building" or "")
end

return M
