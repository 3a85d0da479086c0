-- model:to_modelica, then salta.load_modelica: the same trajectory and the
-- same gradient (within 1e-12) on every shipped model with its default
-- options, the seed paper's specs, a model with modes (if-expressions on
-- states and time, noEvent, an event firing both ways) and the imported
-- filter itself.
local salta = require("salta")
local H = require("helpers")

local function round_trip(m)
  local path = os.tmpname() .. ".bmo"
  m:to_modelica(path)
  local ok, m2 = pcall(salta.load_modelica, path)
  local text = H.read_file(path)
  os.remove(path)
  assert(ok, tostring(m2) .. "\n" .. text:sub(1, 2000))
  return m2, text
end

local function close(a, b, what)
  assert(math.abs(a - b) <= 1e-12 * math.max(1, math.abs(a)),
    ("%s: %.17g before the round trip, %.17g after"):format(what, a, b))
end

-- The trajectories agree on every output, state and algebraic, and on
-- the events.
local function same_trajectory(m, m2, opts)
  local t1, t2 = m:simulate(opts), m2:simulate(opts)
  assert.are.equal(#t1.t, #t2.t)
  for _, n in ipairs(m.outputs) do
    for k = 1, #t1.t do close(t1.y[n][k], t2.y[n][k], ("output %s at t = %g"):format(n, t1.t[k])) end
  end
  for _, set in ipairs({ "x", "z" }) do
    for n, col in pairs(t1[set]) do
      local other = t2[set][n] or t2.y[n]
      if not n:match("^_") and other then
        for k = 1, #t1.t do close(col[k], other[k], ("%s at t = %g"):format(n, t1.t[k])) end
      end
    end
  end
  local e1, e2 = t1:events(), t2:events()
  assert.are.equal(#e1, #e2)
  for k = 1, #e1 do
    assert.are.equal(e1[k].name, e2[k].name)
    close(e1[k].t, e2[k].t, "event " .. e1[k].name)
  end
  return t1
end

-- The loss on the model's own outputs (scaled), every parameter free.
local function same_gradient(m, m2, tr, opts)
  local free, p = {}, {}
  for i, n in ipairs(m.params) do free[i], p[i] = n, m.p0[n] * 1.01 + (m.p0[n] == 0 and 1e-3 or 0) end
  local data = {}
  for _, n in ipairs(m.outputs) do
    data[n] = {}
    for k, v in ipairs(tr.y[n]) do data[n][k] = 1.1 * v end
  end
  local function grad(model)
    local loss = salta.lsq{ model = model, times = tr.t, data = data, free = free, t0 = opts.t0, rtol = 1e-8 }
    return loss:grad(p)
  end
  local g1, g2 = grad(m), grad(m2)
  for i, n in ipairs(free) do close(g1[i], g2[i], "d L / d " .. n) end
end

local CASES = {
  { "bouncing_balls", { tf = 3 } }, { "cauer", { tf = 10 } }, { "cauer_ladder", { tf = 5 } },
  { "pendulum", { tf = 2 } }, { "rc_network", { tf = 3 } }, { "rectifier", { tf = 0.05 } },
  { "spring_latch", { tf = 5 } }, { "thermostat", { t0 = 1, tf = 30 } },
}

describe("to_modelica and load_modelica: the round trip", function()
  for _, c in ipairs(CASES) do
    it("keeps models/" .. c[1] .. ".lua's trajectory and gradient", function()
      local m = H.model(c[1])
      local m2 = round_trip(m)
      local tr = same_trajectory(m, m2, c[2])
      same_gradient(m, m2, tr, c[2])
    end)
  end

  for _, file in ipairs(H.SPECS) do
    it("keeps the spec " .. file .. "'s trajectory and gradient", function()
      local m = H.spec_model(file)
      local m2 = round_trip(m)
      local opts = { tf = file:match("cauer") and 10 or 1.5 }
      local tr = same_trajectory(m, m2, opts)
      same_gradient(m, m2, tr, opts)
    end)
  end

  it("keeps modes, noEvent, an event firing both ways, a terminal event and start values of parameters", function()
    local m = salta.dae{
      name = "modes", states = { { "x", function(p) return 2 * p.a end }, { "y", 0 } },
      discrete = { { "n", 0 }, { "on", true } },
      algebraics = { { "w", 0 } },
      params = { { "a", 0.5 }, { "k", 1.5 }, { "T", 1.2 } },
      f = function(t, x, z, p)
        return { salta.ifelse(salta.gt(x.x, 0.3), -p.k * x.x, -0.2) + salta.ifelse(salta.lt(t, p.T), 0, 0.1),
          z.w * salta.ifelse(x.on, 1, -1) }
      end,
      g = function(t, x, z, p)
        return { z.w - salta.ifelse(salta.noevent(salta.ge(x.x, 0.5)), salta.sin(x.x), salta.max(x.y, 0.1)) }
      end,
      events = {
        { name = "cross", direction = "both", guard = function(t, x) return x.y - 0.4 end,
          reset = function(t, x) return { n = x.n + 1, on = 1 - x.on } end },
        { name = "stop", direction = "up", terminal = true, guard = function(t, x) return x.n - 2.5 end },
      },
    }
    local m2, text = round_trip(m)
    H.has(text, "when 'y' > 0.4 or 'y' < 0.4 then", "'n' = 1.0 + pre('n');", "terminate(\"stop\")",
      "noEvent(", "(if 'x' > 0.3 then 1.0 else 0.0)", "Real 'x'(start = 2.0 * 'a', fixed = true);")
    local tr = same_trajectory(m, m2, { tf = 6 })
    same_gradient(m, m2, tr, { tf = 6 })
  end)

  it("keeps an imported model's (the filter's) trajectory and gradient, and its attributes", function()
    local m = salta.load_modelica("models/modelica/filter.bmo")
    local m2, text = round_trip(m)
    H.has(text, "parameter Real 'l1'(min = 0.0, unit = \"H\") = 0.5", "annotation(experiment(StartTime = 0.0, "
      .. "StopTime = 6.0, Tolerance = 1e-08, Interval = 0.02));")
    assert.are.same(m.experiment, m2.experiment)
    local tr = same_trajectory(m, m2, { tf = 3 })
    same_gradient(m, m2, tr, { tf = 3 })
  end)
end)
