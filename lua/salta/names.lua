-- salta.names: lookups over ordered lists of names (states, parameters,
-- outputs, free parameters).
local M = {}

-- index_of(list): name -> position in list.
function M.index_of(list)
  local idx = {}
  for i, n in ipairs(list) do idx[n] = i end
  return idx
end

-- direction(model, n): the engine's encoding (salta_sim_set_sens) of
-- sensitivity direction n, a parameter's name or "x0.<state>" for a start
-- value: parameter i (from 0), or -(i + 1) for state i; nil and why for
-- a name that is neither.
function M.direction(model, n)
  local st = type(n) == "string" and n:match("^x0%.(.+)$")
  if st then
    local i = M.index_of(model.states)[st]
    if not i then return nil, ("'%s': no state '%s'"):format(n, st) end
    return -i
  end
  local i = M.index_of(model.params)[n]
  if not i then return nil, ("'%s' is not a parameter of model '%s'"):format(tostring(n), model.name) end
  return i - 1
end

-- printable(s): s for a message, its control bytes and backslashes as
-- escapes (\n, \0, \27, \\), so that a hostile name cannot break a
-- message's lines; the caller quotes it.
local ESCAPES = { ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t", ["\\"] = "\\\\" }
function M.printable(s)
  return (tostring(s):gsub("[%z\1-\31\127\\]", function(c) return ESCAPES[c] or ("\\" .. c:byte()) end))
end

return M
