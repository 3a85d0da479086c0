-- The optimisers on problems with known answers.
local optim = require("salta.optim")

local function rosenbrock(x)
  local a, b = x[1], x[2]
  local f = (1 - a) ^ 2 + 100 * (b - a * a) ^ 2
  return f, { -2 * (1 - a) - 400 * a * (b - a * a), 200 * (b - a * a) }
end

describe("L-BFGS-B", function()
  it("finds the Rosenbrock minimum (1, 1) when the bounds allow it", function()
    local r = optim.lbfgsb(rosenbrock, { -1.2, 1.0 }, { lower = { -2, -2 }, upper = { 2, 2 }, factr = 10, pgtol = 1e-10 })
    assert.is_true(r.converged, r.status)
    assert.is_near(1, r.x[1], 1e-6); assert.is_near(1, r.x[2], 1e-6)
  end)
  it("stops on an active bound: with b <= 0.5 the minimum is the KKT point on b = 0.5", function()
    local r = optim.lbfgsb(rosenbrock, { -1.2, 0.0 }, { lower = { -2, -2 }, upper = { 2, 0.5 }, factr = 10, pgtol = 1e-10 })
    assert.is_true(r.converged, r.status)
    assert.are.equal(0.5, r.x[2])
    -- on b = 0.5: d/da [(1-a)^2 + 100 (0.5 - a^2)^2] = 0
    local a = r.x[1]
    assert.is_near(0, -2 * (1 - a) - 400 * a * (0.5 - a * a), 1e-5)
    assert.is_true(a > 0.7 and a < 0.71)
  end)
end)

