-- The event-split discrete adjoint: its gradient is the exact gradient of
-- the discrete loss (checked against central differences of that same
-- discrete loss, every parameter), and it approaches the forward
-- sensitivities as the mesh is refined.
local H = require("helpers")
local salta = require("salta")

-- A loss on n equally spaced targets of a tight simulation; the loss's own
-- runs at rtol (1e-10 unless given), atol = rtol / 100.
local function setup(m, tf, outputs, free, n, rtol, linear_solver)
  rtol = rtol or 1e-10
  local times = {}
  for i = 1, n do times[i] = tf * i / n end
  local tr = m:simulate{ tf = tf, times = times, rtol = 1e-12, atol = 1e-14 }
  local data = {}
  for _, o in ipairs(outputs) do data[o] = tr.y[o] end
  return salta.lsq{ model = m, times = times, data = data, free = free, rtol = rtol, atol = rtol * 1e-2,
    linear_solver = linear_solver }
end

-- relative 2-norm distance of gradient a from b
local function rel(a, b)
  local e, n = 0, 0
  for k = 1, #a do e = e + (a[k] - b[k]) ^ 2; n = n + b[k] ^ 2 end
  return math.sqrt(e / n)
end

local function check_exact(label, L, p, mesh)
  local ga = L:grad(p, { method = "adjoint", mesh = mesh })
  local fd = L:grad(p, { method = "fd", of = { method = "adjoint", mesh = mesh }, h = 1e-5 })
  for k, n in ipairs(L.free) do
    local err = math.abs(ga[k] - fd[k])
    assert(err <= 1e-6 * math.abs(fd[k]) or err <= 1e-9,
      ("%s: dL/d%s = %.12g by the adjoint, %.12g by differences of the discrete loss (rel %.2e)"):format(
        label, n, ga[k], fd[k], err / math.abs(fd[k])))
  end
end

local positions = H.positions

