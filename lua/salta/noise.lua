-- salta.noise: a noise model whose parameters are estimated with the
-- model's, under the Gaussian likelihood (as PEtab's noise formulae):
-- each datum of output j has standard deviation
--
--   sigma_i = a_j + b_j |y_i|        (y_i the model's prediction)
--
-- with a_j and b_j numbers or noise parameters (names: estimated,
-- positive, optimised by their log).
--
--   local N = salta.noise{ loss = L, sigma = { x = "s_x", v = { a = "s_v", b = "rel" } },
--     start = { s_x = 0.1, s_v = 0.05, rel = 0.01 } }
--   local r = salta.fit{ loss = N }        -- any method; r.params.s_x ...
--
-- N is a loss of the interface salta.loss_interface over L's free
-- parameters and then the noise parameters. Its residuals are, per datum,
-- r_i = e_i / sigma_i (e_i = y_i - d_i) and rho_i = sqrt(2 log sigma_i + c),
-- so that sum r^2 + rho^2 = -2 log L - m log(2 pi) + m c: Levenberg-
-- Marquardt minimises the likelihood like the others (c = 2 log(1e4 /
-- sigma_0) keeps rho real while sigma stays above 1e-4 of sigma_0, the
-- noise model at its start and the data's mean |d|). Below that floor rho
-- is 0: the loss there is chi2 alone, above the likelihood's and huge (each
-- e_i / sigma_i 1e4 times that at the start), so a trial step there is
-- rejected rather than failing the fit; a result there has no goodness (an
-- error naming the output), so the fit is not ok. Gradients are exact, from L's Jacobian
-- (forward sensitivities). The covariance is the inverse of the expected
-- Fisher information, sum (dy dy' + 2 dsigma dsigma') / sigma^2; the
-- residuals count as in units of known sigma (absolute), so profiles take
-- the likelihood-ratio threshold. L must be a salta.lsq loss without
-- sigma and weights: the noise model replaces them.

local covariance = require("salta.covariance")

local M = {}

local Noise = {}
Noise.__index = Noise
Noise.__name = "salta.Noise"

local function fail(fmt, ...) error(("salta.noise: " .. fmt):format(...), 4) end

-- The noise terms of output n: { a = number | name, b = number | name }.
local function terms(n, s)
  if type(s) == "string" or type(s) == "number" then s = { a = s } end
  if type(s) ~= "table" then fail("sigma of output '%s' must be a name, a number or { a =, b = }, got %s", n, type(s)) end
  for key, v in pairs(s) do
    if key ~= "a" and key ~= "b" then fail("sigma of output '%s' has key '%s' (a noise model is a + b |y|)", n, key) end
    if type(v) ~= "string" and not (type(v) == "number" and v >= 0 and v < math.huge) then
      fail("sigma of output '%s': %s must be a noise parameter's name or a number >= 0, got %s", n, key, tostring(v))
    end
  end
  return { a = s.a or 0, b = s.b or 0 }
end

-- Per residual of L: its output's index j, the datum d and the data count.
local function data_map(L)
  local out, data = {}, {}
  for k = 1, #L.times do
    for j, n in ipairs(L.outputs) do
      local d = L.columns[n][k]
      if d == d then out[#out + 1], data[#data + 1] = j, d end
    end
  end
  return out, data
end

function M.new(spec)
  if type(spec) ~= "table" then fail("expects a table { loss =, sigma =, start = }") end
  require("salta.options").check("noise", spec, "salta.noise")
  local L = spec.loss
  if type(L) ~= "table" or not (L.columns and L.outputs and L.spec) then fail("loss must be a salta.lsq loss") end
  if L.spec.sigma ~= nil or L.spec.weights ~= nil then
    fail("the loss has %s; the noise model replaces it: give the loss without", L.spec.sigma and "sigma" or "weights")
  end
  local self = setmetatable({ base = L, times = L.times, t0 = L.t0, free = {}, log = {}, noise = {}, start = {} },
    Noise)
  for k, n in ipairs(L.free) do self.free[k], self.log[k] = n, L.log[k] end
  self.nmodel = #L.free
  local taken, by_output = {}, {}
  for _, n in ipairs(L.free) do taken[n] = true end
  local sigma = spec.sigma or fail("needs sigma: per output a noise parameter's name or { a =, b = }")
  for j, n in ipairs(L.outputs) do
    by_output[j] = terms(n, sigma[n] or fail("sigma has no entry for output '%s'", n))
    for _, key in ipairs({ "a", "b" }) do
      local v = by_output[j][key]
      if type(v) == "string" and not self.noise[v] then
        if taken[v] then fail("noise parameter '%s' is a free parameter of the loss", v) end
        self.free[#self.free + 1], self.log[#self.log + 1] = v, true
        self.noise[v] = #self.free
        local s0 = (spec.start or {})[v] or 1
        if type(s0) ~= "number" or not (s0 > 0) then fail("start of noise parameter '%s' must be > 0, got %s", v, tostring(s0)) end
        self.start[v] = s0
      end
    end
  end
  for k in pairs(sigma) do
    local known = false
    for _, n in ipairs(L.outputs) do known = known or n == k end
    if not known then fail("sigma names '%s', which is not an output of the loss (%s)", tostring(k),
      table.concat(L.outputs, ", ")) end
  end
  self.terms = by_output
  self.out_of, self.data = data_map(L)
  self.c = 2 * math.log(1e4 / self:sigma0())
  return self
end

-- The noise model's smallest sigma at its start over the data's mean |d|:
-- c's reference.
function Noise:sigma0()
  local mean = {}
  for j = 1, #self.base.outputs do mean[j] = { 0, 0 } end
  for i, j in ipairs(self.out_of) do mean[j][1], mean[j][2] = mean[j][1] + math.abs(self.data[i]), mean[j][2] + 1 end
  local low = math.huge
  for j, t in ipairs(self.terms) do
    local a = type(t.a) == "string" and self.start[t.a] or t.a
    local b = type(t.b) == "string" and self.start[t.b] or t.b
    local s = a + b * mean[j][1] / math.max(mean[j][2], 1)
    if s > 0 then low = math.min(low, s) end
  end
  return low < math.huge and low or 1
end

-- p split into L's point and the noise parameters by name.
function Noise:split(p)
  if type(p) ~= "table" then error("salta.noise: parameters must be an array or a table by name", 3) end
  local by_name = #p == 0 and next(p) ~= nil
  if not by_name and #p ~= #self.free then
    error(("salta.noise: %d parameter values, expected %d (%s)"):format(#p, #self.free, table.concat(self.free, ", ")), 3)
  end
  local pm, q = {}, {}
  for k, n in ipairs(self.free) do
    local v = by_name and p[n] or p[k]
    if v == nil then error(("salta.noise: no value for '%s'"):format(n), 3) end
    if k <= self.nmodel then pm[k] = v else q[n] = v end
  end
  return pm, q
end

local function value_of(q, v) return type(v) == "string" and q[v] or v end

-- Per datum: e, y, sigma; with jac, also de (L's Jacobian row times
-- sqrt N, by L's variables). An error names the output where sigma is not
-- positive.
function Noise:parts(p, jac)
  local pm, q = self:split(p)
  local r = self.base:residuals(pm)
  local J = jac and self.base:jacobian(pm)
  local scale = math.sqrt(#r)
  local out = {}
  for i = 1, #r do
    local j = self.out_of[i]
    local t = self.terms[j]
    local e = r[i] * scale
    local y = self.data[i] + e
    local s = value_of(q, t.a) + value_of(q, t.b) * math.abs(y)
    if not (s > 0) then
      error(("salta.noise: sigma of output '%s' is %g at datum %d (y = %g)"):format(self.base.outputs[j], s, i, y), 0)
    end
    out[i] = { e = e, y = y, s = s, j = j }
    if J then
      local de = {}
      for k = 1, self.nmodel do de[k] = J[i][k] * scale end
      out[i].de = de
    end
  end
  return out, q
end

-- rho = sqrt(2 log sigma + c), 0 below the floor.
function Noise:rho(s)
  local v = 2 * math.log(s) + self.c
  return v > 0 and math.sqrt(v) or 0
end

-- dsigma_i by the optimiser's variables (noise parameters by log).
function Noise:dsigma(pt, q)
  local t, ds = self.terms[pt.j], {}
  local sb, sign = value_of(q, t.b), pt.y >= 0 and 1 or -1
  for k = 1, self.nmodel do ds[k] = sb * sign * pt.de[k] end
  for k = self.nmodel + 1, #self.free do ds[k] = 0 end
  if type(t.a) == "string" then ds[self.noise[t.a]] = ds[self.noise[t.a]] + q[t.a] end
  if type(t.b) == "string" then ds[self.noise[t.b]] = ds[self.noise[t.b]] + q[t.b] * math.abs(pt.y) end
  return ds
end

function Noise:residuals(p)
  local parts = self:parts(p)
  local r, m = {}, #parts
  for i, pt in ipairs(parts) do
    r[i] = pt.e / pt.s
    r[m + i] = self:rho(pt.s)
  end
  return r
end

function Noise:jacobian(p)
  local parts, q = self:parts(p, true)
  local J, m, n = {}, #parts, #self.free
  for i, pt in ipairs(parts) do
    local ds = self:dsigma(pt, q)
    local rho = self:rho(pt.s)
    local a, b = {}, {}
    for k = 1, n do
      a[k] = ((pt.de[k] or 0) - pt.e * ds[k] / pt.s) / pt.s
      b[k] = rho > 0 and ds[k] / (pt.s * rho) or 0
    end
    J[i], J[m + i] = a, b
  end
  return J
end

-- "auto" (salta.fit's default) is sens here
local function check_route(opts)
  if opts and opts.method and opts.method ~= "sens" and opts.method ~= "auto" then
    error(("salta.noise: the likelihood's gradient is by forward sensitivities, not by '%s'"):format(opts.method), 3)
  end
end

function Noise:value(p, opts)
  check_route(opts)
  local v = 0
  for _, x in ipairs(self:residuals(p)) do v = v + x * x end
  return v
end

function Noise:value_and_grad(p, opts)
  check_route(opts)
  local r, J = self:residuals(p), self:jacobian(p)
  local v, g = 0, {}
  for k = 1, #self.free do g[k] = 0 end
  for i, x in ipairs(r) do
    v = v + x * x
    for k = 1, #g do g[k] = g[k] + 2 * x * J[i][k] end
  end
  return v, g
end

function Noise:grad(p, opts) return select(2, self:value_and_grad(p, opts)) end

function Noise:residual_counts()
  local out = {}
  for i = 1, 2 * #self.out_of do out[i] = 1 end
  return out
end

function Noise:absolute() return true end

function Noise:nominal(k)
  if k <= self.nmodel then return self.base:nominal(k) end
  return self.start[self.free[k]]
end

function Noise:attributes(k)
  if k <= self.nmodel then return self.base.attributes and self.base:attributes(k) or {} end
  return {}
end

function Noise:mesh_check() return true end

function Noise:window(t_end)
  local w = setmetatable({}, Noise)
  for key, v in pairs(self) do w[key] = v end
  w.base = self.base:window(t_end)
  w.times = w.base.times
  w.out_of, w.data = data_map(w.base)
  return w
end

function Noise:stats() return self.base:stats() end

-- The expected Fisher information at natural values p: sum over the data
-- of (dy dy' + 2 dsigma dsigma') / sigma^2.
function Noise:fisher(p)
  local parts, q = self:parts(p, true)
  local n, F = #self.free, {}
  for a = 1, n do F[a] = {} for b = 1, n do F[a][b] = 0 end end
  for _, pt in ipairs(parts) do
    local ds = self:dsigma(pt, q)
    for a = 1, n do
      for b = 1, n do
        F[a][b] = F[a][b] + ((pt.de[a] or 0) * (pt.de[b] or 0) + 2 * ds[a] * ds[b]) / (pt.s * pt.s)
      end
    end
  end
  -- the derivatives are by the optimiser's variables: by log p where log
  local pm = self:split(p)
  for a = 1, n do
    local va = a <= self.nmodel and (self.log[a] and pm[a] or 1) or q[self.free[a]]
    for b = 1, n do
      local vb = b <= self.nmodel and (self.log[b] and pm[b] or 1) or q[self.free[b]]
      F[a][b] = F[a][b] / (va * vb)
    end
  end
  return F
end

-- covariance_at(p): the inverse Fisher information (salta.covariance).
function Noise:covariance_at(p)
  local ok, F = pcall(self.fisher, self, p)
  if not ok then return nil, tostring(F) end
  local inv, bad = covariance.spd_inverse(F)
  if not inv then return nil, ("the Fisher information is singular at '%s'"):format(self.free[bad]) end
  return inv
end

-- goodness(p): chi2 of the errors in units of the modelled sigma, -2 log L
-- and the criteria (salta.goodness), k counting the noise parameters.
function Noise:goodness(p)
  local parts = self:parts(p)
  local m, n, chi2, ll = #parts, #self.free, 0, 0
  for i, pt in ipairs(parts) do
    if self:rho(pt.s) == 0 then
      error(("salta.noise: sigma of output '%s' is %g at datum %d (y = %g): below the noise model's floor (1e-4 of "
        .. "its start)"):format(self.base.outputs[pt.j], pt.s, i, pt.y), 0)
    end
    chi2 = chi2 + (pt.e / pt.s) ^ 2
    ll = ll + math.log(2 * math.pi * pt.s * pt.s)
  end
  local g = { m = m, n = n, dof = m - n, chi2 = chi2, reduced_chi2 = m > n and chi2 / (m - n) or nil,
    absolute = true, noise_model = true, neg2_log_likelihood = chi2 + ll, k = n }
  g.aic = g.neg2_log_likelihood + 2 * n
  g.aicc = m - n - 1 > 0 and g.aic + 2 * n * (n + 1) / (m - n - 1) or nil
  g.bic = g.neg2_log_likelihood + n * math.log(m)
  return g
end

function Noise:__tostring()
  return ("salta noise model over %s: free %s"):format(tostring(self.base), table.concat(self.free, ", "))
end

return M
