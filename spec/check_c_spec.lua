-- The gradient check of a C host (salta_loss_check, through the loss's
-- core): the same routes, reference, rule and verdicts as
-- loss:check_gradient, whose rule (salta_check_judge) and carried error
-- (salta_carried_error) are the engine's.
local core = require("salta.core")
local H = require("spec.helpers")
local has = H.has

-- three parameters and a start value
local function bouncer_loss() return H.bouncer_loss(H.bouncer(), { "g", "e", "b", "x0.h" }) end

-- C's check at the loss's nominal point, as a table.
local function c_check(L, opts)
  local p = {}
  for k = 1, #L.free do p[k] = L:nominal(k) end
  local P, X = L:point(p)
  local rep, msg = L.core:check(P, X, opts or {})
  assert.is_truthy(rep, msg)
  return rep, p
end

describe("salta_loss_check", function()
  it("agrees with loss:check_gradient on every route at a point with bounces", function()
    local L = bouncer_loss()
    local rep, p = c_check(L)
    local lua = L:check_gradient{}
    assert.are.equal("ok", rep.verdict)
    assert.are.equal(8, #rep.routes)
    for k, r in ipairs(rep.routes) do
      assert.are.equal(lua.routes[k].name, r.name)
      assert.are.equal("ok", r.verdict, r.name)
      for j = 1, 4 do
        assert.is_true(math.abs(r.grad[j] - lua.routes[k].grad[j]) <= 1e-9 * math.abs(lua.reference[j]), r.name)
      end
    end
    for j = 1, 4 do
      assert.is_true(math.abs(rep.reference[j] - lua.reference[j]) <= 1e-12 * math.abs(lua.reference[j]))
    end
    -- the loss's own options and route are back: the value at rtol 1e-8 as before
    local again = L:twin({})
    assert.are.equal(again:value(p), L:value(p))
  end)

  it("is ill-conditioned where loss:check_gradient is, each route within what it carries", function()
    local L = H.ladder_loss(1e-10)
    local rep = c_check(L, { tol = 1e-6, routes = { "sens, erk", "sens, bdf" } })
    assert.are.equal("ill-conditioned", rep.verdict)
    assert.are.equal(2, #rep.routes)
    for _, r in ipairs(rep.routes) do
      assert.are.equal("ill-conditioned", r.verdict, r.name)
      assert.is_true(r.worst > 1e-6 and r.worst <= r.carried, r.name)
    end
  end)

  it("names a route the point refuses, and says the point is not differentiable", function()
    local L = H.coupled_stops_loss()
    local rep = c_check(L, { routes = { "sens", "fd" } })
    assert.are.equal("not differentiable", rep.verdict)
    assert.are.equal("not differentiable", rep.routes[1].verdict)
    has(rep.routes[1].error, "events 'stop1' and 'stop2' fire together", "do not commute")
    assert.is_nil(rep.routes[1].grad)
  end)

  it("refuses bad options and an unknown route, naming them", function()
    local L = bouncer_loss()
    local P, X = L:point({ 9.81, 0.8, 1e-3, 1 })
    local rep, msg = L.core:check(P, X, { tol = -1 })
    assert.is_nil(rep)
    has(tostring(msg), "the check's tol, h and rtol_ref must be finite numbers >= 0", "got -1")
    has(H.err_of(L.core.check, L.core, P, X, { routes = { "newton" } }), "no route 'newton'")
  end)
end)

describe("the rule (salta_check_judge) and the carried error", function()
  it("judge planted gradients as worked out by hand", function()
    local ref, err = { 1, 2 }, { 0, 0 }
    -- tol 1e-3 of the largest (2): 0.002 allowed; the second is 0.01 off
    local v, bad, worst = core.check_judge({ 1, 2.01 }, ref, err, 1e-3)
    assert.are.equal("disagree", v)
    assert.are.same({ false, true }, bad)
    assert.is_true(math.abs(worst - 0.005) < 1e-15)
    assert.are.equal("ok", (core.check_judge({ 1.001, 2 }, ref, err, 1e-3)))
    -- its error estimate widens the band by ten times itself
    assert.are.equal("ok", (core.check_judge({ 1, 2.01 }, ref, { 0, 0.001 }, 1e-3)))
    -- carried 0.02 covers it (0.01 <= 0.002 + 0.02); 0.001 does not, but with
    -- its own estimate 0.001 (ten times: 0.01) the route is uncertain
    assert.are.equal("ill-conditioned", (core.check_judge({ 1, 2.01 }, ref, err, 1e-3, { 0, 0.02 })))
    assert.are.equal("disagree", (core.check_judge({ 1, 2.01 }, ref, err, 1e-3, { 0, 0.001 })))
    assert.are.equal("uncertain", (core.check_judge({ 1, 2.01 }, ref, err, 1e-3, { 0, 0.001 }, { 0, 0.001 })))
    -- a NaN component is beyond any band
    v, bad = core.check_judge({ 0 / 0, 2 }, ref, err, 1e-3, { 1e300, 1e300 })
    assert.are.equal("disagree", v)
    assert.is_true(bad[1])
  end)

  it("carries each residual's error through the Jacobian, ten times its bound", function()
    -- e = (0.5, 0): 10 * 2 * 0.5 * |J_1k| = (10, 20)
    assert.are.same({ 10, 20 }, core.carried_error({ { 1, -2 }, { 3, 4 } }, { 1, 1 }, { 0.5, 1 }))
    has(H.err_of(core.carried_error, { { 1, 2 } }, { 1, 1 }, { 0, 0 }), "expected 2 rows, got 1")
  end)
end)
