-- Event times' sensitivities: model:simulate{sens = {...}} gives each
-- event's dtau (by parameter, "x0.<state>" for a start value) and the
-- trajectory's dt_end, against Richardson central differences of the event
-- times of tightened runs and, where there is one, the closed form.
local salta = require("salta")
local H = require("spec.helpers")

local TIGHT = { rtol = 1e-11, atol = 1e-13 }

-- The run at params p (by name) with start x0 (by name, or nil), tight.
local function run(m, tf, p, x0, sens)
  return m:simulate{ tf = tf, params = p, x0 = x0, sens = sens, rtol = TIGHT.rtol, atol = TIGHT.atol }
end

-- Event times by name and occurrence ("impact#3"), and the end.
local function times_of(tr)
  local out, seen = { t_end = tr.t_end or tr.tf }, {}
  for _, e in ipairs(tr:events()) do
    seen[e.name] = (seen[e.name] or 0) + 1
    out[e.name .. "#" .. seen[e.name]] = e.t
  end
  return out
end

-- d(event times)/d direction by (4 D(h) - D(2h)) / 3, D(h) the central
-- difference with step h relative to the value (absolute where it is 0).
local function differences(m, tf, p, x0, dir)
  local st = dir:match("^x0%.(.+)$")
  local base = st and x0[st] or p[dir]
  local h = 1e-3 * math.max(math.abs(base), 1e-2)
  local function at(v)
    local pp, xx = {}, {}
    for k, w in pairs(p) do pp[k] = w end
    for k, w in pairs(x0) do xx[k] = w end
    if st then xx[st] = v else pp[dir] = v end
    return times_of(run(m, tf, pp, xx))
  end
  local up, down, up2, down2 = at(base + h), at(base - h), at(base + 2 * h), at(base - 2 * h)
  local out = {}
  for k in pairs(up) do
    assert(down[k] and up2[k] and down2[k], "the event sequence changes within the steps at " .. k)
    local d1, d2 = (up[k] - down[k]) / (2 * h), (up2[k] - down2[k]) / (4 * h)
    out[k] = (4 * d1 - d2) / 3
  end
  return out
end

