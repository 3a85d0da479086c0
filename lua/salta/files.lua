-- salta.files: writing a file so that a failure loses nothing. The text is
-- produced in full first, written to a temporary file in the same folder,
-- and renamed over the target only once it is complete: an existing file is
-- either replaced whole or left as it was.

local M = {}

-- write(path, text, caller): raises "<caller>: <path>: <why>" on failure.
function M.write(path, text, caller)
  if type(path) ~= "string" or path == "" then
    error(("%s: the output path must be a non-empty string, got %s"):format(caller, tostring(path)), 0)
  end
  local tmp = ("%s.tmp-%d-%d"):format(path, os.time(), math.random(1, 1 << 30))
  local f, err = io.open(tmp, "wb")
  if not f then error(("%s: %s: cannot write: %s"):format(caller, path, tostring(err)), 0) end
  local ok, werr = f:write(text)
  local closed, cerr = f:close()
  if not ok or not closed then
    os.remove(tmp)
    error(("%s: %s: writing failed: %s"):format(caller, path, tostring(werr or cerr)), 0)
  end
  local renamed, rerr = os.rename(tmp, path)
  if not renamed then
    os.remove(tmp)
    error(("%s: %s: cannot replace it: %s"):format(caller, path, tostring(rerr)), 0)
  end
  return path
end

return M
