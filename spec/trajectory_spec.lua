-- Trajectories: CSV output, interpolation, segments, recorded steps; and
-- the JIT backend choice with its fallback.
local H = require("helpers")
local jit = require("salta.jit")

describe("trajectory", function()
  local m = H.model("spring_latch")
  local tr = m:simulate{ tf = 10, times = { 0, 0.5, 1, 2.5, 5, 10 }, rtol = 1e-9, atol = 1e-11, record_steps = true }

  it("writes CSV with a header and 17 significant digits", function()
    local path = os.tmpname()
    tr:to_csv(path)
    local f = assert(io.open(path))
    assert.are.equal("t,x,v,F", f:read("l"))
    local k = 0
    for line in f:lines() do
      k = k + 1
      local vals = {}
      for v in line:gmatch("[^,]+") do vals[#vals + 1] = tonumber(v) end
      assert.are.equal(tr.t[k], vals[1])
      assert.are.equal(tr.y.x[k], vals[2])    -- round trip exact
      assert.are.equal(tr.y.F[k], vals[4])
    end
    f:close()
    os.remove(path)
    assert.are.equal(#tr.t, k)
  end)

  it("returns stored values at output times and interpolates between them", function()
    assert.are.equal(tr.y.v[4], tr:at(2.5).v)
    local a = tr:at(7.5)
    assert.is_true(a.x ~= nil and a.x == a.x)
    assert.has_error(function() tr:at(11) end)
  end)

  it("records every internal step, including both sides of each event", function()
    local steps = tr.steps
    assert.is_true(#steps.t > 50)
    for k = 2, #steps.t do assert.is_true(steps.t[k] >= steps.t[k - 1]) end
    for _, e in ipairs(tr:events()) do
      local hits = 0
      for k = 1, #steps.t do if steps.t[k] == e.t then hits = hits + 1 end end
      assert.is_true(hits >= 2, "event time recorded as a step before and after the reset")
    end
    local seg = tr:segments()
    assert.are.equal(#tr:events() + 2, #seg)
    assert.are.equal(0, seg[1]); assert.are.equal(10, seg[#seg])
  end)

  it("prints a readable summary", function()
    local s = tostring(tr)
    assert.truthy(s:find("trajectory of 'spring_latch'", 1, true))
    assert.truthy(s:find("event 'latch_high'", 1, true))
  end)
end)

describe("JIT backends", function()
  it("compile the same model to the same kernels, or fall back", function()
    local balls = dofile("models/bouncing_balls.lua")
    local available = jit.available()
    local a = balls{ N = 3, backend = "cc" }
    assert.are.equal("cc", a.compile_info.backend)
    local b = balls{ N = 3, backend = "tcc" }
    assert.are.equal(available.tcc and "tcc" or "cc", b.compile_info.backend)
    local rnd = H.rng(3)
    local t, x, z, p = H.random_point(a, rnd)
    assert.are.same(a:eval("guard", t, x, z, p), b:eval("guard", t, x, z, p))
  end)
  it("refuses an unknown backend", function()
    local ok, err = pcall(dofile("models/cauer.lua"), { backend = "gcc-jit" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("unknown JIT backend 'gcc-jit'", 1, true))
  end)
end)
