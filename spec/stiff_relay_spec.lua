-- The stiff relay (models/stiff_relay.lua) against its closed form: between
-- switchings the model is linear, w and v sums of exponentials in the
-- filter's rate a = -1/tau_s and the charge's c = -(1/R + 1/Rl)/C, so each
-- switching time is a root of a closed-form v(t) (found here by bisection).
-- The default route must find the stiffness and still land every switching,
-- and every gradient route must agree with differences of the closed form.
local H = require("spec.helpers")
local salta = require("salta")

local P0 = { Vs = 10, R = 1, C = 1, Rl = 10, v_lo = 4, v_hi = 6, tau_s = 1e-4 }

-- w(t), v(t) from (w0, v0) with the relay at `on`, and i = (w - v) / R.
local function flow(P, w0, v0, on, t)
  local a, c = -1 / P.tau_s, -(1 / P.R + 1 / P.Rl) / P.C
  local we = on and P.Vs or 0
  local ve = we * P.Rl / (P.R + P.Rl)
  local dw0, dv0 = w0 - we, v0 - ve
  local dv = dv0 * math.exp(c * t) + dw0 / (P.R * P.C) * (math.exp(a * t) - math.exp(c * t)) / (a - c)
  return we + dw0 * math.exp(a * t), ve + dv
end

-- The switchings on [0, tf] by the closed form: { t, name, w, v, on } each,
-- the state and the relay just after it.
local function switchings(P, tf)
  local t, w, v, on, out = 0, 0, 0, true, {}
  while true do
    local thr = on and P.v_hi or P.v_lo
    local function g(s) local _, vv = flow(P, w, v, on, s); return on and vv - thr or thr - vv end
    local hi = 1e-3
    while g(hi) < 0 and t + hi < tf do hi = hi * 1.5 end
    if g(hi) < 0 then return out end
    local lo = 0
    for _ = 1, 200 do
      local mid = 0.5 * (lo + hi)
      if g(mid) < 0 then lo = mid else hi = mid end
    end
    if t + hi > tf then return out end
    w, v = flow(P, w, v, on, hi)
    t, on = t + hi, not on
    out[#out + 1] = { t = t, name = on and "on" or "off", w = w, v = v, on = on }
  end
end

-- The closed form's outputs v and i at the times (increasing).
local function outputs(P, times)
  local sw, y = switchings(P, times[#times]), { v = {}, i = {} }
  for k, T in ipairs(times) do
    local s = { t = 0, w = 0, v = 0, on = true }
    for _, e in ipairs(sw) do if e.t <= T then s = e end end
    local w, v = flow(P, s.w, s.v, s.on, T - s.t)
    y.v[k], y.i[k] = v, (w - v) / P.R
  end
  return y
end

describe("the stiff relay", function()
  local m = H.model("stiff_relay")
  local ref = switchings(P0, 10)

  it("switches where the closed form does, on the default route (stiffness found, BDF)", function()
    assert.is_true(#ref >= 20)
    local tr = m:simulate{ tf = 10, rtol = 1e-9, atol = 1e-9 }
    local ev = tr:events()
    assert.are.equal(#ref, #ev)
    for k, e in ipairs(ev) do
      assert.are.equal(ref[k].name, e.name)
      assert.is_true(math.abs(e.t - ref[k].t) < 1e-6, ("event %d: %.12g against %.12g"):format(k, e.t, ref[k].t))
    end
    assert.are.equal("bdf", tr:stats().method)
    assert.is_true(tr:stats().stiff_restart)
  end)

  it("has the closed form's outputs between switchings", function()
    local tr = m:simulate{ tf = 10, times = { 0.5, 2.5, 7.25 }, rtol = 1e-9, atol = 1e-9 }
    for k, t in ipairs({ 0.5, 2.5, 7.25 }) do
      local y = outputs(P0, { t })
      assert.is_true(math.abs(tr.y.v[k] - y.v[1]) < 1e-6, ("v(%g) = %.10g, closed form %.10g"):format(t, tr.y.v[k],
        y.v[1]))
      assert.is_true(math.abs(tr.y.i[k] - y.i[1]) < 1e-6)
    end
  end)

  -- A loss on 40 samples of v and i over [0, 3] (one 0.41 ms after a
  -- switching, inside the filter's transient); the reference is Richardson
  -- central differences (h = 1e-7) of the closed form's loss, whose
  -- switching times are exact to rounding. Measured against it (largest
  -- component 3.99), over rtol times 0.9, 0.95, ..., 1.1: ERK's
  -- sensitivities 2.7e-9 to 3.6e-8 at rtol 1e-9; BDF's (and the default
  -- route's) 2.1e-6 to 3.0e-5 at rtol 1e-10, 1.2e-4 at 1e-9 -- BDF's
  -- switching time carries its global error (4.6e-9 at rtol 1e-9), the
  -- transient's sensitivity moves by itself over tau_s per unit of time,
  -- and where BDF's steps fall against that transient moves with rtol; the
  -- discrete adjoint 8.1e-7 to 9.3e-7 at rtol 1e-9; the continuous adjoint
  -- 4.3e-7 to 1.6e-6 at rtol 1e-10 (its backward problem restarted at a
  -- datum in the transient, where a first step guessed from the last one
  -- fails); after a run by ERK (method = "erk"), by its explicit backward
  -- problem, 6.9e-8 at rtol 1e-8.
  it("has every route's gradient within its accuracy of the closed form's differences", function()
    local times = H.uniform(3, 40)
    local y0, data = outputs(P0, times), { v = {}, i = {} }
    for _, n in ipairs({ "v", "i" }) do
      for k, v in ipairs(y0[n]) do data[n][k] = v * 1.01 + 0.01 end
    end
    local free, p = { "R", "Rl", "v_hi" }, { 1, 10, 6 }
    local function loss_cf(q)
      local P = {}
      for k, v in pairs(P0) do P[k] = v end
      for k, n in ipairs(free) do P[n] = q[k] end
      local y, s = outputs(P, times), 0
      for _, n in ipairs({ "v", "i" }) do
        for k = 1, #times do s = s + (y[n][k] - data[n][k]) ^ 2 end
      end
      return s / (2 * #times)
    end
    local ref, big = {}, 0
    for k = 1, #p do
      local function D(h)
        local a, b = { table.unpack(p) }, { table.unpack(p) }
        a[k], b[k] = p[k] + h, p[k] - h
        return (loss_cf(a) - loss_cf(b)) / (2 * h)
      end
      ref[k] = (4 * D(1e-7) - D(2e-7)) / 3
      big = math.max(big, math.abs(ref[k]))
    end
    for _, c in ipairs({ { "sens", "erk", 1e-9, 1e-6 }, { "sens", nil, 1e-10, 5e-5 }, { "sens", "bdf", 1e-10, 5e-5 },
                         { "adjoint", nil, 1e-9, 5e-6 }, { "adjoint_cont", nil, 1e-10, 3e-6 },
                         { "adjoint_cont", "erk", 1e-8, 1e-6 } }) do
      local L = salta.lsq{ model = m, times = times, data = data, free = free, rtol = c[3], atol = c[3], method = c[2] }
      local g = L:grad(p, { method = c[1] })
      for k, n in ipairs(free) do
        assert.is_true(math.abs(g[k] - ref[k]) <= c[4] * big, ("%s %s rtol %g: dL/d%s = %.10g, closed form %.10g"):format(
          c[1], c[2] or "default", c[3], n, g[k], ref[k]))
      end
    end
  end)
end)
