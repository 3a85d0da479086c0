-- What the truth fuzzer found (spec/fuzz/truth.lua), each against its
-- closed form or the other routes: a two-sided guard fires once per
-- crossing; a schedule's crossing in the step after another event is not
-- skipped whatever the events' order; the discrete adjoint reads each
-- target on the side of an event the forward run read it on; its mesh
-- follows the tolerance at every target, not only at the run's end.
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

  it("the adjoint's mesh follows the tolerance at every target, not only at the run's end", function()
    -- a torn loop forced by a sine: on ERK's steps the trapezoid's error
    -- at the last target is far below its error at the others
    local m = salta.dae{ name = "torn_forced", states = { { "x", 0.5 } },
      algebraics = { { "a", 0.5 }, { "b", 0.1 }, { "c", 0.7 } },
      params = { { "q", 0.71972508115718 }, { "r", 1.0695925224813 } },
      f = function(t, x, z, p) return { p.r * (z.b - x.x) + 0.6 * salta.sin(3 * t) } end,
      g = function(t, x, z, p)
        return { z.a - 0.5 * z.c - x.x, z.b - 0.3 * z.a * z.a, z.c + 0.2 * z.b * z.b * z.b - p.q }
      end }
    local times = { 0.15, 0.45, 0.75, 1.05, 1.35, 1.65 }
    local data = { a = { 0.8312188388, 0.8795666013, 0.9501385008, 0.9225593798, 0.7589120795, 0.5368142306 } }
    local free, p = { "x0.x", "r", "q" }, { 0.5, 1.0695925224813, 0.71972508115718 }
    local function loss(method, rtol)
      return salta.lsq{ model = m, times = times, data = data, outputs = { "a" }, free = free, rtol = rtol,
        atol = rtol * 1e-2, method = method }
    end
    local gs = loss("bdf", 1e-11):grad(p)
    local G = math.max(math.abs(gs[1]), math.abs(gs[2]), math.abs(gs[3]))
    for _, rtol in ipairs({ 1e-7, 1e-8 }) do   -- measured: within 700 rtol; 1e4 and 4e4 rtol on the run's end alone
      local ga = loss("erk", rtol):grad(p, { method = "adjoint" })
      for k = 1, 3 do assert.is_near(gs[k], ga[k], 2e3 * rtol * G, free[k] .. " at rtol " .. rtol) end
    end
  end)
end)
