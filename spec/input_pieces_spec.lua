-- Input tables followed piece by piece: n rows cost O(n) in run time and
-- in generated C; the results against the closed-form integral of the
-- piecewise-linear input; gradients through a delay; breakpoints read back
-- and counted toward neither max_events nor the Zeno check.
local salta = require("salta")
local clock = require("salta.core").clock

local T_END = 10

-- n rows on [-1, T_END], values that do not repeat.
local function rows(n)
  local t, v = {}, {}
  for i = 1, n do
    t[i] = -1 + (T_END + 1) * (i - 1) / (n - 1)
    v[i] = math.sin(0.37 * i) + 0.5 * math.cos(1.3 * i)
  end
  return t, v
end

-- The integral of the piecewise-linear input over [a, b]: trapezoids,
-- exact for each segment's overlap with [a, b].
local function integral(t, v, a, b)
  local sum = 0
  for i = 1, #t - 1 do
    local lo, hi = math.max(a, t[i]), math.min(b, t[i + 1])
    if hi > lo then
      local slope = (v[i + 1] - v[i]) / (t[i + 1] - t[i])
      sum = sum + 0.5 * (2 * v[i] + slope * (lo - t[i] + hi - t[i])) * (hi - lo)
    end
  end
  return sum
end

-- x' = k u(t - d): x(t) = k times the integral of u over [-d, t - d].
local function delayed(t, v, opts)
  return salta.dae{ name = "delayed", states = { { "x", 0 } }, params = { { "k", 1.5 }, { "d", 0.37 } },
    backend = "tcc", inputs = { u = salta.table{ t = t, v = v, interp = "linear" } },
    f = function(tt, x, z, p, u) return { p.k * u.u(tt - p.d) } end, structural = opts and opts.structural }
end

local TIMES = {}
for i = 1, 20 do TIMES[i] = T_END * i / 20 end

