-- Builds every shipped model with its default options and prints one line
-- per model: its file, a tab, the hash of its generated C source; with the
-- argument "reverse", in the reverse order. Run from the repository root
-- (spec/determinism_spec.lua runs it in several processes and compares).
package.path = "./lua/?.lua;./lua/?/init.lua;" .. package.path
local salta = require("salta")
local core = require("salta.core")

local files = {}
local ls = assert(io.popen("ls models/*.lua models/specs/*.json models/specs/*.yaml examples/data/thermostat_spec.json"))
for f in ls:lines() do files[#files + 1] = f end
ls:close()
if arg[1] == "reverse" then
  for i = 1, #files // 2 do files[i], files[#files + 1 - i] = files[#files + 1 - i], files[i] end
end
for _, f in ipairs(files) do
  local m = f:match("%.lua$") and dofile(f)({}) or salta.load_spec(f)
  io.write(f, "\t", core.hash(m.compile_info.source), "\n")
end
