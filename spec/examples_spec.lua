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
    { "examples/thermostat_fit.lua", "thermostat.png" }, { "examples/dcmotor_fit.lua", "dcmotor.png" } }) do
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

describe("the scaling family models/cauer_ladder.lua", function()
  it("simulates the same by ERK and by a tight BDF run, with its clamp events", function()
    local m = dofile("models/cauer_ladder.lua"){ N = 5 }
    local times = {}
    for i = 1, 50 do times[i] = i * 0.4 end
    local a = m:simulate{ tf = 20, times = times, rtol = 1e-9, atol = 1e-11, method = "erk" }
    local b = m:simulate{ tf = 20, times = times, rtol = 1e-12, atol = 1e-13, method = "bdf" }
    assert.is_true(#a:events() > 0)
    assert.are.equal(#b:events(), #a:events())
    for i = 1, #times do assert.is_near(b.y.vN[i], a.y.vN[i], 1e-6) end
    assert.are.equal(15, #m.states + #m.algebraics)
  end)
end)
