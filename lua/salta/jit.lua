-- salta.jit: turns a symbolic model description into a loaded C model.
--
-- Two backends: "tcc" (libtcc, in-process; only inside the salta host,
-- since Debian's libtcc is a non-PIC static archive) and "cc" (the system
-- compiler + dlopen, with a content-hash cache). "auto" prefers tcc and
-- falls back to cc; an explicit choice falls back to the other one too.

local core = require("salta.core")
local codegen = require("salta.codegen")

local M = {}

local SYMBOL = "salta_model"

local function tcc_module()
  local ok, mod = pcall(require, "salta.tcc")
  return ok and mod or nil
end

function M.available()
  return { tcc = tcc_module() ~= nil, cc = true }
end

local backends = {}

function backends.tcc(src, name)
  local tcc = tcc_module()
  if not tcc then return nil, "the tcc backend exists only in the salta host program" end
  return tcc.compile(src, SYMBOL, name)
end

function backends.cc(src, name, opts)
  return core.compile_cc(src, SYMBOL, name, opts.cache_dir)
end

local function order(choice)
  if choice == "tcc" then return { "tcc", "cc" } end
  if choice == "cc" then return { "cc", "tcc" } end
  if choice == nil or choice == "auto" then
    return tcc_module() and { "tcc", "cc" } or { "cc" }
  end
  error(("salta: unknown JIT backend '%s' (use \"tcc\", \"cc\" or \"auto\")"):format(tostring(choice)), 0)
end

-- compile(desc, opts) -> core model, info {backend, seconds, cached, source}
function M.compile(desc, opts)
  opts = opts or {}
  local t0 = core.clock()
  local src = codegen.generate(desc, core.kernel_abi(), SYMBOL)
  local gen_seconds = core.clock() - t0
  local errors = {}
  for _, b in ipairs(order(opts.backend)) do
    local c0 = core.clock()
    local handle, cached = backends[b](src, desc.name, opts)
    if handle then
      local info = { backend = b, seconds = core.clock() - c0, codegen_seconds = gen_seconds,
        cached = cached == true, source = src }
      return core.model(handle), info
    end
    errors[#errors + 1] = ("  %s: %s"):format(b, tostring(cached))
  end
  error(("model '%s': no JIT backend could compile it:\n%s"):format(desc.name, table.concat(errors, "\n")), 0)
end

return M
