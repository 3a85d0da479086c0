-- salta.files: writing a file so that a failure loses nothing, and
-- checking a file before reading it.
--
-- A written text is produced in full first, written to a temporary file in
-- the same folder, and renamed over the target only once it is complete:
-- an existing file is either replaced whole or left as it was.

local core = require("salta.core")

local M = {}

-- The largest file a spec may make salta read.
M.MAX_READ_BYTES = 256 * 1024 * 1024

-- readable(path): path, or nil and why: a regular file (a device such as
-- /dev/zero, or a fifo, would be read forever) of at most MAX_READ_BYTES.
function M.readable(path)
  local kind, size = core.file_kind(path)
  if not kind then return nil, "cannot open: " .. size end
  if kind ~= "file" then return nil, ("not a regular file (a %s)"):format(kind) end
  if size > M.MAX_READ_BYTES then
    return nil, ("%d bytes, more than the %d a spec may read"):format(size, M.MAX_READ_BYTES)
  end
  return path
end

-- inside(dir, rel): the path of rel within folder dir, or nil and why. rel
-- must be relative, and stay inside dir once every symlink and .. is
-- resolved: a file shared with a spec cannot reach the rest of the disk.
function M.inside(dir, rel)
  if type(rel) ~= "string" or rel == "" then return nil, "must be a file name, got " .. tostring(rel) end
  if rel:sub(1, 1) == "/" then return nil, "is an absolute path; a spec reads files in its own folder only" end
  local root, why = core.realpath(dir or ".")
  if not root then return nil, ("the spec's folder %s: %s"):format(tostring(dir), why) end
  local full, err = core.realpath(root .. "/" .. rel)
  if not full then return nil, "cannot open: " .. err end
  if full:sub(1, #root + 1) ~= (root == "/" and "/" or root .. "/") then
    return nil, "leaves the spec's folder (a spec reads files in its own folder only)"
  end
  return M.readable(full)
end

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
