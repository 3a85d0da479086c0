-- salta.param_info: a parameter's attributes beside its value, as
-- Modelica's min, max and nominal (and unit): the bounds every optimiser
-- keeps and the scale of its steps and finite differences. salta.dae and
-- salta.load_spec read them from a declaration:
--
--   params = { k = { 1.0, min = 0, max = 10, nominal = 2 } }
--   params = { { "k", 1.0, min = 0, max = 10 } }
--   "parameters": [ { "name": "k", "value": 1.0, "min": 0, "max": 10, "nominal": 2 } ]
--
-- A model's param_info maps a parameter's name to { min, max, nominal,
-- unit } (each may be nil); salta.load_modelica fills the same table.

local M = {}

M.KEYS = { "min", "max", "nominal", "unit" }

local function number_of(model, name, key, v)
  if type(v) == "string" then v = tonumber(v) or v end
  if type(v) ~= "number" or v ~= v then
    error(("model '%s': parameter '%s': %s must be a number, got %s"):format(model, name, key, tostring(v)), 0)
  end
  return v + 0.0
end

-- read(model, name, value, src): the attributes src declares for parameter
-- name of value, checked (min < max, the value inside, nominal positive
-- and finite), or nil when it declares none.
function M.read(model, name, value, src)
  if type(src) ~= "table" then return nil end
  local info, any = {}, false
  for _, key in ipairs({ "min", "max", "nominal" }) do
    if src[key] ~= nil then info[key], any = number_of(model, name, key, src[key]), true end
  end
  if src.unit ~= nil then
    if type(src.unit) ~= "string" then
      error(("model '%s': parameter '%s': unit must be a string, got %s"):format(model, name, tostring(src.unit)), 0)
    end
    info.unit, any = src.unit, true
  end
  if not any then return nil end
  local lo, hi = info.min or -math.huge, info.max or math.huge
  if not (lo < hi) then
    error(("model '%s': parameter '%s': min %g is not below max %g"):format(model, name, lo, hi), 0)
  end
  if value and not (value >= lo and value <= hi) then
    error(("model '%s': parameter '%s' = %g is outside [min, max] = [%g, %g]"):format(model, name, value, lo, hi), 0)
  end
  if info.nominal and not (info.nominal > 0 and info.nominal < math.huge) then
    error(("model '%s': parameter '%s': nominal must be positive and finite, got %g"):format(model, name,
      info.nominal), 0)
  end
  return info
end

return M
