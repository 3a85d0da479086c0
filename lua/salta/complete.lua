-- salta.complete: completions for the REPL (Tab): globals, fields of
-- tables reached by a dotted path, and methods after ':' (from the
-- metatables' __index tables). Walks only plain fields: nothing is called.
--
--   require("salta.complete").candidates("salta.he", _G) --> { "salta.help" }

local M = {}

-- The value at a dotted path from env, without calling anything; nil when
-- a step is not a table.
local function walk(env, path)
  local v = env
  for name in path:gmatch("[^.]+") do
    if type(v) ~= "table" then return nil end
    local nextv = rawget(v, name)
    if nextv == nil then
      local mt = getmetatable(v)
      local idx = type(mt) == "table" and rawget(mt, "__index")
      nextv = type(idx) == "table" and rawget(idx, name) or nil
    end
    v = nextv
  end
  return v
end

-- The string keys of v and of its metatables' __index tables (methods),
-- each with whether it is a function.
local function keys(v, out)
  local seen, depth = {}, 0
  while v ~= nil and depth < 8 do
    if type(v) == "table" then
      for k, x in pairs(v) do
        if type(k) == "string" and not seen[k] and not k:match("^__") then seen[k] = type(x) end
      end
    end
    local mt = getmetatable(v)
    local idx = type(mt) == "table" and rawget(mt, "__index")
    v = type(idx) == "table" and idx or nil
    depth = depth + 1
  end
  for k, ty in pairs(seen) do out[#out + 1] = { k, ty } end
end

function M.candidates(text, env)
  env = env or _G
  local path, sep, partial = text:match("^([%a_][%w_%.]*)([.:])([%w_]*)$")
  local base
  if path then
    base = walk(env, path)
    if base == nil then return {} end
  else
    if not text:match("^[%w_]*$") then return {} end
    partial, base, path, sep = text, env, "", ""
  end
  local ks, out = {}, {}
  keys(base, ks)
  for _, kt in ipairs(ks) do
    local k, ty = kt[1], kt[2]
    if k:sub(1, #partial) == partial and k:match("^[%a_][%w_]*$") and (sep ~= ":" or ty == "function") then
      out[#out + 1] = path .. sep .. k
    end
  end
  table.sort(out)
  return out
end

return M
