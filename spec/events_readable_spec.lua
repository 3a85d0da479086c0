-- Events users can read: a run a terminal event ends has the terminal
-- state as the last point of the default grid (as scipy's solve_ivp);
-- the events of if-expressions are named after the condition (a label,
-- or the comparison as written), the one that fires when it becomes true
-- and its negation's when it becomes false; integer discrete variables
-- come back as Lua integers.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

local function shot()
  return salta.dae{ name = "shot", states = { { "y", 1 }, { "v", 2 } }, params = { { "g", 9.81 } },
    f = function(t, x, z, p) return { x.v, -p.g } end,
    events = { { name = "ground", direction = "down", guard = function(t, x) return x.y end, terminal = true } } }
end

describe("a terminal event", function()
  local landing = (2 + math.sqrt(4 + 2 * 9.81)) / 9.81

  it("leaves the terminal state as the last point of the default grid", function()
    local tr = shot():simulate{ tf = 2, rtol = 1e-11, atol = 1e-13 }
    local n = #tr.t
    assert.is_near(landing, tr.t[n], 1e-10)
    assert.are.equal(tr.t_end, tr.t[n])
    assert.is_near(0, tr.y.y[n], 1e-9)
    assert.is_near(2 - 9.81 * landing, tr.y.v[n], 1e-8)
    assert.is_true(tr.t[n - 1] < tr.t[n])
    assert.are.equal(math.floor(landing / 0.02) + 2, n)   -- the grid's points before it, and it
  end)

  it("adds no point to given times unless asked, nor where one is already", function()
    local times = { 0, 0.25, 0.5, 1, 1.5 }
    local tr = shot():simulate{ tf = 2, times = times }
    assert.are.same({ 0, 0.25, 0.5 }, tr.t)
    local asked = shot():simulate{ tf = 2, times = times, terminal_output = true, rtol = 1e-11, atol = 1e-13 }
    assert.are.equal(4, #asked.t)
    assert.is_near(landing, asked.t[4], 1e-10)
    local off = shot():simulate{ tf = 2, terminal_output = false }
    assert.is_true(off.t[#off.t] < off.t_end)
    -- a run that reaches tf is unchanged
    local far = shot():simulate{ tf = 0.5 }
    assert.are.equal(101, #far.t)
    assert.are.equal(0.5, far.t[101])
  end)
end)

describe("the events of an if-expression", function()
  -- x pushed toward k: x'' = 1 while x < k, else -1, damped; it crosses k
  -- upward first
  local function pusher(opts)
    return salta.dae{ name = "pusher", states = { { "x", 0 }, { "v", 1 } }, params = { { "k", 1 } },
      f = function(t, x, z, p)
        return { x.v, salta.ifelse(salta.lt(x.x, p.k), 1, -1, opts) - 0.1 * x.v }
      end }
  end

  it("are named after the comparison: it becoming true, and its negation", function()
    local tr = pusher():simulate{ tf = 12, rtol = 1e-10, atol = 1e-12 }
    local ev = tr:events()
    assert.is_true(#ev >= 3)
    for _, e in ipairs(ev) do
      local before = e.rate
      assert.is_near(1, e.x_minus.x, 1e-8)
      if e.name == "x >= k" then
        assert.is_true(e.x_minus.v > 0)   -- x rises through k: x < k becomes false
      else
        assert.are.equal("x < k", e.name)
        assert.is_true(e.x_minus.v < 0)   -- x falls through k: x < k becomes true
      end
      assert.is_true(before ~= 0)
    end
    assert.are.equal("x >= k", ev[1].name)
    assert.are.equal("x < k", ev[2].name)
  end)

  it("take a label: the label when it becomes true, \"not <label>\" when it becomes false", function()
    local ev = pusher({ name = "pulling" }):simulate{ tf = 12 }:events()
    assert.are.equal("not pulling", ev[1].name)
    assert.are.equal("pulling", ev[2].name)
    -- event data can name them
    local L = salta.lsq{ model = pusher({ name = "pulling" }), event_data = { pulling = { ev[2].t } }, free = { "k" } }
    assert.is_near(0, L:value({ 1 }), 1e-10)
  end)

  it("refuse a label that is not a name, two labels for one condition, and one another event has", function()
    has(err_of(pusher, 3), "salta.ifelse", "name")
    has(err_of(pusher, { name = "" }), "salta.ifelse", "non-empty")
    has(err_of(salta.dae, { name = "twice", states = { { "x", 0 } },
      f = function(t, x)
        return { salta.ifelse(salta.lt(x.x, 1), 1, 2, { name = "a" }) + salta.ifelse(salta.lt(x.x, 1), 1, 2,
          { name = "b" }) }
      end }), "named both 'a' and 'b'")
    has(err_of(salta.dae, { name = "taken", states = { { "x", 0 } },
      f = function(t, x) return { salta.ifelse(salta.lt(x.x, 1), 1, 2, { name = "hit" }) } end,
      events = { { name = "hit", guard = function(t, x) return x.x - 5 end } } }), "'hit'", "taken")
  end)

  it("shorten a long comparison, and keep names apart", function()
    local m = salta.dae{ name = "long", states = { { "x", 0 } },
      params = { { "alpha_coefficient", 1 }, { "beta_coefficient", 2 } },
      f = function(t, x, z, p)
        return { salta.ifelse(salta.gt(p.alpha_coefficient * t + p.beta_coefficient * t * t, 3), 1, 0) }
      end }
    for _, n in ipairs(m.events) do assert.is_true(#n <= 45, n) end
    assert.truthy(m.events[1]:find("...", 1, true))
  end)
end)

describe("integer discrete variables", function()
  local function counter()
    return salta.dae{ name = "counter", states = { { "h", 1 }, { "v", 0 } },
      discrete = { { "n", 0 }, { "twice", 0 }, { "level", 0.5 }, { "scaled", 1 } }, params = { { "e", 0.8 } },
      f = function(t, x) return { x.v, -9.81 } end,
      events = { { name = "impact", direction = "down", guard = function(t, x) return x.h end,
        reset = function(t, x, z, p)
          return { v = -p.e * x.v, n = x.n + 1, twice = 2 * x.n - x.twice + 3, level = x.level + 1, scaled = p.e * x.scaled }
        end } } }
  end

  it("come back as integers when the start and every reset are whole, everywhere a trajectory shows them", function()
    local tr = counter():simulate{ tf = 2, record_steps = true }
    local last = #tr.t
    for _, col in ipairs({ tr.x.n, tr.y.n, tr.discrete.n, tr.x.twice, tr.steps.x.n }) do
      for _, v in ipairs(col) do assert.are.equal("integer", math.type(v)) end
    end
    assert.are.equal(#tr:events(), tr.x.n[last])
    for k, e in ipairs(tr:events()) do
      assert.are.equal("integer", math.type(e.x_plus.n))
      assert.are.equal(k, e.x_plus.n)
      assert.are.equal(k - 1, e.x_minus.n)
    end
    assert.are.equal("integer", math.type(tr:at(1.05).n))
    -- not whole: a start of 0.5, a reset by a parameter
    assert.are.equal("float", math.type(tr.x.level[last]))
    assert.are.equal("float", math.type(tr.x.scaled[last]))
    assert.are.equal("float", math.type(tr.x.h[1]))
  end)

  it("include a Modelica Integer", function()
    local m = salta.load_modelica("models/modelica/constructs.bmo", { model = "Ball" })
    local tr = m:simulate{ tf = 3 }
    for _, e in ipairs(tr:events()) do assert.are.equal("integer", math.type(e.x_plus.n)) end
  end)
end)
