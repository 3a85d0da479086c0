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

return M
