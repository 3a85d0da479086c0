-- salta.experiments: one loss over several experiments, shared and local
-- parameters, per-point sigma.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

-- x' = -k x + b from x0 = A: k and b shared, the start A local.
local function decay()
  return salta.dae{ name = "decay", states = { { "x", 1 } }, params = { { "k", 0.8 }, { "b", 0.3 } },
    f = function(t, x, z, p) return { -p.k * x.x + p.b } end }
end
local TIMES = H.uniform(4, 40)

local function data_for(m, A, k, b, sigma, gauss)
  local tr = m:simulate{ tf = 4, times = TIMES, params = { k = k, b = b }, x0 = { x = A }, rtol = 1e-12, atol = 1e-14 }
  local x = {}
  for i, v in ipairs(tr.y.x) do x[i] = v + (gauss and sigma * gauss() or 0) end
  return x
end

describe("salta.experiments", function()
  local m = decay()
  local starts = { 1, 2.5, 0.2 }
  local function losses(sigma, gauss, rtol)
    local out = {}
    for i, A in ipairs(starts) do
      out[i] = salta.lsq{ model = m, times = TIMES, data = { x = data_for(m, A, 0.8, 0.3, sigma, gauss) },
        free = { "k", "b", "x0.x" }, x0 = { x = A }, sigma = sigma, rtol = rtol or 1e-10, atol = 1e-12 }
    end
    return out
  end

  it("names local parameters per experiment and sums the losses and gradients exactly", function()
    local Ls = losses(0.05, salta.gaussian(3))
    local E = salta.experiments{ losses = Ls, shared = { "k", "b" }, names = { "a", "b", "c" } }
    assert.are.same({ "k", "b", "x0.x@a", "x0.x@b", "x0.x@c" }, E.free)
    local p = { 0.75, 0.32, 1.1, 2.4, 0.25 }
    local v, g = E:value_and_grad(p)
    local sum, gs = 0, { 0, 0, 0, 0, 0 }
    for i, L in ipairs(Ls) do
      local vi, gi = L:value_and_grad({ p[1], p[2], p[2 + i] })
      sum = sum + vi
      gs[1], gs[2], gs[2 + i] = gs[1] + gi[1], gs[2] + gi[2], gs[2 + i] + gi[3]
    end
    assert.is_near(sum, v, 1e-13 * sum)
    for k = 1, 5 do assert.is_near(gs[k], g[k], 1e-13 * math.abs(gs[k]) + 1e-300) end
    -- residuals and Jacobian rows concatenated: their sum of squares is the
    -- value (of the same runs, without sensitivities: value_and_grad's runs
    -- take other steps)
    local r, J = E:residuals(p), E:jacobian(p)
    local ss = 0
    for _, x in ipairs(r) do ss = ss + x * x end
    assert.is_near(E:value(p), ss, 1e-13 * ss)
    assert.are.equal(#r, #J)
    assert.are.equal(0, J[1][4])   -- experiment a's rows do not see b's start
  end)

  it("gives shared and local parameters gradients that match central differences", function()
    local E = salta.experiments{ losses = losses(0.05, salta.gaussian(5)), shared = { "k", "b" } }
    local tight = salta.experiments{ losses = losses(0.05, salta.gaussian(5), 1e-12), shared = { "k", "b" } }
    local p = { 0.75, 0.32, 1.1, 2.4, 0.25 }
    local g = E:grad(p)
    for k = 1, #p do
      local h = 1e-5 * math.max(1, math.abs(p[k]))
      local up, dn = { table.unpack(p) }, { table.unpack(p) }
      up[k], dn[k] = p[k] + h, p[k] - h
      local fd = (tight:value(up) - tight:value(dn)) / (2 * h)
      assert(math.abs(g[k] - fd) <= 1e-6 * math.abs(fd) + 1e-10, ("dL/d%s = %.12g, differences %.12g"):format(
        E.free[k], g[k], fd))
    end
  end)

  it("fits with salta.fit, and with known sigma its standard errors are calibrated over 20 noise draws", function()
    local truth = { k = 0.8, b = 0.3 }
    local z2, n = 0, 0
    for draw = 1, 20 do
      local E = salta.experiments{ losses = losses(0.05, salta.gaussian(100 + draw)), shared = { "k", "b" } }
      local r = salta.fit{ loss = E, start = { k = 0.6, b = 0.5 }, method = "lm", print_every = 0 }
      local se = assert(r:std_errors())
      for name, t in pairs(truth) do
        z2, n = z2 + ((r.params[name] - t) / se[name]) ^ 2, n + 1
      end
    end
    local rms = math.sqrt(z2 / n)
    assert(rms >= 0.7 and rms <= 1.4, ("rms z-score %.3f over %d estimates"):format(rms, n))
  end)

  it("takes sigma as a number, per output, per point, or from a data column", function()
    local x = data_for(m, 1, 0.8, 0.3)
    local base = { model = m, times = TIMES, free = { "k" }, rtol = 1e-10, atol = 1e-12 }
    local function with(fields)
      local s = {}
      for k, v in pairs(base) do s[k] = v end
      for k, v in pairs(fields) do s[k] = v end
      return salta.lsq(s)
    end
    local plain = with{ data = { x = x } }
    local p = { 0.7 }
    assert.is_near(plain:value(p) / 0.04, with{ data = { x = x }, sigma = 0.2 }:value(p), 1e-12)
    assert.is_near(plain:value(p) / 0.04, with{ data = { x = x }, sigma = { x = 0.2 } }:value(p), 1e-12)
    local col = {}
    for i = 1, #TIMES do col[i] = 0.2 end
    assert.is_near(plain:value(p) / 0.04, with{ data = { x = x }, sigma = { x = col } }:value(p), 1e-12)
    local path = os.tmpname()
    local cols = { t = TIMES, x = x, x_sd = col }
    salta.write_csv(path, { "t", "x", "x_sd" }, cols)
    assert.is_near(plain:value(p) / 0.04, salta.lsq{ model = m, data = path, outputs = { "x" }, free = { "k" },
      sigma = { x = "x_sd" }, rtol = 1e-10, atol = 1e-12 }:value(p), 1e-12)
    os.remove(path)
    has(err_of(with, { data = { x = x }, sigma = -1 }), "sigma", "must be a positive finite number")
    has(err_of(with, { data = { x = x }, sigma = { y = 1 } }), "sigma has no entry for output 'x'")
  end)

  it("refuses what is not a set of losses", function()
    has(err_of(salta.experiments, { losses = {} }), "losses must be a non-empty list")
    has(err_of(salta.experiments, { losses = { {} } }), "losses[1] is not a salta.lsq loss")
    has(err_of(salta.experiments, { losses = losses(0.05), shared = { "q" } }), "shared parameter 'q' is free in no experiment")
  end)
end)
