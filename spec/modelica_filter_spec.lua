-- salta.load_modelica on models/modelica/filter.bmo, a connector-level
-- circuit as OpenModelica flattens one: its trajectory against the
-- reduced linear ODE solved in closed form (a matrix exponential, no
-- integrator), and the gradient through the dependent bindings against
-- central differences, every parameter.
local salta = require("salta")
local H = require("helpers")

local FILE = "models/modelica/filter.bmo"

-- The reduced ODE: x = (v1, i1, v2, i2, v3), C1 and C2 in parallel.
--   (C1 + C2) v1' = (Vs - v1) / R1 - i1,   L1 i1' = v1 - v2
--   C3 v2' = i1 - v2 / R2 - i2,             L2 i2' = v2 - v3
--   C4 v3' = i2 - v3 / R3
-- with C1 = c1, C2 = 1 / (2.9 l1), L1 = l1; Vs = V after startTime.
local function reduced(p)
  local C12, L1 = p.c1 + 1 / (2.9 * p.l1), p.l1
  local A = {
    { -1 / (p["R1.R"] * C12), -1 / C12, 0, 0, 0 },
    { 1 / L1, 0, -1 / L1, 0, 0 },
    { 0, 1 / p["C3.C"], -1 / (p["R2.R"] * p["C3.C"]), -1 / p["C3.C"], 0 },
    { 0, 0, 1 / p["L2.L"], 0, -1 / p["L2.L"] },
    { 0, 0, 0, 1 / p["C4.C"], -1 / (p["R3.R"] * p["C4.C"]) },
  }
  local b = { p["V.V"] / (p["R1.R"] * C12), 0, 0, 0, 0 }
  return A, b
end

local function matmul(A, B)
  local n, C = #A, {}
  for i = 1, n do
    C[i] = {}
    for j = 1, n do
      local s = 0
      for k = 1, n do s = s + A[i][k] * B[k][j] end
      C[i][j] = s
    end
  end
  return C
end

-- [[A, b], [0, 0]] exponentiated (scaling and squaring, Taylor to 30
-- terms): its last column is int_0^t e^{A s} ds b, the state after a step.
local function step_response(A, b, t)
  local n = #A + 1
  local M = {}
  for i = 1, n do
    M[i] = {}
    for j = 1, n do M[i][j] = (i < n and j < n and A[i][j] or (i < n and j == n and b[i]) or 0) * t end
  end
  local s = 0
  local norm = 0
  for i = 1, n do for j = 1, n do norm = math.max(norm, math.abs(M[i][j])) end end
  while norm > 0.1 do norm, s = norm / 2, s + 1 end
  for i = 1, n do for j = 1, n do M[i][j] = M[i][j] / 2 ^ s end end
  local E, term = {}, {}
  for i = 1, n do
    E[i], term[i] = {}, {}
    for j = 1, n do E[i][j] = i == j and 1 or 0; term[i][j] = E[i][j] end
  end
  for k = 1, 30 do
    term = matmul(term, M)
    for i = 1, n do for j = 1, n do term[i][j] = term[i][j] / k; E[i][j] = E[i][j] + term[i][j] end end
  end
  for _ = 1, s do E = matmul(E, E) end
  local x = {}
  for i = 1, n - 1 do x[i] = E[i][n] end
  return x
end

local function closed_form(p, t)
  if t < p["V.startTime"] then return { 0, 0, 0, 0, 0 } end
  local A, b = reduced(p)
  return step_response(A, b, t - p["V.startTime"])
end

