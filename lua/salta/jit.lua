-- salta.jit: turns a symbolic model description into a loaded C model.
--
-- Two backends: "tcc" (libtcc, in-process; only inside the salta host,
-- since Debian's libtcc is a non-PIC static archive) and "cc" (the system
-- compiler at -O2 + dlopen, with a content-hash cache; its kernels run 2-3x
-- faster). "auto" (the default) takes cc from a warm cache, or builds it
-- now when the source is small (CC_NOW_BYTES: the Cauer ladder in 0.1 s,
-- balls N = 15 in 1.7 s); a larger model compiles with tcc now while cc
-- builds it in the background, and the model takes the cc kernels when
-- they land (between runs: the bindings' salta_l_checkmodel). An
-- explicit choice falls back to the other backend when it fails.

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

local CC_NOW_BYTES = 200000

-- The backends to try, in order; and whether to start a background cc
-- build (auto, for a large model with no warm cache).
local function order(choice, src, opts)
  if choice == "tcc" then return { "tcc", "cc" } end
  if choice == "cc" then return { "cc", "tcc" } end
  if choice == nil or choice == "auto" then
    if not tcc_module() or #src <= CC_NOW_BYTES or core.cc_cached(src, SYMBOL, opts.cache_dir) then
      return { "cc", "tcc" }
    end
    return { "tcc", "cc" }, true
  end
  error(("salta: unknown JIT backend '%s' (use \"tcc\", \"cc\" or \"auto\")"):format(tostring(choice)), 0)
end

-- Background cc builds started by this process, by source hash and cache
-- folder: one per model.
local started = {}
local function start_background(src, hash, cache_dir)
  local key = hash .. "@" .. tostring(cache_dir)
  if not started[key] then started[key] = core.cc_background(src, SYMBOL, cache_dir) == true end
  return started[key]
end

-- compile(desc, opts) -> core model, info {backend, seconds, cached, source,
-- cc_pending (a background cc build runs, whose kernels the model will
-- take: core model:backend() says which it runs)}
function M.compile(desc, opts)
  opts = opts or {}
  local t0 = core.clock()
  local src, hash = codegen.generate(desc, core.kernel_abi(), SYMBOL)
  local gen_seconds = core.clock() - t0
  local errors = {}
  local backends_in_order, later = order(opts.backend, src, opts)
  for _, b in ipairs(backends_in_order) do
    local c0 = core.clock()
    local handle, cached = backends[b](src, desc.name, opts)
    if handle then
      local info = { backend = b, seconds = core.clock() - c0, codegen_seconds = gen_seconds,
        cached = cached == true, source = src }
      local watch
      if later and b == "tcc" then
        info.cc_pending = start_background(src, hash, opts.cache_dir)
        watch = info.cc_pending and core.cc_watch(src, SYMBOL, desc.name, opts.cache_dir) or nil
        info.cc_pending = watch ~= nil
      end
      return core.model(handle, watch), info
    end
    errors[#errors + 1] = ("  %s: %s"):format(b, tostring(cached))
  end
  error(("model '%s': no JIT backend could compile it:\n%s"):format(desc.name, table.concat(errors, "\n")), 0)
end

return M
