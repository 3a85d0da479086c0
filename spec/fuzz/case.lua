-- spec/fuzz/case.lua SEED: one mutation-fuzzing case, run by spec/fuzz/fuzz.lua in a
-- process of its own. The seed picks a base (a shipped spec, or a
-- salta.dae table) and mutations of its equations, values, structure and
-- options; the case builds the model and runs simulate, the loss, its
-- gradient by sensitivities and by the adjoint. Some cases give the model,
-- its variables and events hostile names. It prints one line:
--   OK                      everything ran and every number is finite
--   ERROR <message>         salta refused the input (checked for clarity)
--   SILENT-NAN <where>      a result is NaN or infinite without an error
--   NAMES <what>            a name did not come back intact
--   PAYLOAD <what>          a hostile name's payload ran
-- Crashes, sanitizer reports and hangs are seen by the driver.
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
local salta = require("salta")
local spec = require("salta.spec")

local seed = tonumber(arg[1]) or 1
local state = seed * 2654435761 % 4294967296 + 1
local function rnd()
  state = (state * 6364136223846793005 + 1442695040888963407)
  return ((state >> 11) & ((1 << 53) - 1)) / 2 ^ 53
end
local function pick(list) return list[1 + math.floor(rnd() * #list)] end
local function chance(p) return rnd() < p end

-- Hostile names: quotes, backslashes, trigraphs, comment ends, control
-- characters, shell and gnuplot syntax, non-ASCII and invalid UTF-8 bytes,
-- and payloads that create the canary file if they ever run. A model must
-- keep such a name intact or refuse it clearly; the canary must never be.
local CANARY = os.tmpname()
os.remove(CANARY)
local PIECES = { '"', "\\", "??/", "??=", "??'", "*/", "/*", "//", "!", "\n", "\r", "\0", "'", "`", "$(", ")", "%s",
  "%n", "\255", "\195", "\195\169", "\226\130\172", " ", ",", ";", "#", "{", "}", "a", "x",
  '"); system("touch ' .. CANARY .. '"); ("', "\n!touch " .. CANARY .. "\n", "system('touch " .. CANARY .. "')",
  "`touch " .. CANARY .. "`", "$(touch " .. CANARY .. ")", '??/"); system("touch ' .. CANARY .. '"); //' }

local function hostile_name(i)
  local parts = {}
  for _ = 1, 1 + math.floor(rnd() * 4) do parts[#parts + 1] = pick(PIECES) end
  return table.concat(parts) .. "#" .. i
end

local WEIRD_NUMBERS = { "0", "-1", "1e308", "-1e308", "1e-308", "(0/1)", "1e30", "-0.5", "3", "0.001", "1e-12" }
local FUNCS = { "sin", "cos", "exp", "log", "sqrt", "tanh", "abs", "atan", "asin", "sign", "floor", "pow", "min",
  "max", "der", "prev", "nosuch" }
local OPS = { "+", "-", "*", "/", "^", "**", "(", ")", ",", "=", "<", ">", "<=", ">=" }

-- One mutation of an equation string.
local function mutate_text(s, names)
  local r = rnd()
  if #s == 0 then return pick(names) end
  local i = 1 + math.floor(rnd() * #s)
  if r < 0.2 then   -- a number
    return (s:gsub("%d+%.?%d*", function(n) return chance(0.3) and pick(WEIRD_NUMBERS) or n end, 1 + math.floor(rnd() * 2)))
  elseif r < 0.35 then   -- a name
    return (s:gsub("[%a_][%w_]*", function(n) return chance(0.2) and pick(names) or n end))
  elseif r < 0.45 then   -- an operator
    return s:sub(1, i - 1) .. pick(OPS) .. s:sub(i + 1)
  elseif r < 0.55 then   -- a function around a name
    return (s:gsub("([%a_][%w_]*)", function(n)
      if chance(0.15) then return pick(FUNCS) .. "(" .. n .. ")" end
    end))
  elseif r < 0.62 then return s:sub(1, i)   -- truncated
  elseif r < 0.7 then return s .. " " .. pick(OPS) .. " " .. pick(names)
  elseif r < 0.78 then return s:sub(1, i - 1) .. s:sub(i + 1)
  elseif r < 0.85 then return s .. "/(" .. pick(names) .. " - " .. pick(names) .. ")"
  elseif r < 0.92 then return (s:gsub("=", "= 1e300 * ", 1))
  end
  return s .. " + sqrt(" .. pick(names) .. " - 1)"
end

local function names_of(t)
  local out = {}
  for _, key in ipairs({ "states", "alg_vars", "parameters" }) do
    for _, d in ipairs(type(t[key]) == "table" and t[key] or {}) do
      if type(d) == "table" and type(d.name) == "string" then out[#out + 1] = d.name end
    end
  end
  out[#out + 1] = "time"
  return out
end

local WEIRD_VALUES = { 0 / 0, math.huge, -math.huge, 1e308, -1e308, 0, -1, 1e-300, "x", true, {}, 3 }

-- Mutations of a decoded spec table.
local function mutate_spec(t)
  local names = names_of(t)
  for _ = 1, 1 + math.floor(rnd() * 3) do
    local r = rnd()
    local lists = { "f", "g", "h" }
    if r < 0.45 then   -- an equation
      local key = pick(lists)
      local eqs = type(t[key]) == "table" and t[key] or nil
      if eqs and #eqs > 0 then
        local k = 1 + math.floor(rnd() * #eqs)
        if type(eqs[k]) == "string" then eqs[k] = mutate_text(eqs[k], names) end
      end
    elseif r < 0.6 then   -- an event
      local w = type(t.when) == "table" and t.when or nil
      if w and #w > 0 then
        local c = w[1 + math.floor(rnd() * #w)]
        if type(c) == "table" then
          if chance(0.5) and type(c.condition) == "string" then c.condition = mutate_text(c.condition, names)
          elseif type(c.reinit) == "string" then c.reinit = mutate_text(c.reinit, names)
          elseif type(c.reinit) == "table" and #c.reinit > 0 then
            local k = 1 + math.floor(rnd() * #c.reinit)
            c.reinit[k] = mutate_text(tostring(c.reinit[k]), names)
          end
        end
      end
    elseif r < 0.75 then   -- a value
      local key = pick({ "states", "parameters", "alg_vars" })
      local list = type(t[key]) == "table" and t[key] or nil
      if list and #list > 0 then
        local d = list[1 + math.floor(rnd() * #list)]
        if type(d) == "table" then
          local field = key == "parameters" and "value" or "start"
          d[field] = chance(0.7) and pick(WEIRD_VALUES) or (tonumber(d[field]) or 1) * (rnd() * 4 - 2)
        end
      end
    elseif r < 0.85 then   -- structure: drop or duplicate an entry
      local key = pick({ "states", "parameters", "alg_vars", "f", "g", "when" })
      local list = type(t[key]) == "table" and t[key] or nil
      if list and #list > 0 then
        local k = 1 + math.floor(rnd() * #list)
        if chance(0.5) then table.remove(list, k) else table.insert(list, k, list[k]) end
      end
    elseif r < 0.92 then   -- a field of the wrong type
      t[pick({ "states", "parameters", "f", "g", "h", "when", "alg_vars" })] = pick(WEIRD_VALUES)
    elseif r < 0.96 then   -- a name
      local list = type(t.states) == "table" and t.states or {}
      if #list > 0 and type(list[1]) == "table" then list[1].name = pick({ "", "x y", "time", "1x", names[1] }) end
    else   -- hostile names: parameters and discrete variables no equation reads, events
      for i = 1, 1 + math.floor(rnd() * 3) do
        if type(t.parameters) == "table" then t.parameters[#t.parameters + 1] = { name = hostile_name(i), value = 1 } end
        if type(t.discrete) ~= "table" then t.discrete = {} end
        t.discrete[#t.discrete + 1] = { name = hostile_name(10 + i), type = "float", start = 0 }
      end
      for k, c in ipairs(type(t.when) == "table" and t.when or {}) do
        if type(c) == "table" and chance(0.5) then c.comment = hostile_name(20 + k) end
      end
    end
  end
  return t
end

-- A salta.dae table: a bouncing ball with a spring, whose closures are
-- built from mutated pieces.
local function dae_table()
  local parts = {
    function(x, p) return -p.g end,
    function(x, p) return -p.g * salta.sqrt(x.h) end,
    function(x, p) return -p.g / x.h end,
    function(x, p) return -p.g * salta.log(x.h + 1) end,
    function(x, p) return -p.k * x.h ^ 3 end,
    function(x, p) return -p.g + p.k * salta.tanh(x.v / p.e) end,
    function(x, p) return p.k * x.v * x.v end,
  }
  local force = pick(parts)
  local guards = {
    function(t, x) return x.h end,
    function(t, x) return x.h - 1e-12 end,
    function(t, x, z, p) return x.h * x.h - p.k end,
    function(t, x) return x.v end,
    function(t) return t - 0.5 end,
    function(t, x) return salta.sqrt(x.h) end,
  }
  local resets = {
    function(t, x, z, p) return { v = -p.e * x.v } end,
    function(t, x, z, p) return { v = -p.e * x.v, h = 0 } end,
    function(t, x, z, p) return { v = p.e * x.v } end,
    function(t, x, z, p) return { h = x.h + 1 } end,
    function(t, x, z, p) return { v = -x.v / p.e } end,
  }
  local ev = { name = "floor", direction = pick({ "down", "up", "both", "down", "sideways" }), guard = pick(guards),
    reset = pick(resets) }
  local t = {
    name = "fuzzball",
    states = { { "h", chance(0.8) and 1 or pick({ 0, -1, 1e300, 0 / 0 }) }, { "v", 0 } },
    params = { { "g", chance(0.8) and 9.81 or pick({ 0, -9.81, 1e300, 0 / 0 }) },
      { "e", chance(0.8) and 0.8 or pick({ 0, 1, 1.5, -0.8 }) }, { "k", chance(0.8) and 2 or pick({ 0, -2, 1e10 }) } },
    f = function(t, x, z, p) return { x.v, force(x, p) } end,
    events = { ev, chance(0.3) and { name = "again", direction = "down", guard = pick(guards), reset = pick(resets) } or nil },
  }
  if chance(0.2) then   -- an algebraic variable
    t.algebraics = { { "F", 0 } }
    local gs = {
      function(tt, x, z, p) return { z.F - p.k * x.h } end,
      function(tt, x, z, p) return { z.F * z.F - x.h } end,
      function(tt, x, z, p) return { z.F + 0.1 * z.F ^ 3 - p.k * x.h } end,
      function(tt, x, z, p) return { x.h - 1 } end,
    }
    t.g = pick(gs)
    t.f = function(tt, x, z, p) return { x.v, force(x, p) - z.F } end
  end
  -- the richer constructs: a start from the parameters, a terminal event,
  -- a discrete mode and if-expressions, an input table (sometimes too
  -- short for the run), a reset that pushes another guard across zero
  if chance(0.2) then t.states[1][2] = function(p) return pick({ 1, 0.5 })  * p.k / 2 end end
  if chance(0.15) then ev.terminal = true end
  local f0 = t.f
  if chance(0.25) then
    t.discrete = { { "on", pick({ true, false, 0, 2 }) } }
    local cond = pick({
      function(x) return x.on end,
      function(x) return salta.gt(x.h, 0.5) end,
      function(x) return salta.noevent(salta.lt(x.v, 0)) end,
    })
    t.f = function(tt, x, z, p)
      local d = f0(tt, x, z, p)
      d[2] = d[2] + salta.ifelse(cond(x), p.k, -p.k)
      return d
    end
    t.events[#t.events + 1] = { name = "toggle", direction = pick({ "up", "down", "both" }),
      guard = function(tt, x) return x.v - pick({ 0, 1, -1 }) end,
      reset = function(tt, x) return { on = pick({ true, false, 1 - x.on }) } end }
  end
  if chance(0.2) then
    local hi = pick({ 5, 0.2 })   -- 0.2: shorter than most runs, a clear error
    t.inputs = { w = salta.table{ t = { 0, hi / 2, hi }, v = { 0, pick({ 1, -1e300 }), 0.5 },
      interp = pick({ "linear", "step", "cubic" }) } }
    local f1 = t.f
    t.f = function(tt, x, z, p, u)
      local d = f1(tt, x, z, p)
      d[2] = d[2] + u.w(tt - pick({ 0, 0.01 }))
      return d
    end
  end
  if chance(0.15) then   -- a cascade: "push" moves h across "floor2"'s zero
    t.events[#t.events + 1] = { name = "push", direction = "up", guard = function(tt) return tt - 0.2 end,
      reset = function(tt, x) return { h = -x.h - 0.1 } end }
    t.events[#t.events + 1] = { name = "floor2", direction = "down", guard = function(tt, x) return x.h end,
      reset = function(tt, x) return { h = 0.5 } end }
  end
  if chance(0.1) then t[pick({ "paramaters", "evnts", "stats" })] = {} end
  return t
end

-- The table with hostile names for its model, states, algebraics,
-- parameters, discrete variables, events and inputs: the closures, written
-- with the plain names, read through proxies that map them.
local function with_hostile_names(t)
  local map, n = {}, 0
  local function rename(list)
    for _, d in ipairs(list or {}) do
      n = n + 1
      map[d[1]] = hostile_name(n)
      d[1] = map[d[1]]
    end
  end
  rename(t.states)
  rename(t.algebraics)
  rename(t.params)
  rename(t.discrete)
  local function alias(v)
    if type(v) ~= "table" then return v end
    return setmetatable({}, { __index = function(_, k) return v[map[k] or k] end })
  end
  local function wrap(fn, keyed)
    if type(fn) ~= "function" then return fn end
    return function(tt, x, z, p, u)
      local res = fn(tt, alias(x), alias(z), alias(p), alias(u))
      if not keyed or type(res) ~= "table" then return res end
      local out = {}
      for k, v in pairs(res) do out[map[k] or k] = v end
      return out
    end
  end
  for _, d in ipairs(t.states) do
    if type(d[2]) == "function" then
      local start = d[2]
      d[2] = function(p) return start(alias(p)) end
    end
  end
  t.f, t.g = wrap(t.f), wrap(t.g)
  for i, ev in ipairs(t.events) do
    ev.name = hostile_name(100 + i)
    ev.guard, ev.reset = wrap(ev.guard), wrap(ev.reset, true)
  end
  if t.inputs then
    local inputs = {}
    for k, v in pairs(t.inputs) do
      map[k] = hostile_name(200)
      inputs[map[k]] = v
    end
    t.inputs = inputs
  end
  if chance(0.5) then t.name = hostile_name(300) end
  return t
end

-- Names come back as the model declared them: in the trajectory's outputs
-- and events, through JSON, CSV and a plot.
local function check_names(m, tr)
  local bad = function(what, name)
    error({ names = ("%s %q of model %q did not come back intact"):format(what, name, m.name) })
  end
  for _, name in ipairs(m.outputs) do
    if tr.y[name] == nil then bad("output", name) end
  end
  local declared = {}
  for _, e in ipairs(m.events) do declared[e] = true end
  for _, e in ipairs(tr:events()) do
    if not declared[e.name] then bad("event", e.name) end
  end
  local back = require("cjson").decode(require("salta.json").encode({ outputs = m.outputs })).outputs
  for i, name in ipairs(m.outputs) do
    if back[i] ~= name then bad("JSON output", name) end
  end
  local csv = os.tmpname()
  tr:to_csv(csv)
  local data = salta.read_csv(csv)
  os.remove(csv)
  for _, name in ipairs(m.outputs) do
    if not data.columns[name] then bad("CSV column", name) end
  end
  if chance(0.3) then
    local png = os.tmpname() .. ".png"
    salta.plot.trajectory(png, tr)
    os.remove(png)
  end
end

local function finite(v) return type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge end

local function check_all(where, list)
  for i, v in ipairs(list) do
    if type(v) == "table" then check_all(where, v)
    elseif not finite(v) then error({ silent = ("%s[%d] = %s"):format(where, i, tostring(v)) }) end
  end
end

local function options(tf)
  local o = { tf = tf }
  if chance(0.3) then o.rtol = pick({ 1e-3, 1e-8, 1e-12, 1e-14, 0.5 }) end
  if chance(0.3) then o.method = pick({ "bdf", "erk" }) end
  if chance(0.1) then o.max_events = pick({ 0, 1, 5 }) end
  if chance(0.1) then o.max_step = pick({ 1e-3, 0.5 }) end
  if chance(0.1) then o.linear_solver = pick({ "dense", "klu" }) end
  return o
end

local function run()
  local m, tf
  local r = rnd()
  if r < 0.6 then
    local file = pick({ "models/specs/dae_specification_cauer_events.json",
      "models/specs/dae_specification_bouncing_balls_N3.yaml" })
    local t = mutate_spec(spec.read(file))
    tf = file:find("cauer") and pick({ 2, 8, 20 }) or pick({ 0.5, 1.9 })
    local desc = spec.describe_spec(t, "fuzzed")
    m = require("salta.model").build(desc)
  else
    local t = dae_table()
    m = salta.dae(chance(0.25) and with_hostile_names(t) or t)
    tf = pick({ 0.3, 1, 3 })
  end
  local o = options(tf)
  local tr = m:simulate(o)
  for _, n in ipairs(m.outputs) do check_all("simulate " .. n, tr.y[n]) end
  check_names(m, tr)
  -- a loss on the first outputs, data from the run, free parameters
  local outs, data = {}, {}
  for i = 1, math.min(2, #m.outputs) do
    outs[i] = m.outputs[i]
    data[outs[i]] = {}
    for k, v in ipairs(tr.y[outs[i]]) do data[outs[i]][k] = v * (1 + 0.01 * (rnd() - 0.5)) end
  end
  local free = {}
  for i = 1, math.min(3, #m.params) do free[i] = m.params[#m.params - i + 1] end
  if #free == 0 then return end
  local lo = { model = m, times = tr.t, data = data, free = free, rtol = o.rtol, method = o.method }
  if chance(0.2) then lo.blend = pick({ 10, 150 }) end
  local L = salta.lsq(lo)
  local p = {}
  for i, n in ipairs(free) do p[i] = m.p0[n] * (1 + 0.05 * (rnd() - 0.5)) end
  local v, g = L:value_and_grad(p)
  check_all("loss", { v })
  check_all("gradient", g)
  if chance(0.5) then
    local va, ga = L:value_and_grad(p, { method = "adjoint", mesh = pick({ "steps", 5, 30 }) })
    check_all("adjoint loss", { va })
    check_all("adjoint gradient", ga)
  end
  if chance(0.3) then check_all("jacobian", L:jacobian(p)) end
end

local ok, err = pcall(run)
local ran = io.open(CANARY)
if ran then
  ran:close()
  os.remove(CANARY)
  print("PAYLOAD a name's payload ran (it created " .. CANARY .. ")")
elseif ok then
  print("OK")
elseif type(err) == "table" and err.silent then
  print("SILENT-NAN " .. err.silent)
elseif type(err) == "table" and err.names then
  print("NAMES " .. err.names:gsub("\n", "\\n"))
else
  print("ERROR " .. tostring(err):gsub("\n", " | "))
end
