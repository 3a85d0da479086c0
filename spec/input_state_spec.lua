-- Input tables read at a state (a characteristic curve u(x)): the piece
-- follows the state up and down, starts on the side the state heads to,
-- jumps with a reset, and leaving the table is an error naming the input,
-- the table's end and the time. Against closed forms and an independent
-- Runge-Kutta integration.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

-- A characteristic through 0 with positive slopes: x' = -k c(x) falls
-- toward 0 piece by piece (each piece a line c = s (x - x*)).
local TS, VS = { 0, 0.5, 1, 1.5, 2, 3 }, { 0, 0.2, 0.9, 1.0, 2.5, 2.6 }

local function decay(interp, extra)
  local spec = { name = "decay_" .. interp, states = { { "x", 2.7 } }, params = { { "k", 1.3 } },
    inputs = { c = salta.table{ t = TS, v = VS, interp = interp } },
    f = function(t, x, z, p, u) return { -p.k * u.c(x.x) } end }
  for key, v in pairs(extra or {}) do spec[key] = v end
  return salta.dae(spec)
end

-- x' = -k c(x) from x0 at 0: x at the times, and the times x crosses the
-- table's points (closed form: an exponential on each piece).
local function decay_closed(k, x0, times)
  local out, crossings, t, x = {}, {}, 0, x0
  local i = #TS - 1
  while TS[i] > x0 do i = i - 1 end
  if TS[i] == x0 and i > 1 then i = i - 1 end   -- on a point, heading down: the piece below
  local q = 1
  while true do
    local s = (VS[i + 1] - VS[i]) / (TS[i + 1] - TS[i])
    local xs = TS[i] - VS[i] / s                  -- where the piece's line is 0
    local t_end = i > 1 and t + math.log((x - xs) / (TS[i] - xs)) / (k * s) or math.huge
    while q <= #times and times[q] <= t_end do
      out[q] = xs + (x - xs) * math.exp(-k * s * (times[q] - t))
      q = q + 1
    end
    if i == 1 or q > #times then break end
    crossings[#crossings + 1] = { t_end, TS[i] }
    t, x, i = t_end, TS[i], i - 1
  end
  return out, crossings
end

local TIMES = H.uniform(4, 40)

describe("a linear table at a state", function()
  for _, method in ipairs({ "bdf", "erk" }) do
    for _, x0 in ipairs({ 2.7, 2 }) do   -- 2: on a breakpoint, heading down
      it(("follows the state down its pieces from x0 = %g (%s), against the closed form"):format(x0, method), function()
        local m = decay("linear")
        local tr = m:simulate{ times = TIMES, x0 = { x = x0 }, rtol = 1e-11, atol = 1e-13, method = method }
        local exact, crossings = decay_closed(1.3, x0, TIMES)
        for q, t in ipairs(TIMES) do
          assert(math.abs(tr.y.x[q] - exact[q]) <= 1e-8, ("%s: x(%g) = %.15g, closed form %.15g"):format(method, t,
            tr.y.x[q], exact[q]))
        end
        local bps = tr:breakpoints()
        assert.are.equal(#crossings, #bps)
        for q, c in ipairs(crossings) do
          assert.is_near(c[1], bps[q].t, 1e-8)
          assert.are.same({ "c", "down", c[2] }, { bps[q].input, bps[q].direction, bps[q].at })
        end
      end)
    end
  end

  it("follows the state up and down (x oscillating across the breakpoints)", function()
    -- x'' = -x as x' = v, v' = -x, with y' = c(x + 1.5): x + 1.5 sweeps [0.6, 2.4]
    local m = salta.dae{ name = "swing", states = { { "x", 0.9 }, { "v", 0 }, { "y", 0 } },
      inputs = { c = salta.table{ t = TS, v = VS } },
      f = function(t, x, z, p, u) return { x.v, -x.x, u.c(x.x + 1.5) } end }
    local tr = m:simulate{ tf = 7.5, times = { 7.5 }, rtol = 1e-11, atol = 1e-13, method = "erk" }
    -- the reference: a fine Runge-Kutta of the same equations
    local tab, n = salta.table{ t = TS, v = VS }, 75000
    local function rhs(s) return { s[2], -s[1], tab:at(s[1] + 1.5) } end
    local s, h = { 0.9, 0, 0 }, 7.5 / n
    for _ = 1, n do
      local k1 = rhs(s)
      local k2 = rhs({ s[1] + h / 2 * k1[1], s[2] + h / 2 * k1[2], 0 })
      local k3 = rhs({ s[1] + h / 2 * k2[1], s[2] + h / 2 * k2[2], 0 })
      local k4 = rhs({ s[1] + h * k3[1], s[2] + h * k3[2], 0 })
      for j = 1, 3 do s[j] = s[j] + h / 6 * (k1[j] + 2 * k2[j] + 2 * k3[j] + k4[j]) end
    end
    assert.is_near(s[3], tr.y.y[1], 1e-7)
    local ups, downs = 0, 0
    for _, b in ipairs(tr:breakpoints()) do
      if b.direction == "up" then ups = ups + 1 else downs = downs + 1 end
    end
    assert.are.same({ 3, 4 }, { ups, downs })   -- 2, 1.5, 1 down; up; 2 down again
  end)

  it("gives gradients in k and the start by sensitivities and the adjoint", function()
    local m = decay("linear")
    local data = m:simulate{ times = TIMES, params = { k = 1.1 }, x0 = { x = 2.6 }, rtol = 1e-12, atol = 1e-14 }.y.x
    local function loss(rtol)
      return salta.lsq{ model = m, times = TIMES, data = { x = data }, free = { "k", "x0.x" }, rtol = rtol,
        atol = rtol * 1e-2 }
    end
    local p, L = { 1.3, 2.7 }, loss(1e-10)
    local fd = loss(1e-12):grad(p, { method = "fd", h = 1e-5, richardson = false })
    local adjoint = { method = "adjoint", mesh = 50 }
    local checks = { { "sens", L:grad(p), fd },
      { "adjoint", L:grad(p, adjoint), L:grad(p, { method = "fd", h = 1e-5, richardson = false, of = adjoint }) } }
    for _, c in ipairs(checks) do
      for q, n in ipairs({ "k", "x0.x" }) do
        assert(math.abs(c[2][q] - c[3][q]) <= 1e-5 * math.abs(c[3][q]) + 1e-10,
          ("%s: dL/d%s = %.12g, central differences %.12g"):format(c[1], n, c[2][q], c[3][q]))
      end
    end
  end)

  it("takes the piece a reset jumps to, across many breakpoints at once", function()
    -- x' = 1, y' = c(x); 'jump' adds 5 to x at t = 0.3 (50 points of 0.1)
    local t, v = {}, {}
    for i = 0, 100 do t[i + 1], v[i + 1] = i / 10, math.sin(i) end
    local tab = salta.table{ t = t, v = v }
    local m = salta.dae{ name = "jump", states = { { "x", 0.05 }, { "y", 0 } }, inputs = { c = tab },
      f = function(tt, x, z, p, u) return { 1, u.c(x.x) } end,
      events = { { name = "jump", direction = "up", guard = function(tt) return tt - 0.3 end,
        reset = function(tt, x) return { x = x.x + 5 } end } } }
    local tr = m:simulate{ tf = 1, times = { 1 }, rtol = 1e-11, atol = 1e-13 }
    local function integral(a, b)   -- of the linear table, by fine trapezoids on its own points
      local sum, grid = 0, { a }
      for i = 1, #t do if t[i] > a and t[i] < b then grid[#grid + 1] = t[i] end end
      grid[#grid + 1] = b
      for i = 1, #grid - 1 do sum = sum + 0.5 * (tab:at(grid[i]) + tab:at(grid[i + 1])) * (grid[i + 1] - grid[i]) end
      return sum
    end
    assert.is_near(integral(0.05, 0.35) + integral(5.35, 6.05), tr.y.y[1], 1e-9)
    assert.are.equal(1, #tr:events())
  end)

  it("takes the piece a reset sets at a breakpoint's instant (a sawtooth wrapping on a table point)", function()
    -- x' = 1 from 0.2, wrapped to 0.25 where it reaches the table point 1; y' = c(x)
    local c = salta.table{ t = { 0, 0.5, 1, 1.5, 2 }, v = { 0, 1, 0, 2, 1 } }
    local m = salta.dae{ name = "saw", states = { { "x", 0.2 }, { "y", 0 } }, inputs = { c = c },
      f = function(t, x, z, p, u) return { 1, u.c(x.x) } end,
      events = { { name = "wrap", direction = "up", guard = function(t, x) return x.x - 1 end,
        reset = function() return { x = 0.25 } end } } }
    local tr = m:simulate{ tf = 3, times = { 3 }, rtol = 1e-11, atol = 1e-13 }
    -- c is a hat on [0, 1]: integrals over [0.2, 1], twice [0.25, 1], [0.25, 0.95]
    assert.is_near(0.46 + 2 * 0.4375 + 0.435, tr.y.y[1], 1e-9)
    assert.are.equal(3, #tr:events())
  end)

  it("is an error where the state leaves the table, naming the input, the end and the time", function()
    local m = decay("linear")
    has(err_of(m.simulate, m, { tf = 5, x0 = { x = 3.5 } }),
      "model 'decay_linear': input 'c' is read at x = 3.5 (at t = 0), outside its table [0, 3]")
    local grow = decay("linear", { name = "grow", f = function(t, x, z, p, u) return { p.k * (u.c(x.x) + 0.5) } end })
    -- from 2.7 on the piece c = 2.5 + 0.1 (x - 2): x reaches 3 at t = ln((3 + 28)/(2.7 + 28)) / 0.13
    local msg = err_of(grow.simulate, grow, { tf = 5, rtol = 1e-10, atol = 1e-12 })
    has(msg, "model 'grow': input 'c' is read at x beyond the end of its table [0, 3] at t = ")
    local t_out = tonumber(msg:match("at t = (%S+)$"))
    assert.is_near(math.log(31 / 30.7) / 0.13, t_out, 1e-8)
    local L = salta.lsq{ model = grow, times = { 1, 2 }, data = { x = { 1, 2 } }, free = { "k" } }
    has(err_of(L.value, L, { 1.3 }), "input 'c' is read at x beyond the end of its table [0, 3] at t = ")
    local kick = decay("linear", { name = "kick", events = { { name = "kick", direction = "up",
      guard = function(t) return t - 0.1 end, reset = function(t, x) return { x = x.x - 5 } end } } })
    has(err_of(kick.simulate, kick, { tf = 1 }),
      "model 'kick': input 'c' is read at x below the start of its table [0, 3] at t = 0.1")
  end)

  it("is an error where a step table holds the state on a breakpoint (a sliding mode)", function()
    -- x' = -c(x) with c = -1 below 1 and 1 above: x reaches 1 at t = 0.5 and is pushed back both ways
    local m = salta.dae{ name = "slide", states = { { "x", 1.5 } },
      inputs = { c = salta.table{ t = { 0, 1, 2 }, v = { -1, 1, 1 }, interp = "step" } },
      f = function(t, x, z, p, u) return { -u.c(x.x) } end }
    has(err_of(m.simulate, m, { tf = 2 }), "model 'slide': ", " at t = 0.5", "'input c(x) previous piece'",
      "'input c(x) next piece'")
  end)

  it("refuses an argument that reads an algebraic variable, naming the input", function()
    has(err_of(salta.dae, { name = "alg", states = { { "x", 1 } }, algebraics = { { "w", 1 } },
      inputs = { c = salta.table{ t = TS, v = VS } },
      f = function(t, x, z, p, u) return { -u.c(z.w) } end,
      g = function(t, x, z) return { z.w - x.x } end }),
      "model 'alg': input 'c' is read at w, which reads algebraic variable 'w'")
  end)
end)

describe("step and cubic tables at a state", function()
  it("step: x falls through each piece at the rate k v (closed form)", function()
    local m = decay("step", { states = { { "x", 2.9 } } })
    -- the step table's pieces from 2.9 down: v = 2.5 on [2, 3), 1.0 on [1.5, 2), 0.9 on [1, 1.5), ...
    local t, x, times, exact = 0, 2.9, {}, {}
    for i = 5, 2, -1 do
      t = t + (x - TS[i]) / (1.3 * VS[i])
      x = TS[i]
      times[#times + 1], exact[#exact + 1] = t, TS[i]
    end
    times[#times + 1], exact[#exact + 1] = t + 1, 0.5   -- below 0.5 the table is 0: x stays
    local tr = m:simulate{ times = times, rtol = 1e-11, atol = 1e-13 }
    for q = 1, #times do assert.is_near(exact[q], tr.y.x[q], 1e-8) end
    local bps = tr:breakpoints()
    assert.are.equal(4, #bps)
    for q = 1, 4 do assert.is_near(times[q], bps[q].t, 1e-8) end
  end)

  it("cubic: against a fine Runge-Kutta of the spline", function()
    local tab = salta.table{ t = TS, v = VS, interp = "cubic" }
    local m = decay("cubic")
    local tr = m:simulate{ tf = 3, times = { 1, 2, 3 }, rtol = 1e-11, atol = 1e-13 }
    local x, n = 2.7, 30000
    local h, out = 3 / n, {}
    local function f(s) return -1.3 * tab:at(s) end
    for i = 1, n do
      local k1 = f(x)
      local k2 = f(x + h / 2 * k1)
      local k3 = f(x + h / 2 * k2)
      local k4 = f(x + h * k3)
      x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
      if i % 10000 == 0 then out[#out + 1] = x end
    end
    for q = 1, 3 do assert.is_near(out[q], tr.y.x[q], 1e-9) end
    assert.is_true(#tr:breakpoints() >= 3)
  end)
end)
