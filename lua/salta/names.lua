-- salta.names: lookups over ordered lists of names (states, parameters,
-- outputs, free parameters).
local M = {}

-- index_of(list): name -> position in list.
function M.index_of(list)
  local idx = {}
  for i, n in ipairs(list) do idx[n] = i end
  return idx
end

return M
