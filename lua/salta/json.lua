-- salta.json: JSON output with full precision. Numbers are written with 17
-- significant digits (Debian's JSON libraries stop at 14), NaN and infinity
-- as null, keys sorted so files diff cleanly.

local M = {}

local function encode_string(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    local map = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r" }
    return map[c] or string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function is_array(t)
  local n = #t
  if n == 0 then return next(t) == nil end
  local count = 0
  for _ in pairs(t) do count = count + 1 end
  return count == n
end

local function encode(v, indent, depth, path)
  local tv = type(v)
  if tv == "nil" then return "null" end
  if tv == "boolean" then return tostring(v) end
  if tv == "number" then
    if v ~= v or v == math.huge or v == -math.huge then return "null" end
    if math.type(v) == "integer" then return tostring(v) end
    return string.format("%.17g", v)
  end
  if tv == "string" then return encode_string(v) end
  if tv ~= "table" then error("salta.json: cannot encode a " .. tv, 0) end
  if path[v] then error("salta.json: cannot encode a table that contains itself", 0) end
  path[v] = true
  local pad = indent and ("\n" .. string.rep(indent, depth + 1)) or ""
  local close = indent and ("\n" .. string.rep(indent, depth)) or ""
  local parts = {}
  if is_array(v) then
    local flat = true
    for _, x in ipairs(v) do if type(x) == "table" then flat = false break end end
    for i, x in ipairs(v) do parts[i] = encode(x, indent, depth + 1, path) end
    path[v] = nil
    if #parts == 0 then return "[]" end
    if flat then return "[" .. table.concat(parts, ", ") .. "]" end
    return "[" .. pad .. table.concat(parts, "," .. pad) .. close .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  for i, k in ipairs(keys) do
    local val = v[k]
    if val == nil then val = v[tonumber(k)] end
 parts[i] = encode_string(k) .. ": " .. encode(val, indent, depth + 1, path)
  end
  path[v] = nil
  return "{" .. pad .. table.concat(parts, "," .. pad) .. close .. "}"
end

function M.encode(v, opts)
  return encode(v, (opts and opts.indent) or "  ", 0, {})
end

-- write(path, v): the whole document or nothing (salta.files).
function M.write(path, v)
  return require("salta.files").write(path, M.encode(v) .. "\n", "salta.json.write")
end

return M