describe("load_modelica: a connector-level circuit (models/modelica/filter.bmo)", function()
  local m
  setup(function()
    local clock = require("salta.core").clock
    local t = clock()
    m = salta.load_modelica(FILE)
    print(("\n  filter.bmo: 99 equations read and compiled in %.3f s (%s backend)"):format(clock() - t,
      m.compile_info.backend))
  end)

  it("reduces the connector equations: aliases, one dummy derivative, five states", function()
    assert.is_true(#m.structure.aliases >= 30)
    assert.are.same({ "C1.v" }, m.structure.dummies)
    local cont = {}
    for _, n in ipairs(m.states) do if not n:match("^_") then cont[#cont + 1] = n end end
    assert.are.same({ "C2.v", "L1.i", "C3.v", "L2.i", "C4.v" }, cont)
    assert.are.same({ t0 = 0, tf = 6, rtol = 1e-8, interval = 0.02 }, m.experiment)
  end)

  it("follows the reduced ODE's closed form (within 1e-7 at rtol 1e-10)", function()
    local tr = m:simulate{ rtol = 1e-10, atol = 1e-12 }
    assert.are.equal(301, #tr.t)   -- the experiment's interval
    local p = m.p0
    local worst = 0
    for k, t in ipairs(tr.t) do
      local x = closed_form(p, t)
      for i, n in ipairs({ "C1.v", "L1.i", "C3.v", "L2.i", "C4.v" }) do
        local y = tr.y[n][k]
        worst = math.max(worst, math.abs(y - x[i]))
      end
      assert.are.equal(tr.y["C1.v"][k], tr.y["C2.v"][k])
      assert.is_true(math.abs(tr.y["R1.i"][k] - (tr.y["V.v"][k] - tr.y["C1.v"][k]) / p["R1.R"]) < 1e-9)
    end
    assert.is_true(worst < 1e-7, "worst deviation " .. worst)
  end)

  it("keeps the dependent bindings as expressions of the parameters, with their attributes", function()
    assert.are.equal("1 / (2.8999999999999999 * l1)", m.dependent["C2.C"]:gsub("%s+", " "))
    assert.are.equal("l1", m.dependent["L1.L"])
    local names = {}
    for _, n in ipairs(m.params) do names[n] = true end
    assert.is_nil(names["C2.C"])
    assert.is_nil(names["R1.useHeatPort"])   -- Evaluate = true: a constant
    assert.are.same({ min = 0, unit = "H", description = "the first inductance" }, m.param_info.l1)
    assert.are.equal(300, m.param_info["R1.T_ref"].nominal)
  end)

  it("has the gradient through the dependent bindings, every parameter, within 1e-5 of central differences", function()
    local tr = m:simulate{ rtol = 1e-10, atol = 1e-12 }
    local data = {}
    for _, n in ipairs({ "C1.v", "L1.i", "C4.v" }) do
      data[n] = {}
      for k, v in ipairs(tr.y[n]) do data[n][k] = v * 1.05 + 0.01 end
    end
    local free = {}
    for _, n in ipairs(m.params) do free[#free + 1] = n end
    local loss = salta.lsq{ model = m, times = tr.t, data = data, free = free, rtol = 1e-10, atol = 1e-12 }
    local p = {}
    for i, n in ipairs(free) do p[i] = m.p0[n] * 1.02 + (m.p0[n] == 0 and 0.01 or 0) end
    local g = loss:grad(p)
    for i, n in ipairs(free) do
      local h = 1e-5 * math.max(math.abs(p[i]), 1e-2)
      local up, dn = { table.unpack(p) }, { table.unpack(p) }
      up[i], dn[i] = p[i] + h, p[i] - h
      local fd = (loss:value(up) - loss:value(dn)) / (2 * h)
      assert.is_true(math.abs(g[i] - fd) <= 1e-5 * math.max(1e-3, math.abs(fd)) + 1e-9,
        ("d L / d %s: %.10g by sensitivities, %.10g by differences"):format(n, g[i], fd))
    end
  end)

  it("stops at a failing assert, naming its message", function()
    local msg = H.err_of(function() m:simulate{ params = { vmax = 0.3 } } end)
    H.has(msg, "assert failed at t = ", "the load's voltage is above vmax")
  end)
end)
