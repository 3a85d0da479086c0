-- Terminal events: terminal = true ends the run at the event time.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

-- A drag-free projectile from height h0 with upward speed v0 that stops at
-- the ground: y = h0 + v0 t - g t^2 / 2, landing at
-- t* = (v0 + sqrt(v0^2 + 2 g h0)) / g. A bounce on a ceiling at y = top
-- (only above it) shows that a non-terminal event keeps the run going.
local function shot(extra)
  local spec = {
    name = "shot",
    states = { { "y", 1 }, { "v", 2 } },
    params = { { "g", 9.81 }, { "c", 0.3 }, { "top", 5 } },
    f = function(t, x, z, p) return { x.v, -p.g - p.c * x.v } end,
    events = {
      { name = "ceiling", direction = "up", guard = function(t, x, z, p) return x.y - p.top end,
        reset = function(t, x) return { v = -x.v } end },
      { name = "ground", direction = "down", guard = function(t, x) return x.y end, terminal = true },
    },
  }
  for k, v in pairs(extra or {}) do spec[k] = v end
  return salta.dae(spec)
end

describe("a terminal event", function()
  local m = shot()
  local times = H.uniform(1.5, 50)

  it("ends the run at its time, against the closed form, with no outputs after it", function()
    local p = { g = 9.81, c = 0, top = 5 }
    local tr = m:simulate{ tf = 1.5, times = times, params = p, rtol = 1e-11, atol = 1e-13 }
    local landing = (2 + math.sqrt(4 + 2 * 9.81)) / 9.81
    assert.is_near(landing, tr.t_end, 1e-9)
    assert.are.equal("ground", tr:stats().terminal_event)
    assert.is_near(landing, tr:stats().t_end, 1e-9)
    local ev = tr:events()
    assert.are.equal(1, #ev)
    assert.are.equal("ground", ev[1].name)
    local n = 0
    for _, t in ipairs(times) do if t <= landing then n = n + 1 end end
    assert.are.equal(n, #tr.t)
    for i, t in ipairs(tr.t) do assert.is_near(1 + 2 * t - 9.81 * t * t / 2, tr.y.y[i], 1e-8) end
    local seg = tr:segments()
    assert.are.equal(tr.t_end, seg[#seg])
  end)

  it("is not terminal unless declared so, and must be declared with a boolean", function()
    local tr = m:simulate{ tf = 1.5, times = times, params = { g = 9.81, c = 0, top = 1.1 }, rtol = 1e-10,
      atol = 1e-12 }
    assert.are.equal("ceiling", tr:events()[1].name)   -- fired, and the run went on to the ground
    assert.are.equal("ground", tr:events()[#tr:events()].name)
    assert.is_nil(shot{ events = { { name = "e", guard = function(t) return t - 1 end } } }:simulate{ tf = 2 }.t_end)
    has(err_of(shot, { events = { { name = "e", guard = function(t) return t - 1 end, terminal = "yes" } } }),
      "terminal", "boolean")
  end)

  -- data from the nominal parameters up to the landing
  local tr = m:simulate{ tf = 1.5, times = times, rtol = 1e-12, atol = 1e-14 }
  local kept = { table.unpack(times, 1, #tr.t) }
  local free, p = { "g", "c" }, { 9.5, 0.35 }

  it("keeps a loss whose targets end before it differentiable: sens and adjoint against differences", function()
    local function loss(rtol)
      return salta.lsq{ model = m, times = kept, data = { y = tr.y.y }, free = free, rtol = rtol, atol = rtol * 1e-2 }
    end
    local fd = loss(1e-12):grad(p, { method = "fd" })
    local sens, adj = loss(1e-10):grad(p), loss(1e-10):grad(p, { method = "adjoint" })
    for k, n in ipairs(free) do
      assert(math.abs(sens[k] - fd[k]) <= 1e-6 * math.abs(fd[k]), ("sens dL/d%s %.12g vs %.12g"):format(n, sens[k], fd[k]))
      assert(math.abs(adj[k] - fd[k]) <= 1e-4 * math.abs(fd[k]), ("adjoint dL/d%s %.12g vs %.12g"):format(n, adj[k], fd[k]))
    end
  end)

  it("moves the end of blended predictions with it: every route agrees with differences", function()
    -- the last target just before the landing: the blending's end boundary is the landing's time
    local near_end = { 0.2, 0.5, tr.t_end - 0.02 }
    local data = { y = { 1.2, 1.5, 0.1 }, v = { 0.5, -1, -4 } }
    for _, blend in ipairs({ 0, 20 }) do
      local L = salta.lsq{ model = m, times = near_end, data = data, free = free, blend = blend, tf = 1.5,
        rtol = 1e-9, atol = 1e-11 }
      local rep = L:check_gradient{ at = p }
      assert.are.equal("ok", rep.verdict, tostring(rep))
      local discrete = L:grad(p, { method = "fd", of = { method = "adjoint" } })
      local adj = L:grad(p, { method = "adjoint" })
      for k = 1, #free do assert.is_near(discrete[k], adj[k], 1e-6 * math.abs(discrete[k])) end
    end
  end)

  it("makes targets past it an error naming the event and the target, or drops them with after_end", function()
    local data = { y = {} }
    for i = 1, #times do data.y[i] = tr.y.y[i] or 0 end
    local L = salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-10, atol = 1e-12 }
    local at_p = m:simulate{ tf = 1.5, times = times, params = { g = p[1], c = p[2], top = 5 }, rtol = 1e-10,
      atol = 1e-12 }
    has(err_of(L.grad, L, p), "terminal event 'ground' ended the run at t = ",
      ("before target time %d (t = %g)"):format(#at_p.t + 1, times[#at_p.t + 1]), "after_end = \"drop\"")
    local D = salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-10, atol = 1e-12,
      after_end = "drop" }
    -- dropped targets are zero residuals: the loss is the kept targets' sum over all the data
    local n = #at_p.t
    local K = salta.lsq{ model = m, times = { table.unpack(times, 1, n) }, data = { y = { table.unpack(data.y, 1, n) } },
      free = free, rtol = 1e-10, atol = 1e-12 }
    assert.is_near(K:value(p) * n / #times, D:value(p), 1e-12)
    local fd = D:grad(p, { method = "fd" })
    for route, g in pairs({ sens = D:grad(p), adjoint = D:grad(p, { method = "adjoint" }) }) do
      for k, n in ipairs(free) do
        assert(math.abs(g[k] - fd[k]) <= 1e-4 * math.abs(fd[k]), ("%s dL/d%s %.12g vs %.12g"):format(route, n, g[k], fd[k]))
      end
    end
    has(err_of(salta.lsq, { model = m, times = times, data = data, after_end = "keep" }),
      "after_end must be \"error\" or \"drop\", got keep")
  end)
end)