describe("discrete adjoint (consistent forward)", function()
  it("spring latch: parameters in g, a guard, a reset, and an initial state", function()
    local L = setup(H.model("spring_latch"), 3, { "x", "F" }, { "k", "c", "F_max", "e", "a", "x0.v" }, 40)
    check_exact("spring_latch", L, { 4.1, 0.11, 1.48, 0.71, 0.105, 2.02 }, 50)
  end)
  it("Cauer ladder: the 7 capacitances and inductances", function()
    local L = setup(H.model("cauer"), 20, { "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" },
      { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" }, 100)
    check_exact("cauer", L, { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 }, 50)
  end)
  for _, N in ipairs({ 3, 7, 15 }) do
    it(("bouncing balls N = %d, dense LU"):format(N), function()
      local L = setup(H.model("bouncing_balls", { N = N }), 1.9, positions(N), { "g", "e_g", "e_b" }, 40, nil, "dense")
      check_exact("balls N" .. N, L, { 9.7, 0.51, 0.61 }, 25)
    end)
  end
  it("with the sparse linear solver (KLU) as with the dense one", function()
    -- the latch (z in guard and reset) and the Cauer (z in every step)
    local latch = { "k", "c", "F_max", "e", "a", "x0.v" }
    local pl = { 4.1, 0.11, 1.48, 0.71, 0.105, 2.02 }
    local L = setup(H.model("spring_latch"), 3, { "x", "F" }, latch, 40, nil, "klu")
    check_exact("spring_latch, klu", L, pl, 50)
    local dense = setup(H.model("spring_latch"), 3, { "x", "F" }, latch, 40)
    assert.is_true(rel(L:grad(pl, { method = "adjoint", mesh = 50 }), dense:grad(pl, { method = "adjoint", mesh = 50 }))
      < 1e-9)
    local C = setup(H.model("cauer"), 20, { "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" },
      { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" }, 100, nil, "klu")
    check_exact("cauer, klu", C, { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 }, 50)
    local B = setup(H.model("bouncing_balls", { N = 15 }), 1.9, positions(15), { "g", "e_g", "e_b" }, 40, nil, "klu")
    local Bd = setup(H.model("bouncing_balls", { N = 15 }), 1.9, positions(15), { "g", "e_g", "e_b" }, 40, nil, "dense")
    local pb = { 9.7, 0.51, 0.61 }
    assert.is_true(rel(B:grad(pb, { method = "adjoint", mesh = 25 }), Bd:grad(pb, { method = "adjoint", mesh = 25 }))
      < 1e-9)
  end)
  it("refuses what it does not support, with a message", function()
    local L = setup(H.model("spring_latch"), 3, { "x" }, { "k" }, 10)
    local ok, err = pcall(L.grad, L, { 4 }, { method = "adjoint", forward = "euler" })
    assert.is_false(ok)
    assert.truthy(tostring(err):find('forward must be "consistent" or "ida"', 1, true))
  end)
  it("differentiates the blended discrete loss exactly too", function()
    local m = H.model("spring_latch")
    local times = {}
    for i = 1, 40 do times[i] = 3 * i / 40 end
    local tr = m:simulate{ tf = 3, times = times, rtol = 1e-12, atol = 1e-14 }
    local L = salta.lsq{ model = m, times = times, data = { x = tr.y.x, F = tr.y.F }, blend = 30,
      free = { "k", "c", "F_max", "e", "a" }, rtol = 1e-10, atol = 1e-12 }
    check_exact("spring_latch blended", L, { 4.1, 0.11, 1.48, 0.71, 0.105 }, 50)
    local tb = {}
    for i = 1, 40 do tb[i] = 1.9 * i / 40 end
    local Lb = salta.lsq{ model = H.model("bouncing_balls", { N = 3 }), times = tb, blend = 100,
      data = (function()
        local t2 = H.model("bouncing_balls", { N = 3 }):simulate{ tf = 1.9, times = tb, rtol = 1e-12, atol = 1e-12 }
        return { y1 = t2.y.y1, x2 = t2.y.x2 } end)(),
      free = { "g", "e_g", "e_b" }, rtol = 1e-10, atol = 1e-12 }
    check_exact("balls blended", Lb, { 9.7, 0.51, 0.61 }, 20)
    -- and it approaches the blended loss's sensitivity gradient
    local gs, ga = Lb:grad({ 9.7, 0.51, 0.61 }), Lb:grad({ 9.7, 0.51, 0.61 }, { method = "adjoint", mesh = 20 })
    for k = 1, 3 do assert.is_near(gs[k], ga[k], 1e-6 * math.abs(gs[k])) end
  end)
  it("forward = \"ida\" (the seed paper's) approximates the same gradient on a fine mesh", function()
    local L = setup(H.model("spring_latch"), 3, { "x", "F" }, { "k", "F_max", "e" }, 40)
    local p = { 4.1, 1.48, 0.71 }
    local gi = L:grad(p, { method = "adjoint", mesh = 400, forward = "ida" })
    local gs = L:grad(p)
    for k = 1, 3 do assert.is_near(gs[k], gi[k], 1e-3 * math.abs(gs[k])) end
  end)
end)

describe("discrete adjoint against the forward sensitivities", function()
  it("converges at second order as the mesh is refined (spring latch: z in guard and reset)", function()
    local L = setup(H.model("spring_latch"), 3, { "x", "F" }, { "k", "c", "F_max", "e", "a" }, 40)
    local p = { 4.1, 0.11, 1.48, 0.71, 0.105 }
    local gs = L:grad(p)
    local prev
    for _, K in ipairs({ 25, 50, 100, 200 }) do
      local e = rel(L:grad(p, { method = "adjoint", mesh = K }), gs)
      if prev then
        local order = math.log(prev / e, 2)
        assert(order > 1.8 and order < 2.3, ("mesh %d: observed order %.2f"):format(K, order))
      end
      prev = e
    end
    -- on the integrator's own steps at rtol 1e-8
    local Ls = setup(H.model("spring_latch"), 3, { "x", "F" }, { "k", "c", "F_max", "e", "a" }, 40, 1e-8)
    assert.is_true(rel(Ls:grad(p, { method = "adjoint", mesh = "steps" }), gs) < 1e-3)
  end)
  it("is exact for ballistic flight (the trapezoid and its interpolant are exact there)", function()
    local L = setup(H.model("bouncing_balls", { N = 3 }), 1.9, H.positions(3), { "g", "e_g", "e_b" }, 40)
    local p = { 9.7, 0.51, 0.61 }
    assert.is_true(rel(L:grad(p, { method = "adjoint", mesh = 10 }), L:grad(p)) < 1e-9)
  end)
end)

describe("discrete adjoint on the Cauer ladder", function()
  local free = { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" }
  local p = { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 }
  local function loss(rtol)
    return setup(H.model("cauer"), 20, { "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" }, free, 100, rtol)
  end
  it("converges at second order once the tanh source is resolved (K = 400, 800, 1600)", function()
    local L = loss(1e-11)
    local gs = L:grad(p)
    local e = {}
    for i, K in ipairs({ 400, 800, 1600 }) do e[i] = rel(L:grad(p, { method = "adjoint", mesh = K }), gs) end
    for i = 2, 3 do
      local order = math.log(e[i - 1] / e[i], 2)
      assert(order > 1.8 and order < 2.3, ("observed order %.2f"):format(order))
    end
  end)
  it("is within 1e-3 of the sensitivities on the integrator's steps at rtol 1e-8", function()
    local gs = loss(1e-11):grad(p)
    assert.is_true(rel(loss(1e-8):grad(p, { method = "adjoint", mesh = "steps" }), gs) < 1e-3)
  end)
end)

describe("discrete adjoint, robustness of its forward march", function()
  it("re-solves each step after a reset that changes the algebraic regime", function()
    -- z = x / (1 + (K - 1) m): the reset m = 0 scales g_z down by K = 1e10;
    -- a step matrix kept from before it would pass z's stale value as
    -- converged, and the later latch s = z would read it
    local m = salta.dae{ name = "mode", states = { { "x", 0 }, { "m", 1 }, { "s", 0 } }, algebraics = { { "z", 0 } },
      params = { { "v", 1e-4 }, { "K", 1e10 } },
      f = function(t, x, z, p) return { p.v, 0 * x.m, 0 * x.s } end,
      g = function(t, x, z, p) return { (1 + (p.K - 1) * x.m) * z.z - x.x } end,
      outputs = { "s" },
      events = {
        { name = "sw", direction = "up", guard = function(t, x, z, p) return x.x - 1e-4 end,
          reset = function(t, x, z, p) return { m = 0 * x.m } end },
        { name = "latch", direction = "up", guard = function(t, x, z, p) return x.x - 1.95e-4 end,
          reset = function(t, x, z, p) return { s = z.z } end } } }
    local ts, d = {}, {}
    for i = 1, 40 do ts[i] = 0.05 * i + 0.013; d[i] = 0 end
    local L = salta.lsq{ model = m, times = ts, data = { s = d }, free = { "v" }, rtol = 1e-12, atol = 1e-14 }
    -- x is linear in t, so the trapezoid is exact: the discrete loss is the loss
    local exact = L:value({ 1e-4 })
    for _, mesh in ipairs({ 20, 50 }) do
      assert.is_near(exact, L:value({ 1e-4 }, { method = "adjoint", mesh = mesh }), 1e-9 * exact)
    end
  end)
  it("reports a step whose Newton iteration turns NaN instead of returning NaN", function()
    -- x' = -c sqrt(x) empties at t = 2; a coarse trapezoid overshoots into x < 0
    local m = salta.dae{ name = "drain", states = { { "x", 1 } }, params = { { "c", 1 } },
      f = function(t, x, z, p) return { -p.c * salta.sqrt(x.x) } end }
    local ts, d = {}, {}
    for i = 1, 19 do ts[i] = 0.1 * i; d[i] = 0 end
    local L = salta.lsq{ model = m, times = ts, data = { x = d }, free = { "c" } }
    local ok, err = pcall(L.value_and_grad, L, { 1 }, { method = "adjoint", mesh = 2 })
    assert.is_false(ok)
    assert.truthy(tostring(err):find("model 'drain': adjoint: the trapezoidal step from t = 0.95", 1, true),
      tostring(err))
  end)
end)

describe("the adjoint at a crossing shallower than its discretisation error", function()
  it("names the event and how close its guard came, and points to the forward sensitivities", function()
    local L, p = H.rc20_loss(1e-6)
    local msg = H.err_of(L.grad, L, p, { method = "adjoint" })
    H.has(msg, "model 'rc_network_N20'", "does not reach the guard of event 'on", "closest", "method = \"sens\"")
    assert.are.equal(2, #L:grad(p))   -- the forward sensitivities get through
  end)
end)

describe("the adjoint's discrete trajectory, as predictions and residuals", function()
  local decay = salta.dae{ name = "decay", states = { { "x", 1 } }, params = { { "k", 1 } },
    outputs = { x = function(t, x) return x.x end },
    f = function(t, x, z, p) return { -p.k * x.x } end }

  it("on a fixed mesh: the trapezoid's closed form at the nodes and its interpolant between them", function()
    -- mesh = 2 on [0, 2], k = 1: x_n = ((1 - h/2) / (1 + h/2))^n = 3^-n at
    -- t = 1, 2; at t = 0.5 the interpolant x0 + (s - s^2/2h) f0 + s^2/2h f1
    -- = 1 - 3/8 - 1/24 = 7/12
    local L = salta.lsq{ model = decay, times = { 0.5, 1, 2 }, data = { x = { 0, 0, 0 } }, free = { "k" } }
    local y = L:predict({ 1 }, { method = "adjoint", mesh = 2 }).x
    assert.is_near(7 / 12, y[1], 1e-13)
    assert.is_near(1 / 3, y[2], 1e-13)
    assert.is_near(1 / 9, y[3], 1e-13)
    assert.is_near(math.exp(-1), L:predict({ 1 }).x[2], 1e-6)   -- the integrator's, not the trapezoid's
  end)

  it("on the default mesh: within the mesh's tolerance (10 (atol + rtol |x|)) of the closed form", function()
    local times, data = {}, {}
    for i = 1, 20 do times[i], data[i] = 0.1 * i, 0 end
    for _, rtol in ipairs({ 1e-5, 1e-7 }) do
      local L = salta.lsq{ model = decay, times = times, data = { x = data }, free = { "k" }, rtol = rtol,
        atol = rtol * 1e-2 }
      local y = L:predict({ 1.3 }, { method = "adjoint" }).x
      for i, t in ipairs(times) do
        assert.is_near(math.exp(-1.3 * t), y[i], 10 * (rtol * 1e-2 + rtol))
      end
    end
  end)

  it("its residuals are the discrete loss's: the same layout as residuals(p), their squares summing to its value", function()
    local m = H.ball()
    local tr = m:simulate{ tf = 2, times = { 0.1, 0.2, 0.3, 1.1 }, rtol = 1e-11, atol = 1e-13 }
    local impacts = {}
    for k, e in ipairs(tr:events()) do impacts[k] = e.t + 0.01 * k end
    impacts[2] = 0 / 0   -- an unmeasured firing has no residual
    local h = { tr.y.h[1], 0 / 0, tr.y.h[3] + 0.02, tr.y.h[4] - 0.01 }
    local L = salta.lsq{ model = m, times = { 0.1, 0.2, 0.3, 1.1 }, data = { h = h }, event_data = { impact = impacts },
      free = { "g", "e" }, rtol = 1e-8, atol = 1e-10 }
    local p = { 9.7, 0.78 }
    local ra, r = L:residuals(p, { method = "adjoint" }), L:residuals(p)
    assert.are.equal(#r, #ra)
    local s = 0
    for k = 1, #ra do
      s = s + ra[k] ^ 2
      assert.is_near(r[k], ra[k], 1e-5)
    end
    assert.is_near(L:value(p, { method = "adjoint" }), s, 1e-14 * s)
    -- on a fixed mesh too (the trapezoid is exact in flight: the same loss)
    local rc = L:residuals(p, { method = "adjoint", mesh = 3 })
    local sc = 0
    for k = 1, #rc do sc = sc + rc[k] ^ 2 end
    assert.is_near(L:value(p, { method = "adjoint", mesh = 3 }), sc, 1e-14 * sc)
  end)
end)
