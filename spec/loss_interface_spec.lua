-- The loss interface (salta.loss_interface) that salta.fit, the
-- covariance, multi-start and profiles rely on: the same checks against
-- every implementation (salta.lsq, salta.experiments and its stand-in for
-- an experiment without targets, the profile's view with one parameter
-- held, a noise model).
local salta = require("salta")
local interface = require("salta.loss_interface")
local H = require("spec.helpers")

-- x' = -k x + c, a bounce off 0.2 (reset x = 0.5), observed at times
local function decay(name)
  return salta.dae{ name = name, states = { { "x", 1 } }, params = { { "k", 1.3 }, { "c", 0.1 } },
    f = function(t, x, z, p) return { -p.k * x.x + p.c } end,
    events = { { name = "floor", direction = "down", guard = function(t, x) return x.x - 0.2 end,
      reset = function() return { x = 0.5 } end } } }
end

local function loss_on(m, times, free, transform)
  local data = m:simulate{ times = times, params = { k = 1.1, c = 0.15 }, rtol = 1e-10 }.y.x
  return salta.lsq{ model = m, times = times, data = { x = data }, free = free, transform = transform or "none",
    rtol = 1e-10, atol = 1e-12 }
end

local T1, T2 = {}, {}
for i = 1, 12 do T1[i] = 0.25 * i end
for i = 1, 8 do T2[i] = 1.5 + 0.2 * i end

local lsq = loss_on(decay("a"), T1, { "k", "c", "x0.x" }, { k = "log" })   -- the others: "none"
local other = loss_on(decay("b"), T2, { "k", "c" }, { k = "log", c = "none" })
local experiments = salta.experiments{ losses = { loss_on(decay("c"), T1, { "k", "c" }, { k = "log", c = "none" }), other },
  shared = { "k" } }
local IMPLEMENTATIONS = {
  { "salta.lsq", lsq, { 1.2, 0.12, 0.95 } },
  { "salta.experiments", experiments, { 1.2, 0.12, 0.13 } },
  { "salta.experiments' window (an experiment without targets)", experiments:window(1.2), { 1.2, 0.12, 0.13 } },
  { "salta.experiments' stand-in", require("salta.experiments").empty(other), { 1.2, 0.12 } },
  { "the profile's view", require("salta.profile").view(lsq, 2, 0.11), { 1.2, 0.95 } },
  { "salta.noise", salta.noise{ loss = loss_on(decay("d"), T1, { "k", "c" }, { k = "log" }),
    sigma = { x = { a = "sa", b = "sb" } } }, { 1.2, 0.12, 0.05, 0.02 } },
}

local function close(a, b, rel, what)
  assert(math.abs(a - b) <= rel * math.max(math.abs(a), math.abs(b), 1e-300),
    ("%s: %.17g against %.17g"):format(what, a, b))
end

local function sum_sq(r)
  local s = 0
  for _, x in ipairs(r) do s = s + x * x end
  return s
end

-- The point p by the free parameters' names.
local function by_name(loss, p)
  local out = {}
  for k, n in ipairs(loss.free) do out[n] = p[k] end
  return out
end

-- Central differences of the value in the optimiser's variable (log p
-- where log-transformed), which the gradient is by.
local function fd(loss, p, k)
  local h = 1e-5
  local function at(s)
    local q = { table.unpack(p) }
    q[k] = loss.log[k] and p[k] * math.exp(s) or p[k] + s * math.max(1, math.abs(p[k]))
    return loss:value(q)
  end
  return (at(h) - at(-h)) / (2 * h * (loss.log[k] and 1 or math.max(1, math.abs(p[k]))))
end

for _, impl in ipairs(IMPLEMENTATIONS) do
  local name, loss, p = impl[1], impl[2], impl[3]
  describe("the loss interface: " .. name, function()
    it("has every field and method", function()
      assert.is_nil(interface.missing(loss))
      assert.are.equal(#loss.free, #loss.log)
      assert.are.equal(#loss.free, #p)
      for i = 2, #loss.times do assert.is_true(loss.times[i - 1] <= loss.times[i]) end
      if #loss.times > 0 then assert.is_true(loss.t0 <= loss.times[1]) end
    end)
    it("has value = the sum of the squared residuals, one count per residual", function()
      local r = loss:residuals(p)
      close(loss:value(p), sum_sq(r), 1e-12, "value")
      assert.are.equal(#r, #loss:residual_counts())
      for _, c in ipairs(loss:residual_counts()) do assert.is_true(math.type(c) == "integer" and c > 0 and c <= #r) end
      assert.is_boolean(loss:absolute())
    end)
    it("has gradient = 2 J' r, by log p where log-transformed, and the differences' value", function()
      local v, g = loss:value_and_grad(p)
      close(v, loss:value(p), 1e-6, "value_and_grad's value")
      local g2, J, r = loss:grad(p), loss:jacobian(p), loss:residuals(p)
      assert.are.equal(#loss.free, #g)
      assert.are.equal(#r, #J)
      for k = 1, #loss.free do
        local jr = 0
        for i, row in ipairs(J) do
          assert.are.equal(#loss.free, #row)
          jr = jr + 2 * row[k] * r[i]
        end
        close(g[k], g2[k], 1e-12, "grad " .. k)
        assert(math.abs(g[k] - jr) <= 1e-6 * math.max(1e-8, math.abs(g[k])), ("2 J'r %d: %g against %g"):format(k, jr, g[k]))
        assert(math.abs(g[k] - fd(loss, p, k)) <= 1e-4 * math.max(1e-6, math.abs(g[k])),
          ("differences %d: %g against %g"):format(k, fd(loss, p, k), g[k]))
      end
    end)
    it("takes a point by name as by position, and refuses one of the wrong length naming the parameters", function()
      close(loss:value(by_name(loss, p)), loss:value(p), 1e-12, "by name")
      local short = { table.unpack(p, 1, #p - 1) }
      H.has(H.err_of(loss.value, loss, short), ("%d parameter values, expected %d"):format(#p - 1, #p), loss.free[1])
    end)
    it("has nominal values, a mesh check, a window and statistics", function()
      for k = 1, #loss.free do
        local v = loss:nominal(k)
        assert.is_true(v == nil or type(v) == "number")
        if loss.attributes then assert.is_table(loss:attributes(k)) end
      end
      assert.is_true(loss:mesh_check(p, {}))
      local t_end = loss.times[#loss.times // 2 + 1] or 1
      local w = loss:window(t_end)
      assert.is_nil(interface.missing(w))
      assert.are.same(loss.free, w.free)
      for _, t in ipairs(w.times) do assert.is_true(t <= t_end) end
      close(w:value(p), sum_sq(w:residuals(p)), 1e-12, "the window's value")
      loss:value(p)
      assert.is_table(loss:stats())
    end)
  end)
end

describe("the loss interface's statement", function()
  it("names what a loss lacks", function()
    H.has(interface.missing({ free = {} }), "it lacks log, times, t0, value()", "window()", "salta.loss_interface")
    H.has(H.err_of(salta.fit, { loss = { free = { "k" } } }), "salta.fit: loss must be a salta.lsq loss",
      "it lacks log")
  end)
end)
