-- salta.names: lookups over ordered lists of names (states, parameters,
-- outputs, free parameters).
local M = {}

-- index_of(list): name -> position in list.
function M.index_of(list)
  local idx = {}
  for i, n in ipairs(list) do idx[n] = i end
  return idx
end

-- printable(s): s for a message, its control bytes and backslashes as
-- escapes (\n, \0, \27, \\), so that a hostile name cannot break a
-- message's lines; the caller quotes it.
local ESCAPES = { ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t", ["\\"] = "\\\\" }
function M.printable(s)
  return (tostring(s):gsub("[%z\1-\31\127\\]", function(c) return ESCAPES[c] or ("\\" .. c:byte()) end))
end

return M
