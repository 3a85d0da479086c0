-- What the truth fuzzer found (spec/fuzz/truth.lua), each against its
-- closed form or the other routes: a two-sided guard fires once per
-- crossing; a schedule's crossing in the step after another event is not
-- skipped whatever the events' order; the discrete adjoint reads each
-- target on the side of an event the forward run read it on.
local salta = require("salta")

describe("the truth fuzzer's finds", function()
  it("a two-sided guard fires once at its crossing, on every route", function()
    local m = salta.dae{ name = "both_once", states = { { "y", 0 } }, discrete = { { "n", 0 } },
      f = function() return { 1 } end,
      events = { { name = "cross", direction = "both", guard = function(t, x) return x.y - 0.25 end,
        reset = function(t, x) return { n = x.n + 1 } end } } }
    for _, o in ipairs({ { "erk", 1e-6 }, { "bdf", 1e-6 }, { "erk", 1e-8 }, { "bdf", 1e-12 } }) do
      local ev = m:simulate{ tf = 1, method = o[1], rtol = o[2], atol = o[2] * 1e-2 }:events()
      assert.are.equal(1, #ev, o[1] .. " " .. o[2])
      assert.is_near(0.25, ev[1].t, 1e-12)
    end
  end)

  it("a schedule's crossing right after another event is found whatever the events' order", function()
    local P = 0.37
    local A = { name = "A", direction = "up", guard = function(t, x) return x.x - 1 end,
      reset = function() return { x = 0 } end }
    local tick = { name = "tick", direction = "up", guard = function(t) return salta.sin(2 * math.pi * t / P) end,
      reset = function(t, x) return { n = x.n + 1 } end }
    for _, order in ipairs({ { A, tick }, { tick, A } }) do
      local m = salta.dae{ name = "ticks", states = { { "x", 0.32136831944094 } }, discrete = { { "n", 0 } },
        params = { { "rate", 1.68729967578 } }, f = function(t, x, z, p) return { p.rate } end, events = order }
      for _, o in ipairs({ { "erk", 1e-6 }, { "erk", 1e-8 }, { "bdf", 1e-6 } }) do
        local ticks = {}
        for _, e in ipairs(m:simulate{ tf = 2, method = o[1], rtol = o[2], atol = o[2] * 1e-2 }:events()) do
          if e.name == "tick" then ticks[#ticks + 1] = e.t end
        end
        assert.are.equal(5, #ticks, o[1] .. " " .. o[2])
        for k, t in ipairs(ticks) do assert.is_near(k * P, t, 1e-9) end
      end
    end
  end)

  it("a schedule faster than the steps fires at every crossing (the states barely move, so ERK's steps span periods)", function()
    -- up-crossings of sin(2 pi (t / P + ph)) in (0, tf]: t = P (k - ph)
    local function crossings(P, ph, tf)
      local ts = {}
      for k = 0, math.ceil(tf / P) + 1 do
        local t = P * (k - ph)
        if t > 1e-9 and t <= tf then ts[#ts + 1] = t end
      end
      return ts
    end
    local cases = { { 0.37, 0.017417626013, 0 }, { 1.375, 0.0534, 0.356 } }
    local rng = 20261203
    for _ = 1, 10 do   -- a fixed sequence of periods, decay rates and phases
      rng = (rng * 1103515245 + 12345) % 2147483648
      local u1 = rng / 2147483648
      rng = (rng * 1103515245 + 12345) % 2147483648
      local u2 = rng / 2147483648
      cases[#cases + 1] = { 0.03 + 1.5 * u1, 10 ^ (-3 + 3 * u2), u1 * u2 }
    end
    for _, c in ipairs(cases) do
      local m = salta.dae{ name = "room", states = { { "T", 20 } }, discrete = { { "n", 0 } },
        params = { { "a", c[2] }, { "P", c[1] }, { "ph", c[3] } },
        f = function(t, x, z, p) return { -p.a * (x.T - 10) } end,
        events = { { name = "tick", direction = "up",
          guard = function(t, x, z, p) return salta.sin(2 * math.pi * (t / p.P + p.ph)) end,
          reset = function(t, x) return { n = x.n + 1 } end } } }
      local want = crossings(c[1], c[3], 4)
      for _, o in ipairs({ { "erk", 1e-6 }, { "erk", 1e-8 }, { "erk", 1e-10 }, { "bdf", 1e-8 } }) do
        local ev = m:simulate{ tf = 4, method = o[1], rtol = o[2], atol = o[2] * 1e-2 }:events()
        local label = ("P %.4g, a %.3g, ph %.3f, %s rtol %g"):format(c[1], c[2], c[3], o[1], o[2])
        assert.are.equal(#want, #ev, label)
        for k, t in ipairs(want) do assert.is_near(t, ev[k].t, 1e-7 * (1 + t), label) end
      end
    end
  end)

  it("the adjoint reads a target a rounding error before an event where the run read it", function()
    local m = salta.dae{ name = "room", states = { { "T", 20 } }, params = { { "a", 0.02 }, { "kick", 0.1 } },
      f = function(t, x, z, p) return { -p.a * (x.T - 10) } end,
      events = { { name = "tick", direction = "up", guard = function(t) return salta.sin(2 * math.pi * t) end,
        reset = function(t, x, z, p) return { T = x.T + p.kick } end } } }
    local times, data = {}, { T = {} }
    for i = 1, 20 do times[i] = 0.2 * i; data.T[i] = 19 end   -- t = 1, 2, 3 and 4 are tick times
    local L = salta.lsq{ model = m, times = times, data = data, free = { "a", "kick" }, rtol = 1e-9, atol = 1e-11,
      method = "bdf" }
    local p = { 0.02, 0.1 }
    assert.is_near(L:value(p), L:value(p, { method = "adjoint" }), 1e-7 * L:value(p))
    local gs, ga = L:grad(p), L:grad(p, { method = "adjoint" })
    for k = 1, 2 do assert.is_near(gs[k], ga[k], 1e-5 * math.abs(gs[1])) end
  end)
end)
