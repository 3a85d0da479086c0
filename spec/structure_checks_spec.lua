-- The structural compiler checks itself while a run integrates, on every
-- route (ERK, BDF, forward sensitivities on either, the adjoint): a dummy
-- derivative whose pivot vanishes, and a Newton block whose branch ends
-- (a fold of the algebraic equations), stop the run with a message naming
-- the dummy or the block, the time and the values, instead of a wrong
-- trajectory or a bare solver failure; a reset's legitimate jump to
-- another root is not one; and no shipped model sees a false alarm.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

-- Every route a model runs on: simulation by ERK and by BDF, the loss's
-- gradient by forward sensitivities on each, and by the adjoint (its
-- forward run and its discrete march). data: outputs to fit, free: names.
local function routes(m, tf, data, free, p)
  local times = H.uniform(tf, 10)
  local function loss(method)
    local d = {}
    for _, n in ipairs(data) do d[n] = {} for k = 1, #times do d[n][k] = 0 end end
    return salta.lsq{ model = m, times = times, data = d, free = free, method = method }
  end
  return {
    { "ERK", function() return m:simulate{ tf = tf, method = "erk" } end },
    { "BDF", function() return m:simulate{ tf = tf, method = "bdf" } end },
    { "ERK sensitivities", function() return loss("erk"):grad(p) end },
    { "BDF sensitivities", function() return loss("bdf"):grad(p) end },
    { "adjoint", function() return loss(nil):grad(p, { method = "adjoint" }) end },
  }
end

-- The time the polar pendulum (theta from hanging down, omega) first
-- makes coordinate c ("x": L sin, "y": -L cos) pass 0, by RK4.
local function first_zero(theta, omega, c, g)
  local function coord(th) return c == "x" and math.sin(th) or -math.cos(th) end
  local t, h, s0 = 0, 1e-4, coord(theta)
  while t < 10 do
    local function f(th, om) return om, -g * math.sin(th) end
    local a1, b1 = f(theta, omega)
    local a2, b2 = f(theta + h / 2 * a1, omega + h / 2 * b1)
    local a3, b3 = f(theta + h / 2 * a2, omega + h / 2 * b2)
    local a4, b4 = f(theta + h * a3, omega + h * b3)
    theta, omega, t = theta + h / 6 * (a1 + 2 * a2 + 2 * a3 + a4), omega + h / 6 * (b1 + 2 * b2 + 2 * b3 + b4), t + h
    if (coord(theta) > 0) ~= (s0 > 0) then return t end
  end
end