describe("a linear table read along t", function()
  it("costs O(n): 10^4, 3*10^4 and 10^5 rows, each against the closed-form integral to 1e-8", function()
    local seconds, sizes = {}, {}
    for _, n in ipairs({ 10000, 30000, 100000 }) do
      local t, v = rows(n)
      local c0 = clock()
      local m = delayed(t, v)
      local tr = m:simulate{ times = TIMES, rtol = 1e-10, atol = 1e-12 }
      seconds[n], sizes[n] = clock() - c0, #m:c_source()
      for i, ti in ipairs(TIMES) do
        local exact = 1.5 * integral(t, v, -0.37, ti - 0.37)
        assert(math.abs(tr.y.x[i] - exact) <= 1e-8, ("%d rows, t = %g: x = %.15g, closed form %.15g"):format(n,
          ti, tr.y.x[i], exact))
      end
      assert.are.equal(0, #tr:events())
      -- every interior point in (t0 - d, tf - d], one breakpoint each, in order
      local bps = tr:breakpoints()
      local crossed = 0
      for i = 2, n - 1 do if t[i] > -0.37 and t[i] <= T_END - 0.37 then crossed = crossed + 1 end end
      assert.are.equal(crossed, #bps)
      for k = 1, #bps, 997 do
        assert.are.equal("u", bps[k].input)
        assert.is_near(bps[k].at + 0.37, bps[k].t, 1e-12 * T_END)
      end
      assert(sizes[n] <= 50 * n + 60000, ("%d rows: %d bytes of C"):format(n, sizes[n]))
    end
    io.stderr:write(("\n  linear table along t: 10^4 rows %.2f s, 3*10^4 %.2f s, 10^5 %.2f s\n"):format(
      seconds[10000], seconds[30000], seconds[100000]))
    assert(seconds[100000] < 20 * seconds[10000], ("10^5 rows took %.2f s, 10^4 rows %.2f s"):format(
      seconds[100000], seconds[10000]))
  end)

  it("gives gradients through the delay and the scale, by sensitivities and the adjoint", function()
    local t, v = rows(10000)
    local m = delayed(t, v)
    local data = m:simulate{ times = TIMES, params = { k = 1.2, d = 0.41 }, rtol = 1e-12, atol = 1e-14 }.y.x
    local function loss(rtol)
      return salta.lsq{ model = m, times = TIMES, data = { x = data }, free = { "k", "d" }, rtol = rtol,
        atol = rtol * 1e-2 }
    end
    local p = { 1.5, 0.37 }
    local L = loss(1e-10)
    local fd = loss(1e-12):grad(p, { method = "fd", h = 1e-5, richardson = false })
    local adjoint = { method = "adjoint", mesh = 4 }
    local checks = {
      { "sens", L:grad(p), fd },
      { "adjoint", L:grad(p, adjoint), L:grad(p, { method = "fd", h = 1e-5, richardson = false, of = adjoint }) },
      { "adjoint against the loss", L:grad(p, adjoint), fd },
    }
    for _, c in ipairs(checks) do
      for k, n in ipairs({ "k", "d" }) do
        assert(math.abs(c[2][k] - c[3][k]) <= 1e-5 * math.abs(c[3][k]) + 1e-10,
          ("%s: dL/d%s = %.12g, central differences %.12g"):format(c[1], n, c[2][k], c[3][k]))
      end
    end
  end)
end)

describe("input breakpoints", function()
  -- 201 points on [0, 1]: 199 interior breakpoints up to tf = 1, and the
  -- one at tf reached along t
  local t, v = {}, {}
  for i = 0, 200 do t[i + 1], v[i + 1] = i / 200, (i % 7) - 3 end
  local step = salta.table{ t = t, v = v, interp = "step" }

  it("count toward neither max_events nor the Zeno check, and are read back", function()
    local m = salta.dae{ name = "steps", states = { { "x", 0 } }, inputs = { w = step },
      f = function(tt, x, z, p, u) return { u.w(tt) } end }
    local tr = m:simulate{ tf = 1, times = { 0, 1 }, max_events = 10, zeno_count = 3, zeno_window = 0.1,
      rtol = 1e-10, atol = 1e-12 }
    local exact = 0
    for i = 1, 200 do exact = exact + v[i] / 200 end
    assert.is_near(exact, tr.y.x[2], 1e-9)
    assert.are.equal(0, #tr:events())
    local bps = tr:breakpoints()
    assert.are.equal(200, #bps)
    for k, b in ipairs(bps) do
      assert.are.same({ "w", "up", t[k + 1] }, { b.input, b.direction, b.at })
      assert.is_near(t[k + 1], b.t, 1e-12)
    end
  end)

  it("are crossed back at once where the argument turns around on one (a table read at a table's kink)", function()
    -- a(t) falls to 1, b's breakpoint, exactly at its own kink t = 2 and rises again
    local a = salta.table{ t = { 0, 1, 2, 3 }, v = { 0.5, 1.5, 1.0, 2.5 } }
    local b = salta.table{ t = { 0, 1, 2, 3 }, v = { 1, 2, 0, 1 } }
    local m = salta.dae{ name = "nested", states = { { "y", 0 } }, inputs = { a = a, b = b },
      f = function(tt, x, z, p, u) return { u.b(u.a(tt)) } end }
    local tr = m:simulate{ tf = 2.5, times = { 2, 2.5 }, rtol = 1e-11, atol = 1e-13 }
    -- b(a(t)) is linear between 0, 0.5 (a = 1), 1, 2 and 2.5: trapezoids are exact
    local grid, exact = { 0, 0.5, 1, 2, 2.5 }, { 0 }
    for i = 2, #grid do
      exact[i] = exact[i - 1] + 0.5 * (b:at(a:at(grid[i - 1])) + b:at(a:at(grid[i]))) * (grid[i] - grid[i - 1])
    end
    assert.is_near(exact[4], tr.y.y[1], 1e-9)
    assert.is_near(exact[5], tr.y.y[2], 1e-9)
    local last = tr:breakpoints()[#tr:breakpoints()]
    assert.are.same({ "b", "up", 1 }, { last.input, last.direction, last.at })
    assert.is_near(2, last.t, 1e-12)
  end)

  it("leave the model's own events counted: max_events still ends a run of too many", function()
    local m = salta.dae{ name = "steps_and_ticks", states = { { "x", 0 } }, inputs = { w = step },
      discrete = { { "n", 0 } },
      f = function(tt, x, z, p, u) return { u.w(tt) } end,
      events = { { name = "tick", direction = "up", guard = function(tt, x) return tt - 0.05 * x.n - 0.0251 end,
        reset = function(tt, x) return { n = x.n + 1 } end } } }
    local tr = m:simulate{ tf = 1, max_events = 20 }
    assert.are.equal(20, #tr:events())
    local ok, err = pcall(m.simulate, m, { tf = 1, max_events = 10 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("more than max_events = 10 events: event 'tick'", 1, true), tostring(err))
  end)
end)
