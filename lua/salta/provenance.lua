-- salta.provenance: where a fit's result came from, for its JSON: the
-- salta version, the time it was written, the model (name, a digest of its
-- generated C, its parameters' values and attributes), the data (target
-- times, outputs, sigma, a digest of every number) and the fit's options
-- (those that are data: numbers, strings, booleans and tables of them).
-- Two results with equal digests were fitted to the same model and data.

local core = require("salta.core")

local M = {}

-- A digest of numbers, bit for bit.
local function digest_numbers(list)
  local parts = {}
  for i, v in ipairs(list) do parts[i] = string.pack("<d", v) end
  return core.hash(table.concat(parts))
end

-- A value as data: functions, userdata and losses left out.
local function plain(v, depth)
  local t = type(v)
  if t == "number" or t == "string" or t == "boolean" then return v end
  if t ~= "table" or depth > 3 or getmetatable(v) then return nil end
  local out = {}
  for k, x in pairs(v) do
    if type(k) == "string" or math.type(k) == "integer" then out[k] = plain(x, depth + 1) end
  end
  return out
end
M.plain = function(v) return plain(v, 0) end

-- The model and data of one salta.lsq loss.
local function of_lsq(L)
  local m = L.model
  local numbers = {}
  for k, t in ipairs(L.times) do
    numbers[#numbers + 1] = t
    for _, n in ipairs(L.outputs) do numbers[#numbers + 1] = L.columns[n][k] end
  end
  return {
    model = { name = m.name, c_source_digest = m.compile_info and core.hash(m.compile_info.source) or nil,
      params = m.p0, param_info = next(m.param_info or {}) and m.param_info or nil, states = m.states,
      backend = m.compile_info and m.compile_info.backend },
    data = { targets = #L.times, t_first = L.times[1], t_last = L.times[#L.times], outputs = L.outputs,
      digest = digest_numbers(numbers), sigma = plain(L.spec.sigma, 0), blend = L.spec.blend,
      file = type(L.spec.data) == "string" and L.spec.data or nil },
    free = L.free, rtol = L.spec.rtol, atol = plain(L.spec.atol, 0), method = L.spec.method,
  }
end

-- The experiments of a loss: salta.lsq, salta.experiments (each), or the
-- base of a noise model or a profile's view.
local function of_loss(L)
  if L.model and L.columns then return { of_lsq(L) } end
  if L.losses then
    local out = {}
    for _, x in ipairs(L.losses) do
      for _, e in ipairs(of_loss(x)) do out[#out + 1] = e end
    end
    return out
  end
  if L.base then return of_loss(L.base) end
  return {}
end

-- of(fit): the provenance of a Fit (salta.fit_report).
function M.of(fit)
  return {
    salta_version = core.version(), written = os.date("!%Y-%m-%dT%H:%M:%SZ"), host_lua = _VERSION,
    experiments = of_loss(fit.lsq), fit_options = fit.options, loss = tostring(fit.lsq),
  }
end

return M