describe("a dummy derivative whose pivot vanishes", function()
  -- the index-3 pendulum (L = 1) going over the horizontal: started from
  -- rest above it (10 angles), or swung from near the bottom fast enough
  -- to pass it (10 speeds). The dummy is y (or x above 3 pi / 4 ... pi / 4
  -- from the top: the larger partial at the start), whose pivot, 2 y
  -- (2 x), vanishes where the rod passes the horizontal (the vertical).
  local cases = {}
  for k = 0, 9 do cases[#cases + 1] = { angle = 2.2 + 0.09 * k, v = 0 } end
  for k = 0, 9 do cases[#cases + 1] = { angle = 0.1, v = 4.8 + 0.6 * k } end
  for _, method in ipairs({ "erk", "bdf" }) do
    it(("stops %s in all 20 runs over the top, naming the dummy, its constraint, the time and the pivot"):format(
      method:upper()), function()
      local stopped = 0
      for _, c in ipairs(cases) do
        local m = H.model("pendulum", { angle = c.angle })
        local dummy = m.structure.dummies[1]
        local theta0 = c.angle
        local t_zero = first_zero(theta0, c.v / math.cos(theta0), dummy, 9.81)
        local msg = err_of(m.simulate, m, { tf = 3, method = method, x0 = c.v > 0 and { vx = c.v } or nil })
        has(msg, "model 'pendulum': index reduction's dummy derivative '", "(of the constraint "
          .. "0 = x * x + y * y - L * L) fails", "its pivot, the derivative of its constraint by '")
        assert(msg:find("'" .. dummy .. "'", 1, true) or msg:find("'v" .. dummy .. "'", 1, true), msg)
        -- the time: where the true motion makes the pivot vanish
        local t = tonumber(msg:match("fails at t = ([%d.e+-]+)") or msg:match("and ([%d.e+-]+): its pivot"))
        assert(t and math.abs(t - t_zero) <= 0.01, ("angle %g, v %g: stopped at t = %s, the pivot vanishes at %g: %s")
          :format(c.angle, c.v, tostring(t), t_zero, msg))
        stopped = stopped + 1
      end
      assert.are.equal(20, stopped)
    end)
  end

  it("stops the gradient routes too", function()
    local m = H.model("pendulum", { angle = 2.5 })
    for _, r in ipairs(routes(m, 2, { "x" }, { "g" }, { 9.81 })) do
      local ok, msg = pcall(r[2])
      assert(not ok, r[1] .. " ran through the horizontal")
      has(tostring(msg), "index reduction's dummy derivative 'y'", "its pivot")
    end
  end)

  it("leaves a swing that stays clear of the horizontal alone, on every route", function()
    local m = H.model("pendulum", { angle = 0.5 })
    local tr = m:simulate{ tf = 5, method = "bdf", rtol = 1e-10, atol = 1e-12 }
    for q = 1, #tr.t do assert(math.abs(tr.y.x[q] ^ 2 + tr.y.y[q] ^ 2 - 1) <= 1e-10) end
    for _, r in ipairs(routes(m, 2, { "x" }, { "g" }, { 9.81 })) do assert(r[2](), r[1]) end
  end)
end)

-- a^3 - a = c x, x = sin t: the branch of a through 0 ends where
-- 3 a^2 = 1, at c x = 2 / sqrt(27) (t = asin(0.7698) with c = 0.5); past
-- it Newton would jump to another root (the torn loop used to, silently).
local FOLD_T = math.asin(2 / math.sqrt(27) / 0.5)
local function fold_model(kind)
  local g = {
    scalar = function(t, x, z, p) return { z.a ^ 3 - z.a - p.c * x.x, z.b - z.a ^ 2 } end,
    torn = function(t, x, z, p) return { z.a * z.b - z.a - p.c * x.x, z.b - z.a ^ 2 } end,
    pair = function(t, x, z, p) return { z.a ^ 3 - z.a + 0.1 * salta.sin(z.b) - p.c * x.x, z.b ^ 3 + z.b - z.a ^ 3 } end,
  }
  return salta.dae{ name = "fold_" .. kind, states = { { "x", 0 }, { "v", 1 } },
    algebraics = { { "a", 0 }, { "b", 0 } }, params = { { "c", 0.5 } },
    f = function(t, x) return { x.v, -x.x } end, g = g[kind] }
end

describe("a Newton block whose branch ends at a fold", function()
  local cases = {
    { "scalar", "the block solving 'a' = -0.577", FOLD_T },            -- a scalar block, b assigned
    { "torn", "the block solving 'b' = 0.333", FOLD_T },               -- a torn loop: b torn, a assigned
    { "pair", "the block solving 'a' = -0.55", 0.8256 },               -- two tearing variables
  }
  for _, c in ipairs(cases) do
    it(("stops every route at the fold, naming the block: %s"):format(c[1]), function()
      local m = fold_model(c[1])
      assert.are.equal(1, #m.structure.blocks)
      for _, r in ipairs(routes(m, 3, { "a", "b" }, { "c" }, { 0.5 })) do
        local ok, msg = pcall(r[2])
        assert(not ok, r[1] .. " went past the fold")
        msg = tostring(msg)
        has(msg, "model 'fold_" .. c[1] .. "': the algebraic equations reach a fold (a turning point) near t = ",
          c[2], "has no solution beyond it that continues the branch the run followed")
        assert(not msg:find("IDAS failed", 1, true), msg)
        local t = tonumber(msg:match("near t = ([%d.e+-]+)"))
        assert(math.abs(t - c[3]) <= 1e-3, ("%s: the fold at t = %g, not %g"):format(r[1], t, c[3]))
      end
    end)
  end

  it("follows the branch up to the fold exactly (ERK and BDF)", function()
    local m = fold_model("torn")
    for _, method in ipairs({ "erk", "bdf" }) do
      local tr = m:simulate{ tf = 0.85, method = method, rtol = 1e-10, atol = 1e-12 }
      for q, t in ipairs(tr.t) do
        local a, b = tr.z.a[q], tr.z.b[q]
        assert(a <= 0 and a > -0.5774, ("%s: a = %g at t = %g left the branch"):format(method, a, t))
        assert(math.abs(a ^ 3 - a - 0.5 * math.sin(t)) <= 1e-8 and math.abs(b - a * a) <= 1e-12)
      end
    end
  end)

  it("lets a reset jump to another root (re-consistency) and follows the new branch", function()
    -- x rises; at x = 0.2 a reset puts it at 1, where a^3 - a = x has one
    -- root (1.32): the middle branch is left by the event, not by Newton
    local m = salta.dae{ name = "kick", states = { { "x", 0 } }, algebraics = { { "a", 0 }, { "b", 0 } },
      f = function() return { 0.1 } end,
      g = function(t, x, z) return { z.a * z.b - z.a - x.x, z.b - z.a ^ 2 } end,
      events = { { name = "kick", direction = "up", guard = function(t, x) return x.x - 0.2 end,
        reset = function() return { x = 1 } end } } }
    for _, method in ipairs({ "erk", "bdf" }) do
      local tr = m:simulate{ tf = 4, method = method, rtol = 1e-10, atol = 1e-12 }
      assert.are.equal(1, #tr:events())
      for q, t in ipairs(tr.t) do
        local a, x = tr.z.a[q], tr.x.x[q]
        assert(math.abs(a ^ 3 - a - x) <= 1e-9, ("%s at t = %g: a = %g, x = %g"):format(method, t, a, x))
        assert(t < 2 and a < 0.58 or t >= 2 and a > 1.3, ("%s at t = %g: a = %g"):format(method, t, a))
      end
    end
  end)
end)

describe("every shipped model", function()
  -- no false alarm: each runs on every route (tf and outputs as the other
  -- specs use them)
  local cases = {
    { "pendulum", function() return dofile("models/pendulum.lua")() end, 5, { "x" } },
    { "bouncing_balls", function() return dofile("models/bouncing_balls.lua")() end, 1.9, nil },
    { "cauer", function() return dofile("models/cauer.lua")() end, 20, { "C1_v" } },
    { "cauer_ladder", function() return dofile("models/cauer_ladder.lua")() end, 10, nil },
    { "spring_latch", function() return dofile("models/spring_latch.lua")() end, 10, nil },
    { "rectifier", function() return dofile("models/rectifier.lua")() end, 0.05, nil },
    { "thermostat", function() return dofile("models/thermostat.lua")() end, 10, nil },
    { "rc_network", function() return dofile("models/rc_network.lua")() end, 4, nil },
    { "thermostat_spec", function() return salta.load_spec("examples/data/thermostat_spec.json") end, 10, nil },
  }
  for _, file in ipairs(H.SPECS) do
    cases[#cases + 1] = { file, function() return salta.load_spec(H.spec_path(file)) end,
      file:find("balls") and 1.9 or 3, nil }
  end
  for _, c in ipairs(cases) do
    it(("runs on every route without a structural alarm: %s"):format(c[1]), function()
      local m = c[2]()
      local outs = c[4] or { m.outputs[1] }
      local p = {}
      for i, n in ipairs(m.params) do p[i] = m.p0[n] end
      for _, r in ipairs(routes(m, c[3], outs, m.params, p)) do
        local ok, res = pcall(r[2])
        assert(ok, ("%s, %s: %s"):format(c[1], r[1], tostring(res)))
      end
    end)
  end
end)
