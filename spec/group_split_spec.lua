-- Groups a direction splits: two oscillators with stops started alike fire
-- their stop events in simultaneous pairs; a free start value or a
-- parameter of one of them moves one member's event time and not the
-- other's. The jump composes the members in sequence with the flows
-- between them: every route agrees with central differences of a tight
-- loss, every parameter. Members that do not commute (the order of firing
-- changes the first-order jump, or one reads what the other sets) are
-- reported, naming the members and the direction.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

-- x_i'' = -k_i x_i - c x_i' + couple (x_j' - x_i') per oscillator; a stop at
-- x_i = 0 reflects v_i with restitution e (reading v_j too when cross > 0)
local function stops(name, couple, cross)
  return salta.dae{ name = name,
    states = { { "x1", 1 }, { "v1", 0 }, { "x2", 1 }, { "v2", 0 } },
    params = { { "k1", 4 }, { "k2", 4 }, { "e", 0.7 }, { "c", 0.1 } },
    f = function(t, x, z, p)
      return { x.v1 + couple * (x.v2 - x.v1), -p.k1 * x.x1 - p.c * x.v1,
               x.v2 + couple * (x.v1 - x.v2), -p.k2 * x.x2 - p.c * x.v2 }
    end,
    events = {
      { name = "stop1", direction = "down", guard = function(t, x) return x.x1 end,
        reset = function(t, x, z, p) return { v1 = -p.e * x.v1 } end },
      { name = "stop2", direction = "down", guard = function(t, x) return x.x2 end,
        reset = function(t, x, z, p) return { v2 = -p.e * x.v2 + cross * x.v1 } end },
    } }
end

local TIMES = {}
for i = 1, 60 do TIMES[i] = i * 0.05 end

local function loss(m, free, rtol, method)
  local tr = m:simulate{ tf = 3, times = TIMES, rtol = 1e-12, atol = 1e-12, method = "erk" }
  local data = { x1 = {}, x2 = {} }
  for i = 1, #TIMES do data.x1[i], data.x2[i] = tr.y.x1[i] * 1.01 + 0.01, tr.y.x2[i] * 0.99 end
  return salta.lsq{ model = m, times = TIMES, data = data, free = free, rtol = rtol, atol = rtol, method = method,
    tf = 3 }
end

describe("a simultaneous pair that a direction splits", function()
  local m = stops("stops", 0, 0)
  local free = { "k1", "k2", "e", "x0.x1", "x0.v2" }
  local p = { 4, 4, 0.7, 1, 0 }

  it("fires its stops in pairs at the nominal point", function()
    local ev = m:simulate{ tf = 3 }:events()
    assert.is_true(#ev >= 4)
    for k = 1, #ev, 2 do assert.is_near(ev[k].t, ev[k + 1].t, 1e-12) end
  end)

  it("has the gradient of central differences by sens (ERK, BDF) and the adjoint, every parameter", function()
    -- the reference: central differences of the ERK loss at rtol 1e-12 (ERK is exact to round-off
    -- on this linear flow's steps), step 1e-5
    local fd = loss(m, free, 1e-12, "erk"):grad(p, { method = "fd", h = 1e-5 })
    local big = 0
    for _, v in ipairs(fd) do big = math.max(big, math.abs(v)) end
    local routes = {
      { "sens, erk", loss(m, free, 1e-10, "erk"):grad(p), 1e-6 },
      { "sens, bdf", loss(m, free, 1e-10, "bdf"):grad(p), 1e-5 },
      { "adjoint", loss(m, free, 1e-10, "bdf"):grad(p, { method = "adjoint", mesh = 400 }), 1e-3 },
    }
    for _, r in ipairs(routes) do
      for k, n in ipairs(free) do
        assert(math.abs(r[2][k] - fd[k]) <= r[3] * big,
          ("%s: dL/d%s = %.10g, differences %.10g"):format(r[1], n, r[2][k], fd[k]))
      end
    end
  end)
end)

describe("a pair whose members do not commute", function()
  it("is reported when a direction splits it: the flows couple, so the order of firing matters", function()
    local m = stops("coupled_flows", 0.3, 0)
    local L = loss(m, { "k1", "x0.x1" }, 1e-10, "erk")
    has(err_of(L.grad, L, { 4, 1 }), "model 'coupled_flows'", "events 'stop1' and 'stop2' fire together",
      "moves them apart", "do not commute", "not differentiable")
  end)

  it("is reported when one member's reset reads what the other's sets", function()
    local m = stops("coupled_resets", 0, 0.2)
    local L = loss(m, { "x0.v2" }, 1e-10, "erk")
    has(err_of(L.grad, L, { 0 }), "model 'coupled_resets'", "the start value of 'v2' moves them apart",
      "reads a state another's reset sets", "not differentiable")
  end)

  it("is differentiable in a direction that keeps the members together", function()
    local m = stops("coupled_flows", 0.3, 0)
    local free = { "e", "c" }
    local fd = loss(m, free, 1e-12, "erk"):grad({ 0.7, 0.1 }, { method = "fd", h = 1e-5 })
    local g = loss(m, free, 1e-10, "erk"):grad({ 0.7, 0.1 })
    for k = 1, #free do assert.is_near(fd[k], g[k], 1e-6 * math.max(math.abs(fd[1]), math.abs(fd[2]))) end
  end)
end)
