-- The richer-model examples fit end to end: every parameter within 5
-- standard errors of the truth the data were made from, and a plot written.
local function run(script)
  local dir = os.tmpname()
  os.remove(dir)
  local r = assert(loadfile(script))(dir)
  return r, dir
end

describe("the examples", function()
  for _, case in ipairs({ { "examples/rectifier_fit.lua", "rectifier.png" },
    { "examples/thermostat_fit.lua", "thermostat.png" } }) do
    it(case[1] .. " recovers every parameter and writes its plot", function()
      local r, dir = run(case[1])
      local se = assert(r:std_errors())
      for n, truth in pairs(r.truth) do
        assert(math.abs(r.params[n] - truth) <= 5 * se[n],
          ("%s: %s = %.6g, truth %.6g, standard error %.3g"):format(case[1], n, r.params[n], truth, se[n]))
      end
      local f = io.open(dir .. "/" .. case[2], "rb")
      assert(f, "no plot " .. dir .. "/" .. case[2])
      assert.are.equal("\137PNG", f:read(4))
      f:close()
      os.execute("rm -rf '" .. dir .. "'")
    end)
  end
end)
