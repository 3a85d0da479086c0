-- Event iteration: a reset that pushes another armed guard across zero
-- fires that event at the same instant (a cascade round), as Modelica does.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

-- A clock x (x' = 1 + k y) ticks at x = a: x := 0, y := y + b. The counter
-- y wraps when it passes c: y := y - c. y changes only at ticks, so "wrap"
-- can only fire in a cascade after a tick.
local function counter()
  return salta.dae{ name = "counter", states = { { "x", 0 }, { "y", 0 } },
    params = { { "a", 1 }, { "b", 0.45 }, { "c", 1 }, { "k", 0.3 } },
    f = function(t, x, z, p) return { 1 + p.k * x.y, 0 } end,
    events = {
      { name = "tick", direction = "up", guard = function(t, x, z, p) return x.x - p.a end,
        reset = function(t, x, z, p) return { x = 0, y = x.y + p.b } end },
      { name = "wrap", direction = "up", guard = function(t, x, z, p) return x.y - p.c end,
        reset = function(t, x, z, p) return { y = x.y - p.c } end },
    } }
end

-- The events in closed form: tick after a / (1 + k y) of clock time.
local function expected(p, tf)
  local out, t, y = {}, 0, 0
  while true do
    t = t + p.a / (1 + p.k * y)
    if t > tf then return out end
    y = y + p.b
    out[#out + 1] = { "tick", t, y }
    if y > p.c then
      y = y - p.c
      out[#out + 1] = { "wrap", t, y }
    end
  end
end

describe("event iteration", function()
  local m = counter()
  local times = H.uniform(6, 60)

  it("fires the event a reset pushed across zero at the same instant, against the closed form", function()
    local tr = m:simulate{ tf = 6, times = times, rtol = 1e-11, atol = 1e-13 }
    local ev, want = tr:events(), expected({ a = 1, b = 0.45, c = 1, k = 0.3 }, 6)
    assert.are.equal(#want, #ev)
    for i, w in ipairs(want) do
      assert.are.equal(w[1], ev[i].name)
      assert.is_near(w[2], ev[i].t, 1e-9)
      assert.is_near(w[3], ev[i].x_plus.y, 1e-12)
      assert.are.equal(w[1] == "wrap" and 1 or 0, ev[i].cascade)
    end
    assert.is_true(#want >= 7)
  end)

  local tr = m:simulate{ tf = 6, times = times, rtol = 1e-12, atol = 1e-14 }
  local free, p = { "a", "b", "c", "k" }, { 1.05, 0.43, 0.97, 0.32 }
  local function loss(rtol)
    return salta.lsq{ model = m, times = times, data = { x = tr.y.x, y = tr.y.y }, free = free, rtol = rtol,
      atol = rtol * 1e-2 }
  end
  local fd = loss(1e-12):grad(p, { method = "fd" })
  for _, route in ipairs({ { "sens", nil }, { "adjoint", { method = "adjoint" } },
    { "adjoint on a uniform mesh", { method = "adjoint", mesh = 20 } } }) do
    it(("gives %s gradients through the cascades that match central differences"):format(route[1]), function()
      local g = loss(1e-10):grad(p, route[2])
      for k, n in ipairs(free) do
        assert(math.abs(g[k] - fd[k]) <= 1e-7 * math.abs(fd[k]),
          ("%s: dL/d%s = %.12g, differences %.12g"):format(route[1], n, g[k], fd[k]))
      end
    end)
  end

  it("that does not settle is an error naming the events in the loop", function()
    -- a kick at t = 1 sets y = 1; "up" at y = 0 sends it to -1 and "down"
    -- at y = -0.5 back to 1, for ever
    local loop = salta.dae{ name = "loop", states = { { "x", 0 }, { "y", -0.2 } },
      f = function() return { 1, 0 } end,
      events = {
        { name = "kick", direction = "up", guard = function(t, x) return x.x - 1 end,
          reset = function() return { y = 1 } end },
        { name = "up", direction = "up", guard = function(t, x) return x.y end,
          reset = function() return { y = -1 } end },
        { name = "down", direction = "down", guard = function(t, x) return x.y + 0.5 end,
          reset = function() return { y = 1 } end },
      } }
    has(err_of(loop.simulate, loop, { tf = 2 }), "model 'loop': event iteration does not settle at t = 1",
      "after 32 rounds", "'up'", "'down'", "a loop of events")
  end)
end)
