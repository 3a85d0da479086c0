-- salta.aot: ahead-of-time compilation of a model into a standalone C file,
-- to compile and link into a host that has no Lua and no JIT.
--
--   salta compile models/cauer.lua -o cauer.c [--symbol salta_model_cauer] [key=value ...]
--   salta compile spec.json -o model.c
--
-- A .lua model file returns a model or a constructor; key=value arguments
-- go to the constructor (numbers are converted: N=15). The C file defines
-- `const salta_model_def <symbol>` (default salta_model_<name>) and needs
-- salta_kernel.h (included by salta.h) only through its embedded copy: it
-- compiles on its own with `cc -c model.c`.

local codegen = require("salta.codegen")
local core = require("salta.core")

local M = {}

local USAGE = "usage: salta compile MODEL.lua|SPEC.json|SPEC.yaml -o OUT.c [--symbol NAME] [key=value ...]"

local function parse(args)
  local o = { params = {} }
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "-o" then o.out = args[i + 1]; i = i + 1
    elseif a == "--symbol" then o.symbol = args[i + 1]; i = i + 1
    elseif a:match("^[%a_][%w_]*=") then
      local k, v = a:match("^([%a_][%w_]*)=(.*)$")
      o.params[k] = tonumber(v) or v
    elseif a:sub(1, 1) == "-" then error(("salta compile: unknown option '%s'\n%s"):format(a, USAGE), 0)
    elseif not o.input then o.input = a
    else error(("salta compile: unexpected argument '%s'\n%s"):format(a, USAGE), 0) end
    i = i + 1
  end
  if not o.input or not o.out then error(USAGE, 0) end
  return o
end

-- The model described by a file.
function M.load(path, params)
  if path:match("%.json$") or path:match("%.ya?ml$") then
    return require("salta").load_spec(path)
  end
  local chunk, err = loadfile(path)
  if not chunk then error("salta compile: " .. err, 0) end
  local m = chunk()
  if type(m) == "function" then m = m(params) end
  if type(m) ~= "table" or not m.symbolic then
    error(("salta compile: %s must return a model (salta.dae{...}) or a function building one"):format(path), 0)
  end
  return m
end

-- C source of model m with its definition under `symbol`.
function M.source(m, symbol)
  symbol = symbol or ("salta_model_" .. m.name:gsub("[^A-Za-z0-9_]", "_"):sub(1, 64))
  if not symbol:match("^[%a_][%w_]*$") then error(("salta compile: '%s' is not a C identifier"):format(symbol), 0) end
  local src = codegen.generate(m.symbolic, core.kernel_abi(), symbol)
  return src, symbol
end

function M.main(args)
  local o = parse(args)
  if core.same_file(o.input, o.out) then
    error(("salta compile: the output %s is the input file: refusing to replace the model with C"):format(o.out), 0)
  end
  local m = M.load(o.input, o.params)
  local src, symbol = M.source(m, o.symbol)
  require("salta.files").write(o.out, src, "salta compile")
  local c = m:counts()
  io.stderr:write(("salta compile: model '%s' (%d states + %d hidden, %d algebraics, %d parameters, %d events + %d "
    .. "hidden) -> %s, symbol %s\n"):format(m.name, c.states, c.hidden_states, #m.algebraics, #m.params, c.events,
    c.hidden_events, o.out, symbol))
  return true
end

return M