describe("Levenberg-Marquardt", function()
  it("fits y = A exp(-k t) + c exactly", function()
    local ts, ys = {}, {}
    for i = 1, 20 do ts[i] = 0.25 * i; ys[i] = 2.5 * math.exp(-1.3 * ts[i]) + 0.4 end
    local function rj(x, what)
      local A, k, c = x[1], x[2], x[3]
      local out = {}
      for i, t in ipairs(ts) do
        local e = math.exp(-k * t)
        out[i] = what == "r" and (A * e + c - ys[i]) or { e, -A * t * e, 1 }
      end
      return out
    end
    local r = optim.lm(rj, { 1, 0.5, 0 }, #ts)
    assert.is_true(r.converged, r.status)
    assert.is_near(2.5, r.x[1], 1e-9); assert.is_near(1.3, r.x[2], 1e-9); assert.is_near(0.4, r.x[3], 1e-9)
    assert.is_true(r.f < 1e-20)
    -- each iterate's recorded gradient is |2 J'r| at that iterate, computed here from rj;
    -- lmder's closing report may follow a step without a Jacobian and then has none
    assert.is_true(#r.history.gnorm >= 3)
    for it = 1, #r.history.gnorm do
      local x = r.history.x[it]
      local res, jac = rj(x, "r"), rj(x, "j")
      local g = { 0, 0, 0 }
      for i = 1, #ts do for j = 1, 3 do g[j] = g[j] + 2 * jac[i][j] * res[i] end end
      local gn = math.sqrt(g[1] ^ 2 + g[2] ^ 2 + g[3] ^ 2)
      local got = r.history.gnorm[it]
      if got ~= got then
        assert.are.equal(#r.history.gnorm, it)   -- only lmder's closing report lacks a Jacobian
      else
        assert.is_near(gn, got, 1e-12 + 1e-10 * gn)
      end
    end
  end)
  it("passes a Lua error in the residual function through, with its message", function()
    local ok, err = pcall(optim.lm, function() error("model blew up") end, { 1, 2 }, 3)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("model blew up", 1, true))
  end)
end)

describe("Adam", function()
  it("minimises a quadratic and follows the reference update", function()
    local function fg(x) return (x[1] - 3) ^ 2 + 2 * (x[2] + 1) ^ 2, { 2 * (x[1] - 3), 4 * (x[2] + 1) } end
    local r = optim.adam(fg, { 0, 0 }, { lr = 0.1, max_iter = 2000, tol = 1e-8 })
    assert.is_true(r.converged, r.status)
    assert.is_near(3, r.x[1], 1e-6); assert.is_near(-1, r.x[2], 1e-6)
    -- the first step of Adam moves every coordinate by lr (bias-corrected)
    local one = optim.adam(fg, { 0, 0 }, { lr = 0.1, max_iter = 1 })
    assert.is_near(0.1, one.x[1], 1e-7); assert.is_near(-0.1, one.x[2], 1e-7)
  end)
  it("clips to bounds and keeps the best snapshot", function()
    local function fg(x) return (x[1] - 3) ^ 2, { 2 * (x[1] - 3) } end
    local r = optim.adam(fg, { 0 }, { lr = 0.5, max_iter = 50, upper = { 2 } })
    assert.are.equal(2, r.x[1])
    -- a step too large makes Adam oscillate: the best of the snapshots at
    -- iterations 1, 5, 10, 15, 20 is returned when it beats the last loss
    local noisy = optim.adam(function(x) return (x[1] - 1) ^ 2, { 2 * (x[1] - 1) } end, { 0 },
      { lr = 1.5, max_iter = 20, best = 5 })
    local h, best = noisy.history.f, math.huge
    for _, k in ipairs({ 1, 5, 10, 15, 20 }) do best = math.min(best, h[k]) end
    assert.is_true(noisy.best_snapshot)
    assert.are.equal(best, noisy.f)
    assert.is_true(best < h[#h])
  end)
end)

describe("a loss that fails at a trial point", function()
  -- the quadratic (x - 3)^2, whose evaluation fails beyond x = 1 (as a
  -- simulation fails past a grazing event): each optimiser stops there and
  -- returns its last accepted iterate with the message
  local function fg(x)
    if x[1] > 1 then error("simulation failed at x = " .. x[1], 0) end
    return (x[1] - 3) ^ 2, { 2 * (x[1] - 3) }
  end
  local function rj(x, what)
    if x[1] > 1 then error("simulation failed at x = " .. x[1], 0) end
    if what == "r" then return { x[1] - 3, 0.1 * (x[1] - 3) } end
    return { { 1 }, { 0.1 } }
  end
  local function check(r, fn)
    assert.is_false(r.converged)
    assert.truthy(r.status:find("^stopped: the loss failed at "), r.status)
    assert.truthy(r.error:find("simulation failed at x = ", 1, true), r.error)
    assert.is_true(r.x[1] <= 1)
    -- the returned value belongs to the returned point
    assert.are.equal(fn(r.x), r.f)
  end
  it("Adam", function()
    local r = optim.adam(fg, { 0 }, { lr = 0.3, max_iter = 100 })
    check(r, function(x) return (fg(x)) end)
  end)
  it("L-BFGS-B", function()
    local r = optim.lbfgsb(fg, { 0.5 }, {})
    check(r, function(x) return (fg(x)) end)
  end)
  it("Levenberg-Marquardt", function()
    local r = optim.lm(rj, { 0.5 }, 2, { factor = 10 })
    check(r, function(x) local v = rj(x, "r"); return v[1] ^ 2 + v[2] ^ 2 end)
  end)
  it("raises when the start itself fails", function()
    local ok, err = pcall(optim.lbfgsb, fg, { 2 }, {})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("simulation failed at x = 2", 1, true))
    ok, err = pcall(optim.adam, function() return 0 / 0, { 0 } end, { 0 }, {})
    assert.is_false(ok)
    assert.truthy(tostring(err):find("the loss is %-?nan"), tostring(err))
    ok, err = pcall(optim.lm, rj, { 2 }, 2)
    assert.is_false(ok)
    assert.truthy(tostring(err):find("simulation failed at x = 2", 1, true))
    -- residuals fine, Jacobian failing at the start: no accepted iterate
    ok, err = pcall(optim.lm, function(x, what) if what == "j" then error("no Jacobian", 0) end
      return { x[1] - 3, 1 } end, { 0 }, 2)
    assert.is_false(ok)
    assert.are.equal("no Jacobian", err)
  end)
  it("Levenberg-Marquardt returns the accepted point whose Jacobian failed", function()
    -- the first step is accepted at x = 3 (the minimum); the Jacobian there fails
    local r = optim.lm(function(x, what)
      if what == "j" then
        if x[1] > 1 then error("no Jacobian at x = " .. x[1], 0) end
        return { { 1 }, { 0 } }
      end
      return { x[1] - 3, 1 }
    end, { 0 }, 2)
    assert.is_false(r.converged)
    assert.are.equal("no Jacobian at x = 3.0", r.error)
    assert.are.equal(3, r.x[1])
    assert.are.equal(1, r.f)
  end)
  it("Levenberg-Marquardt stops at NaN residuals at a trial point", function()
    local r = optim.lm(function(x, what)
      if what == "j" then return { { 1 }, { 0.1 } } end
      if x[1] > 1 then return { 0 / 0, 0 } end
      return { x[1] - 3, 0.1 * (x[1] - 3) }
    end, { 0.5 }, 2, { factor = 10 })
    assert.is_false(r.converged)
    assert.truthy(r.error:find("the residuals' entry 1 is %-?nan"), r.error)
    assert.are.equal(0.5, r.x[1])
  end)
  it("raises an error of the callback as it is", function()
    local ok, err = pcall(optim.lm, rj, { 0.5 }, 2, { callback = function() error("callback broke", 0) end })
    assert.is_false(ok)
    assert.are.equal("callback broke", err)
  end)
  it("L-BFGS-B out of evaluations returns an accepted iterate with its loss", function()
    local r = optim.lbfgsb(rosenbrock, { -1.2, 1.0 }, { max_eval = 7 })
    assert.are.equal("maximum evaluations", r.status)
    assert.are.equal((rosenbrock(r.x)), r.f)
    assert.are.equal(r.history.x[#r.history.x][1], r.x[1])
  end)
end)

describe("the shared stop rules", function()
  local ts, ys = {}, {}
  for i = 1, 20 do ts[i] = 0.25 * i; ys[i] = 2.5 * math.exp(-1.3 * ts[i]) + 0.4 end
  local function rj(x, what)
    local out = {}
    for i, t in ipairs(ts) do
      local e = math.exp(-x[2] * t)
      out[i] = what == "r" and (x[1] * e + x[3] - ys[i]) or { e, -x[1] * t * e, 1 }
    end
    return out
  end
  it("max_iter, tol and rel_tol end Levenberg-Marquardt", function()
    local r = optim.lm(rj, { 1, 0.5, 0 }, #ts, { max_iter = 2 })
    assert.are.equal("maximum iterations", r.status)
    assert.is_false(r.converged)
    assert.are.equal(2, #r.history.f)
    r = optim.lm(rj, { 1, 0.5, 0 }, #ts, { tol = 1e-3 })
    assert.are.equal("gradient norm below tol", r.status)
    assert.is_true(r.converged)
    assert.is_true(r.history.gnorm[#r.history.gnorm] < 1e-3)
    assert.is_true(r.history.gnorm[#r.history.gnorm - 1] >= 1e-3)   -- not one iteration later
    -- the loss falls from 4.41 to 2.16, a change within 1.5 |f|: the run ends at the second iteration
    r = optim.lm(rj, { 1, 0.5, 0 }, #ts, { rel_tol = 1.5 })
    assert.are.equal("relative loss change below rel_tol", r.status)
    local h = r.history.f
    assert.are.equal(2, #h)
    assert.is_true(math.abs(h[1] - h[2]) <= 1.5 * h[2])
  end)
  it("tol and rel_tol end L-BFGS-B", function()
    local r = optim.lbfgsb(rosenbrock, { -1.2, 1.0 }, { tol = 1e-2 })
    assert.are.equal("gradient norm below tol", r.status)
    local gn = r.history.gnorm
    assert.is_true(gn[#gn] < 1e-2 and gn[#gn - 1] >= 1e-2)
    assert.are.equal((rosenbrock(r.x)), r.f)
    r = optim.lbfgsb(rosenbrock, { -1.2, 1.0 }, { rel_tol = 0.1 })
    assert.are.equal("relative loss change below rel_tol", r.status)
    local h = r.history.f
    assert.is_true(math.abs(h[#h - 1] - h[#h]) <= 0.1 * h[#h])
  end)
end)