-- Every event's dtau and dt_end against the differences, each within rel
-- of the largest of its derivatives; returns the events (for closed forms).
local function check(m, tf, p, x0, sens, rel)
  local tr = run(m, tf, p, x0, sens)
  local ev = tr:events()
  assert.is_true(#ev > 0)
  local ref = {}
  for _, dir in ipairs(sens) do ref[dir] = differences(m, tf, p, x0, dir) end
  local seen = {}
  local function compare(key, got)
    local big = 0
    for _, dir in ipairs(sens) do big = math.max(big, math.abs(ref[dir][key])) end
    for _, dir in ipairs(sens) do
      local want = ref[dir][key]
      assert(math.abs(got[dir] - want) <= rel * math.max(big, 1e-12),
        ("%s by %s: %.12g, differences %.12g"):format(key, dir, got[dir], want))
    end
  end
  for _, e in ipairs(ev) do
    seen[e.name] = (seen[e.name] or 0) + 1
    compare(e.name .. "#" .. seen[e.name], e.dtau)
  end
  compare("t_end", tr.dt_end)
  return ev, tr
end

describe("event times' sensitivities", function()
  it("of a bouncing ball agree with differences and with the closed form", function()
    local p, x0 = { g = 9.81, e = 0.8 }, { h = 1, v = 0 }
    local ev = check(H.ball(), 3, p, x0, { "g", "e", "x0.h", "x0.v" }, 1e-6)
    -- tau_k = t1 + sum_{i<k} 2 e^i v1 / g, t1 = sqrt(2h/g), v1 = g t1
    local g, e, h = 9.81, 0.8, 1
    local t1 = math.sqrt(2 * h / g)
    for k, r in ipairs(ev) do
      local s, ds = 0, 0   -- sum_{i=1}^{k-1} e^i and its derivative by e
      for i = 1, k - 1 do s, ds = s + e ^ i, ds + i * e ^ (i - 1) end
      local tau = t1 * (1 + 2 * s)
      assert.is_near(tau, r.t, 1e-9)
      assert.is_near(-tau / (2 * g), r.dtau.g, 1e-7)
      assert.is_near(2 * t1 * ds, r.dtau.e, 1e-7)
      assert.is_near(tau / (2 * h), r.dtau["x0.h"], 1e-7)
    end
  end)

  it("of a relay's switching instants agree with differences and the closed form", function()
    local p = { a = 0.5, P = 8, T_lo = 19, T_hi = 21 }
    local ev = check(H.relay(), 12, p, { T = 15, heating = 1 }, { "a", "P", "T_lo", "T_hi", "x0.T" }, 1e-6)
    assert.is_true(#ev >= 5)
    -- heating: T -> 10 + P/a = 26 from 15; off at T_hi: t = log((26 - 15) / (26 - 21)) / a
    local t_off = math.log(11 / 5) / 0.5
    assert.are.equal("off", ev[1].name)
    assert.is_near(t_off, ev[1].t, 1e-9)
    assert.is_near(1 / (0.5 * 5), ev[1].dtau.T_hi, 1e-7)   -- d t / d T_hi = 1 / (a (26 - T_hi))
    assert.is_near(-1 / (0.5 * 11), ev[1].dtau["x0.T"], 1e-7)
    assert.are.equal(0, ev[1].dtau.T_lo)
  end)

  it("of a group's members are each their own, and agree with differences", function()
    -- two balls dropped alike land together; a start height of one moves its member only
    local m = salta.dae{ name = "two_balls", states = { { "h1", 1 }, { "v1", 0 }, { "h2", 1 }, { "v2", 0 } },
      params = { { "g", 9.81 }, { "e1", 0.8 }, { "e2", 0.6 } },
      f = function(t, x, z, p) return { x.v1, -p.g, x.v2, -p.g } end,
      events = {
        { name = "floor1", direction = "down", guard = function(t, x) return x.h1 end,
          reset = function(t, x, z, p) return { v1 = -p.e1 * x.v1 } end },
        { name = "floor2", direction = "down", guard = function(t, x) return x.h2 end,
          reset = function(t, x, z, p) return { v2 = -p.e2 * x.v2 } end },
      } }
    local ev = check(m, 1.5, { g = 9.81, e1 = 0.8, e2 = 0.6 }, { h1 = 1, v1 = 0, h2 = 1, v2 = 0 },
      { "g", "e1", "e2", "x0.h1", "x0.h2" }, 1e-6)
    assert.are.equal(2, ev[1].group_size)
    assert.are.equal(0, ev[1].dtau["x0.h2"])
    assert.are.equal(0, ev[2].dtau["x0.h1"])
    assert.is_true(ev[1].dtau["x0.h1"] > 0 and ev[2].dtau["x0.h2"] > 0)
  end)

  it("of a cascade round are its located instant's, and agree with differences", function()
    -- a clock ticks at x = a (x := 0, y := y + b); y wraps past c in a cascade after a tick
    local m = salta.dae{ name = "counter", states = { { "x", 0 }, { "y", 0 } },
      params = { { "a", 1 }, { "b", 0.45 }, { "c", 1 }, { "k", 0.3 } },
      f = function(t, x, z, p) return { 1 + p.k * x.y, 0 } end,
      events = {
        { name = "tick", direction = "up", guard = function(t, x, z, p) return x.x - p.a end,
          reset = function(t, x, z, p) return { x = 0, y = x.y + p.b } end },
        { name = "wrap", direction = "up", guard = function(t, x, z, p) return x.y - p.c end,
          reset = function(t, x, z, p) return { y = x.y - p.c } end },
      } }
    local ev = check(m, 5.5, { a = 1, b = 0.45, c = 1, k = 0.3 }, { x = 0, y = 0 }, { "a", "b", "c", "k" }, 1e-6)
    local cascades = 0
    for k, e in ipairs(ev) do
      if e.cascade > 0 then
        cascades = cascades + 1
        for dir, v in pairs(ev[k - 1].dtau) do assert.are.equal(v, e.dtau[dir]) end
      end
    end
    assert.is_true(cascades >= 2)
  end)

  it("of a terminal event give dt_end, against differences and the closed form; at tf dt_end is 0", function()
    local m = salta.dae{ name = "shot", states = { { "y", 1 }, { "v", 2 } }, params = { { "g", 9.81 }, { "c", 0.3 } },
      f = function(t, x, z, p) return { x.v, -p.g - p.c * x.v } end,
      events = { { name = "ground", direction = "down", guard = function(t, x) return x.y end, terminal = true } } }
    local _, tr = check(m, 2, { g = 9.81, c = 0.3 }, { y = 1, v = 2 }, { "g", "c", "x0.y", "x0.v" }, 1e-6)
    assert.are.equal(tr:events()[1].dtau.g, tr.dt_end.g)
    -- without drag: t* = (v0 + sqrt(v0^2 + 2 g y0)) / g
    local nd = run(m, 2, { g = 9.81, c = 0 }, nil, { "g", "x0.y", "x0.v" })
    local q = math.sqrt(4 + 2 * 9.81)
    assert.is_near((2 + q) / 9.81, nd.t_end, 1e-9)
    assert.is_near(1 / q, nd.dt_end["x0.y"], 1e-7)
    assert.is_near((1 + 2 / q) / 9.81, nd.dt_end["x0.v"], 1e-7)
    assert.is_near(1 / (9.81 * q) - (2 + q) / 9.81 ^ 2, nd.dt_end.g, 1e-7)
    local free_run = run(m, 0.5, { g = 9.81, c = 0.3 }, nil, { "g", "c" })
    assert.is_nil(free_run.t_end)
    assert.are.same({ g = 0, c = 0 }, free_run.dt_end)
  end)

  it("come only with sens, name unknown directions, and reach the C API", function()
    local tr = H.ball():simulate{ tf = 1 }
    assert.is_nil(tr:events()[1].dtau)
    assert.is_nil(tr.dt_end)
    H.has(H.err_of(function() return H.ball():simulate{ tf = 1, sens = { "q" } } end), "sens", "'q'", "parameter")
    H.has(H.err_of(function() return H.ball():simulate{ tf = 1, sens = { "x0.w" } } end), "no state 'w'")
    local doc = H.read_file("engine/include/salta.h")
    assert.truthy(doc:find("int salta_sim_t_end_sens(salta_sim *sim, const double **t_end_p);", 1, true))
  end)
end)
