-- The same model gives byte-identical C in every process: the generated
-- source (and so the JIT cache key) must not follow the addresses of
-- expression nodes (pairs() over node-keyed tables), only what the model is.
local BIN = os.getenv("SALTA_BIN") or "build/salta"
local RUNS = 4

-- One process's {file = source hash} over every shipped model, built in
-- the reverse order with reverse.
local function hashes(reverse)
  local f = assert(io.popen(BIN .. " spec/support/source_hashes.lua" .. (reverse and " reverse" or "") .. " 2>&1"))
  local out, text = {}, f:read("a")
  f:close()
  for file, hash in text:gmatch("([^\t\n]+)\t(%x+)\n") do out[file] = hash end
  assert(next(out), "no hashes from spec/support/source_hashes.lua: " .. text)
  return out
end

describe("deterministic code generation", function()
  it("gives every shipped model the same C source in " .. RUNS .. " processes, whatever was built before", function()
    local runs = {}
    for r = 1, RUNS do runs[r] = hashes(r == RUNS) end
    local files, differ = {}, {}
    for file in pairs(runs[1]) do files[#files + 1] = file end
    table.sort(files)
    -- every shipped model: the Lua constructors, the specs, the thermostat spec
    assert.is_true(#files >= 13, "only " .. #files .. " models")
    assert.is_truthy(runs[1]["models/specs/dae_specification_cauer_events.json"])
    assert.is_truthy(runs[1]["models/pendulum.lua"])
    assert.is_truthy(runs[1]["examples/data/thermostat_spec.json"])
    for _, file in ipairs(files) do
      local seen, n = {}, 0
      for r = 1, RUNS do
        local h = runs[r][file]
        if not seen[h] then seen[h], n = true, n + 1 end
      end
      if n > 1 then differ[#differ + 1] = ("%s (%d sources)"):format(file, n) end
    end
    assert.are.same({}, differ)
  end)
end)
