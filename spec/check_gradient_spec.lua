-- loss:check_gradient: every route against Richardson differences of a
-- tighter twin, per parameter, with an error estimate, a verdict and the
-- event structure at the point; differences with a step relative to each
-- parameter (small parameters included); salta.fit{ check = true }.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

local bouncer, loss = H.bouncer, H.bouncer_loss

describe("loss:check_gradient", function()
  it("agrees on every route at a point with bounces, and says so", function()
    local L = loss(bouncer(), { "g", "e", "b" })
    local rep = L:check_gradient{}
    assert.are.equal("ok", rep.verdict, tostring(rep))
    assert.are.equal(8, #rep.routes)
    for _, r in ipairs(rep.routes) do assert.is_true(r.ok, tostring(rep)) end
    assert.is_true(rep.events.count >= 2)
    local text = tostring(rep)
    has(text, "gradient check at g = 9.81", "sens, erk", "adjoint, erk", "adjoint, bdf", "adjoint_cont", "verdict: ok", "events: ")
    for k = 1, 3 do assert.is_true(rep.reference_err[k] <= 1e-6 * math.abs(rep.reference[k]) + 1e-12) end
  end)

  it("flags a route that is wrong, naming the parameter", function()
    local L = loss(bouncer(), { "g", "e" })
    local grad = L.grad
    L.grad = function(self, p, opts)   -- a planted error in one component
      local g = grad(self, p, opts)
      g[2] = g[2] * 1.01
      return g
    end
    local rep = L:check_gradient{ routes = { "sens", "fd" } }
    assert.are.equal("disagree", rep.verdict)
    assert.is_false(rep.routes[1].ok)
    assert.is_true(rep.routes[1].bad[2])
    assert.is_false(rep.routes[1].bad[1])
    assert.is_true(rep.routes[2].ok)
  end)

  it("names a point that is not differentiable (a group whose members do not commute)", function()
    local L = H.coupled_stops_loss()
    local rep = L:check_gradient{ routes = { "sens" } }
    assert.are.equal("not differentiable", rep.verdict)
    has(rep.routes[1].error, "events 'stop1' and 'stop2' fire together", "parameter 'k1'", "do not commute")
    assert.is_true(rep.events.groups >= 1)
  end)

  it("stops when a route is interrupted, rather than counting the route refused", function()
    local core = require("salta.core")
    local L = loss(bouncer(), { "g" })
    local grad = L.grad
    L.grad = function(self, p, opts)   -- salta.interrupt() arrives during the route
      core.interrupt()
      local ok, g = pcall(grad, self, p, opts)
      core.interrupt_clear()
      if not ok then error(g, 0) end
      return g
    end
    local ok, e = pcall(L.check_gradient, L, { routes = { "sens", "fd" } })
    assert.is_false(ok)
    assert.are.equal("interrupted", core.errcode(e))
    has(tostring(e), "interrupted at t = ")
  end)

  it("says how far it is, with each step's time, when asked", function()
    local lines = {}
    local rep = loss(bouncer(), { "g" }):check_gradient{ routes = { "sens", "fd" },
      progress = function(line) lines[#lines + 1] = line end }
    assert.are.equal(3, #lines, table.concat(lines, "\n"))
    assert.is_truthy(lines[1]:match("^check_gradient: the reference %(differences at rtol 1e%-11%): [%d.]+ s$"), lines[1])
    assert.is_truthy(lines[2]:match("^check_gradient: sens: ok, [%d.]+ s$"), lines[2])
    assert.is_truthy(lines[3]:match("^check_gradient: fd: ok, [%d.]+ s$"), lines[3])
    assert.are.equal("ok", rep.verdict)
    has(err_of(loss(bouncer(), { "g" }).check_gradient, loss(bouncer(), { "g" }), { progress = 1 }), "progress")
  end)

  it("refuses an unknown option", function()
    local L = loss(bouncer(), { "g" })
    has(err_of(L.check_gradient, L, { step = 1e-3 }), "loss:check_gradient: unknown option 'step'")
  end)
end)

describe("differences", function()
  it("take a step relative to each parameter: a parameter of 1e-3 gets the accuracy of one of 10", function()
    local L = loss(bouncer(), { "b", "g" }, 1e-11)
    local fd, g = L:grad({ 1e-3, 9.81 }, { method = "fd" }), L:grad({ 1e-3, 9.81 })
    for k = 1, 2 do assert.is_near(g[k], fd[k], 1e-6 * math.abs(g[k])) end
  end)
end)

describe("a reference that cannot decide", function()
  -- samples of the stiff relay's current fall in its 0.1 ms filter
  -- transient after a switching: steps of 1e-4 straddle it
  local function relay_loss()
    local m = H.model("stiff_relay")
    local times = H.uniform(3, 40)
    local tr = m:simulate{ tf = 3, times = times, rtol = 1e-12, atol = 1e-12 }
    local data = { i = {} }
    for k, v in ipairs(tr.y.i) do data.i[k] = 1.01 * v end
    return salta.lsq{ model = m, times = times, data = data, free = { "R", "v_hi" }, rtol = 1e-10, atol = 1e-10 }
  end

  it("is inconclusive at a step the user fixed, never ok", function()
    local rep = relay_loss():check_gradient{ h = 1e-3, routes = { "sens" } }
    assert.are.equal("inconclusive", rep.verdict)
    has(tostring(rep), "the reference is uncertain beyond the tolerance for R", "verdict: inconclusive")
  end)

  it("refines the step when none is given, and then decides", function()
    -- decided: ok, or (BDF's switching times carry its global error into
    -- the transient's samples: 1e-5 of the largest component at rtol
    -- 1e-10, moving with rounding) ill-conditioned; never inconclusive
    local rep = relay_loss():check_gradient{ tol = 1e-6, routes = { "sens" } }
    assert.is_true(rep.verdict == "ok" or rep.verdict == "ill-conditioned", tostring(rep))
    assert.is_true(rep.routes[1].ok or rep.routes[1].ill_conditioned, tostring(rep))
    has(tostring(rep), "refined to")
  end)
end)

describe("a gradient its integration error limits", function()
  -- the Cauer ladder N = 6 over 20 s: 136 clamp resets amplify the
  -- integration error, so that at rtol 1e-10 the sensitivities are 2e-6
  -- (ERK) and 6.5e-5 (BDF) of the largest component from the reference,
  -- and converge to it with rtol (1e-8 and 6e-7 at rtol 1e-12)
  local ladder_loss = H.ladder_loss
  local routes = { "sens, erk", "sens, bdf" }

  it("is ill-conditioned, each route within what its outputs' error carries, and ok at a smaller rtol", function()
    local rep = ladder_loss(1e-10):check_gradient{ tol = 1e-6, routes = routes }
    assert.are.equal("ill-conditioned", rep.verdict, tostring(rep))
    for _, r in ipairs(rep.routes) do
      assert.is_false(r.ok, tostring(rep))
      assert.is_true(r.ill_conditioned, tostring(rep))
      assert.is_true(r.worst > 1e-6 and r.worst <= r.carried_worst, tostring(rep))
    end
    has(tostring(rep), "that its outputs' integration error at rtol 1e-10 carries: ill-conditioned",
      "verdict: ill-conditioned")
    local tight = ladder_loss(1e-12):check_gradient{ tol = 1e-6, routes = routes }
    assert.are.equal("ok", tight.verdict, tostring(tight))
  end)

  it("still disagrees where a route is wrong by more than that", function()
    local L = ladder_loss(1e-10)
    local grad = L.grad
    L.grad = function(self, p, opts)   -- 1e-3 off in one component: ten times the carried error
      local g = grad(self, p, opts)
      g[3] = g[3] * 1.001
      return g
    end
    local rep = L:check_gradient{ tol = 1e-6, routes = { "sens" } }
    assert.are.equal("disagree", rep.verdict, tostring(rep))
    assert.is_true(rep.routes[1].bad[3] and not rep.routes[1].ill_conditioned)
    has(tostring(rep), "DISAGREES within 1e-06; its outputs' integration error carries")
  end)

  it("is what a fit warns about at its start, and goes on", function()
    local L, printed, old = ladder_loss(1e-10), {}, _G.print
    _G.print = function(s) printed[#printed + 1] = tostring(s) end   -- the fit warns through the global print
    local ok, fit = pcall(salta.fit, { loss = L, start = { 0.5, 0.5, 1 }, check = true, print_every = 0,
      max_iter = 1 })
    _G.print = old
    assert.is_true(ok, tostring(fit))
    assert.is_true(#fit.x == 3)
    has(table.concat(printed, "\n"), "salta.fit: warning: the gradient check at the start is ill-conditioned")
  end)
end)

describe("differences in the check", function()
  it("count as uncertain, not wrong, where they are off by no more than their own error estimate", function()
    local L = loss(bouncer(), { "g", "e" })
    local fd_grad = L.fd_grad
    L.fd_grad = function(self, p, opts)   -- differences whose own estimate admits a 1e-3 error
      local g, err = fd_grad(self, p, opts)
      if opts and opts.error and opts.h == nil then
        g[2], err[2] = g[2] * 1.001, math.abs(g[2]) * 1e-3
      end
      return g, err
    end
    local rep = L:check_gradient{ routes = { "sens", "fd" } }
    assert.are.equal("inconclusive", rep.verdict, tostring(rep))
    assert.is_true(rep.routes[1].ok and rep.routes[2].uncertain, tostring(rep))
    has(tostring(rep), "but within its own error estimate", "not counted")
    -- a fit checked at that start warns and goes on
    local printed, old = {}, _G.print
    _G.print = function(s) printed[#printed + 1] = tostring(s) end
    local ok, fit = pcall(salta.fit, { loss = L, start = { 9.81, 0.8 }, check = true, print_every = 0, max_iter = 1 })
    _G.print = old
    assert.is_true(ok, tostring(fit))
    has(table.concat(printed, "\n"), "salta.fit: warning: the gradient check at the start is inconclusive",
      "the differences at the fit's tolerance")
  end)
end)

describe("salta.fit{ check = true }", function()
  it("checks the fit's route at the start and stops when it disagrees", function()
    local L = loss(bouncer(), { "g", "e" })
    local fit = salta.fit{ loss = L, start = { 9.5, 0.75 }, check = true, print_every = 0, max_iter = 2 }
    assert.is_true(#fit.x == 2)
    local grad = L.grad
    L.grad = function(self, p, opts)
      local g = grad(self, p, opts)
      g[1] = -g[1]
      return g
    end
    has(err_of(salta.fit, { loss = L, start = { 9.5, 0.75 }, check = true, print_every = 0 }),
      "salta.fit: the gradient check at the start failed", "verdict: disagree")
  end)
end)
