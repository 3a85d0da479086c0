-- salta: differentiable parameter estimation of hybrid DAEs.
--
--   local salta = require("salta")
--   local m = salta.dae{ name = "ball", states = {{"h", 1}, {"v", 0}},
--     params = {g = 9.81, e = 0.8},
--     f = function(t, x, z, p) return { x.v, -p.g } end,
--     events = {{ name = "floor", direction = "down",
--       guard = function(t, x, z, p) return x.h end,
--       reset = function(t, x, z, p) return { v = -p.e * x.v } end }} }

local expr = require("salta.expr")
local model = require("salta.model")

local salta = {
  version = require("salta.core").version(),
  dae = model.dae,
  expr = expr,
  -- errcode(err): what an engine error was ("memory", "input", "jit",
  -- "kernel", "solver", "interrupted", "algebraic", "nondifferentiable";
  -- salta.h's status codes), or nil for any other error; tostring(err) is
  -- its message
  errcode = require("salta.core").errcode,
}

-- Elementary functions that accept numbers (plain result) or expressions.
for name, fn in pairs(expr.unary_num) do
  salta[name] = function(u)
    if type(u) == "number" then return fn(u) end
    return expr.unary(name, u)
  end
end

function salta.pow(a, b)
  if type(a) == "number" and type(b) == "number" then return a ^ b end
  return expr.pow(expr.lift(a), expr.lift(b))
end

function salta.min(a, b)
  if type(a) == "number" and type(b) == "number" then return math.min(a, b) end
  return expr.min(a, b)
end

function salta.max(a, b)
  if type(a) == "number" and type(b) == "number" then return math.max(a, b) end
  return expr.max(a, b)
end

salta.pi = math.pi

-- resource(path): a file salta ships (models/, , examples/data/),
-- found from wherever a script runs: beside this library's lua/ folder
-- (the repository, or an install's share/salta), else path as given.
local ROOT = (debug.getinfo(1, "S").source:match("^@(.*)/lua/salta/init%.lua$"))
function salta.resource(path)
  for _, dir in ipairs({ ROOT, ROOT and ROOT .. "/../salta" }) do
    local full = dir .. "/" .. path
    local f = io.open(full, "rb")
    if f then f:close(); return full end
  end
  return path
end

-- conditions: salta.ifelse(salta.lt(a, b), x, y), salta.noevent(c)
local cond = require("salta.cond")
for _, k in ipairs({ "lt", "le", "gt", "ge", "ifelse", "noevent" }) do salta[k] = cond[k] end

-- inputs from data: salta.table{ t =, v =, interp = } (lua/salta/input.lua)
function salta.table(spec) return require("salta.input").new(spec) end

-- least squares over a model and data (lua/salta/lsq.lua)
function salta.lsq(spec) return require("salta.lsq").new(spec) end
function salta.fit(spec) return require("salta.fit").fit(spec) end
function salta.experiments(spec) return require("salta.experiments").new(spec) end
function salta.noise(spec) return require("salta.noise").new(spec) end
function salta.compare_fits(rows, names) return require("salta.fit").compare(rows, names) end
salta.optim = setmetatable({}, { __index = function(_, k) return require("salta.optim")[k] end })
salta.plot = setmetatable({}, { __index = function(_, k) return require("salta.plot")[k] end })
salta.json = setmetatable({}, { __index = function(_, k) return require("salta.json")[k] end })
salta.read_csv = function(path) return require("salta.data").read_csv(path) end
salta.write_csv = function(path, names, columns) return require("salta.data").write_csv(path, names, columns) end
salta.gaussian = function(seed) return require("salta.data").gaussian(seed) end

function salta.load_spec(path, opts)
  return require("salta.spec").load(path, opts)
end

-- a Base Modelica file (doc/modelica.md)
function salta.load_modelica(path, opts)
  return require("salta.modelica").load(path, opts)
end

-- help(topic | object): the overview; an option topic's options ("fit",
-- "lsq", ...: salta.options); or what an object is and its methods.
local function methods_of(v)
  local names, mt = {}, getmetatable(v)
  local idx = mt and (type(mt.__index) == "table" and mt.__index or mt)
  for k, f in pairs(idx or {}) do
    if type(k) == "string" and type(f) == "function" and not k:match("^__") then names[#names + 1] = k end
  end
  table.sort(names)
  return names
end

function salta.help(topic)
  local options = require("salta.options")
  local topics = require("salta.help_topics")
  if type(topic) == "string" then
    local text = options.describe(topic) or topics.describe(topic)
    if not text then
      error(("salta.help: no topic '%s' (options: %s; more: %s)"):format(topic, table.concat(options.topics(), ", "),
        table.concat(topics.names(), ", ")), 2)
    end
    print(text)
    return
  end
  if topic ~= nil then
    local mt = getmetatable(topic)
    local name = mt and mt.__name or type(topic)
    local own = topics.describe((name:gsub("^salta%.", "")))
    if own then print(own) return end
    print(("%s%s"):format(name, type(topic) == "table" and mt and mt.__tostring and (": " .. tostring(topic)) or ""))
    local ms = methods_of(topic)
    if #ms > 0 then print("methods: " .. table.concat(ms, ", ")) end
    return
  end
  print(([[
salta %s -- hybrid DAE models, simulation, exact gradients, fitting
  salta.help("fit")  the options of a topic: ]] .. table.concat(options.topics(), ", ") .. [[

  salta.help("Fit")  more: ]] .. table.concat(topics.names(), ", ") .. [[

  help(obj)          what an object is and its methods
  docs: doc/guide.md (user guide), doc/options.md, doc/reference.md, doc/spec_format.md, doc/c_api.md
]]):format(salta.version))
  print([[
salta -- hybrid DAE models, simulation, exact gradients, fitting
  m = salta.dae{ name=, states=, algebraics=, params=, f=, g=, h=, events= }
  m = salta.load_spec(path)                 an exported JSON/YAML model spec
  m:eval(fn, t, x, z, p)                    fn: "f", "g", "h", "guard", "reset"
  m:jacobian(fn, wrt, t, x, z, p)           wrt: "x", "z", "p", "t"
  tr = m:simulate{ tf=, times=, params=, rtol=, atol=, method = "auto"|"bdf"|"erk" }
  tr.y.name, tr:at(t), tr:events(), tr:stats(), tr:to_csv(path)
  L = salta.lsq{ model=, times=, data= (table or CSV), free=, transform="log", blend= }
  L:value(p), L:grad(p [, {method = "fd"|"adjoint"}]), L:residuals(p), L:jacobian(p)
  L:window(t_end)                           the loss over the targets at t <= t_end
  r = salta.fit{ loss = L, start=, method = "lm"|"lbfgsb"|"adam", truth=, horizon = true }
  print(r), r:report(), r:confidence(0.9), r:profile("k"), r:to_json(path)   help("Fit")
  N = salta.noise{ loss = L, sigma = { y = "s_y" } }   sigma estimated with the parameters
  salta.plot.trajectory(path, tr, opts)
  salta.compare_fits({ r:row("label", loss), {label=, errors=, loss=, ...} }, names)
  salta.sin/cos/exp/log/sqrt/tanh/sigmoid/abs/min/max/pow ... on expressions
  salta.ifelse(salta.lt(a, b), x, y)        an if-expression (a zero-crossing in f, g)
  salta.noevent(c), salta.le/gt/ge          a condition without an event; comparisons
  salta.table{ t=, v=, interp = "linear"|"step"|"cubic" } or { csv=, t = col, v = col }
                                            an input: salta.dae{ inputs = { u = tab } }, read as u.u(t)]])
end

return salta
