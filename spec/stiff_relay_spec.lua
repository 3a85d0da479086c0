-- The stiff relay (models/stiff_relay.lua) against its closed form: between
-- switchings the model is linear, w and v sums of exponentials in the
-- filter's rate a = -1/tau_s and the charge's c = -(1/R + 1/Rl)/C, so each
-- switching time is a root of a closed-form v(t) (found here by bisection).
-- The default route must find the stiffness and still land every switching.
local H = require("spec.helpers")

local P = { Vs = 10, R = 1, C = 1, Rl = 10, v_lo = 4, v_hi = 6, tau_s = 1e-4 }

-- w(t), v(t) from (w0, v0) with the relay at `on`, and i = (w - v) / R.
local function flow(w0, v0, on, t)
  local a, c = -1 / P.tau_s, -(1 / P.R + 1 / P.Rl) / P.C
  local we = on and P.Vs or 0
  local ve = we * P.Rl / (P.R + P.Rl)
  local dw0, dv0 = w0 - we, v0 - ve
  local dv = dv0 * math.exp(c * t) + dw0 / (P.R * P.C) * (math.exp(a * t) - math.exp(c * t)) / (a - c)
  return we + dw0 * math.exp(a * t), ve + dv
end

-- The switching times on [0, tf] by the closed form.
local function switchings(tf)
  local t, w, v, on, out = 0, 0, 0, true, {}
  while true do
    local thr = on and P.v_hi or P.v_lo
    local function g(s) local _, vv = flow(w, v, on, s); return on and vv - thr or thr - vv end
    local hi = 1e-3
    while g(hi) < 0 and t + hi < tf do hi = hi * 1.5 end
    if g(hi) < 0 then return out end
    local lo = 0
    for _ = 1, 200 do
      local mid = 0.5 * (lo + hi)
      if g(mid) < 0 then lo = mid else hi = mid end
    end
    if t + hi > tf then return out end
    w, v = flow(w, v, on, hi)
    t, on = t + hi, not on
    out[#out + 1] = { t = t, name = on and "on" or "off" }
  end
end

describe("the stiff relay", function()
  local m = H.model("stiff_relay")
  local ref = switchings(10)

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
      local t0, w, v, on = 0, 0, 0, true
      for _, e in ipairs(ref) do
        if e.t > t then break end
        w, v = flow(w, v, on, e.t - t0)
        t0, on = e.t, e.name == "on"
      end
      local wt, vt = flow(w, v, on, t - t0)
      assert.is_true(math.abs(tr.y.v[k] - vt) < 1e-6, ("v(%g) = %.10g, closed form %.10g"):format(t, tr.y.v[k], vt))
      assert.is_true(math.abs(tr.y.i[k] - (wt - vt) / P.R) < 1e-6)
    end
  end)
end)
