-- salta.stats: the distributions a fit's uncertainty needs, to double
-- precision: the normal, chi^2 and Student t distributions' cdf and
-- quantiles, from the regularized incomplete gamma and beta functions.
--
--   stats.chi2_quantile(0.95, 1)   3.841458820694124
--   stats.t_quantile(0.975, 10)    2.228138851986274
--   stats.normal_quantile(0.975)   1.959963984540054
--
-- The incomplete gamma is its power series below a + 1 and its continued
-- fraction (modified Lentz) above; the incomplete beta its continued
-- fraction on the side where it converges. Quantiles invert the cdf by
-- Newton steps kept inside a bracket that bisection narrows whenever a
-- step would leave it, so they reach the cdf's own accuracy.

local M = {}

local EPS, TINY = 1e-16, 1e-300

-- log Gamma(x), x > 0 (Lanczos, g = 7, nine terms: relative error ~1e-15).
local LANCZOS = { 0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
  -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7 }
local function lgamma(x)
  if x < 0.5 then return math.log(math.pi / math.abs(math.sin(math.pi * x))) - lgamma(1 - x) end
  x = x - 1
  local s, t = LANCZOS[1], x + 7.5
  for i = 2, 9 do s = s + LANCZOS[i] / (x + i - 1) end
  return 0.5 * math.log(2 * math.pi) + (x + 0.5) * math.log(t) - t + math.log(s)
end
M.lgamma = lgamma

-- P(a, x) by its series: valid for x < a + 1.
local function gamma_series(a, x)
  local term, sum, n = 1 / a, 1 / a, a
  for _ = 1, 10000 do
    n = n + 1
    term = term * x / n
    sum = sum + term
    if math.abs(term) < math.abs(sum) * EPS then break end
  end
  return sum * math.exp(-x + a * math.log(x) - lgamma(a))
end

-- Q(a, x) = 1 - P(a, x) by its continued fraction: valid for x >= a + 1.
local function gamma_fraction(a, x)
  local b = x + 1 - a
  local c, d = 1 / TINY, 1 / b
  local h = d
  for i = 1, 10000 do
    local an = -i * (i - a)
    b = b + 2
    d = an * d + b
    if math.abs(d) < TINY then d = TINY end
    c = b + an / c
    if math.abs(c) < TINY then c = TINY end
    d = 1 / d
    local delta = d * c
    h = h * delta
    if math.abs(delta - 1) < EPS then break end
  end
  return math.exp(-x + a * math.log(x) - lgamma(a)) * h
end

-- gamma_p(a, x), gamma_q(a, x): the regularized incomplete gamma
-- functions P and Q = 1 - P, each computed directly where it is small.
function M.gamma_p(a, x)
  if x <= 0 then return 0 end
  if x < a + 1 then return gamma_series(a, x) end
  return 1 - gamma_fraction(a, x)
end

function M.gamma_q(a, x)
  if x <= 0 then return 1 end
  if x < a + 1 then return 1 - gamma_series(a, x) end
  return gamma_fraction(a, x)
end

-- The continued fraction of I_x(a, b) (converges for x < (a + 1) / (a + b + 2)).
local function beta_fraction(a, b, x)
  local qab, qap, qam = a + b, a + 1, a - 1
  local c, d = 1, 1 - qab * x / qap
  if math.abs(d) < TINY then d = TINY end
  d = 1 / d
  local h = d
  for m = 1, 10000 do
    local m2 = 2 * m
    local aa = m * (b - m) * x / ((qam + m2) * (a + m2))
    d = 1 + aa * d
    if math.abs(d) < TINY then d = TINY end
    c = 1 + aa / c
    if math.abs(c) < TINY then c = TINY end
    d = 1 / d
    h = h * d * c
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
    d = 1 + aa * d
    if math.abs(d) < TINY then d = TINY end
    c = 1 + aa / c
    if math.abs(c) < TINY then c = TINY end
    d = 1 / d
    local delta = d * c
    h = h * delta
    if math.abs(delta - 1) < EPS then break end
  end
  return h
end

-- beta_inc(a, b, x): the regularized incomplete beta function I_x(a, b).
function M.beta_inc(a, b, x)
  if x <= 0 then return 0 end
  if x >= 1 then return 1 end
  local front = math.exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * math.log(x) + b * math.log(1 - x))
  if x < (a + 1) / (a + b + 2) then return front * beta_fraction(a, b, x) / a end
  return 1 - front * beta_fraction(b, a, 1 - x) / b
end

-- The standard normal distribution.
function M.normal_cdf(z)
  local q = 0.5 * M.gamma_q(0.5, z * z / 2)   -- erfc(|z| / sqrt 2) / 2
  return z >= 0 and 1 - q or q
end

local function normal_pdf(z) return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) end

-- The chi^2 distribution with k degrees of freedom.
function M.chi2_cdf(x, k) return M.gamma_p(k / 2, x / 2) end

local function chi2_pdf(x, k)
  if x <= 0 then return 0 end
  return math.exp((k / 2 - 1) * math.log(x) - x / 2 - (k / 2) * math.log(2) - lgamma(k / 2))
end

-- Student's t distribution with nu degrees of freedom.
function M.t_cdf(t, nu)
  local tail = 0.5 * M.beta_inc(nu / 2, 0.5, nu / (nu + t * t))
  return t >= 0 and 1 - tail or tail
end

local function t_pdf(t, nu)
  return math.exp(lgamma((nu + 1) / 2) - lgamma(nu / 2) - 0.5 * math.log(nu * math.pi)
    - (nu + 1) / 2 * math.log(1 + t * t / nu))
end

-- The x with cdf(x) = p, from x0 in the bracket [lo, hi] (hi may be
-- +inf: then doubled until it brackets): Newton steps, bisection when a
-- step leaves the bracket.
local function invert(cdf, pdf, p, x, lo, hi)
  if hi == math.huge then
    hi = math.max(2 * x, 1)
    while cdf(hi) < p do lo, hi = hi, 2 * hi end
  end
  for _ = 1, 200 do
    local f = cdf(x) - p
    if f == 0 then return x end
    if f < 0 then lo = x else hi = x end
    local d = pdf(x)
    local step = d > 0 and x - f / d
    if not step or step <= lo or step >= hi then step = 0.5 * (lo + hi) end
    if math.abs(step - x) <= 4 * EPS * math.abs(step) or hi - lo <= 4 * EPS * math.abs(hi) then return step end
    x = step
  end
  return x
end

local function check_p(p, what)
  if type(p) ~= "number" or not (p > 0 and p < 1) then
    error(("salta.stats: %s: the probability must be in (0, 1), got %s"):format(what, tostring(p)), 3)
  end
end

local function check_dof(k, what)
  if type(k) ~= "number" or not (k > 0) or k == math.huge then
    error(("salta.stats: %s: the degrees of freedom must be a positive number, got %s"):format(what, tostring(k)), 3)
  end
end

-- normal_quantile(p): the z with Phi(z) = p. Start from a logistic-tail
-- guess (Tocher's), then the safeguarded Newton steps.
function M.normal_quantile(p)
  check_p(p, "normal_quantile")
  if p > 0.5 then return -M.normal_quantile(1 - p) end
  local x0 = -math.sqrt(-2 * math.log(p))
  x0 = x0 + (2.515517 + 0.802853 * -x0 + 0.010328 * x0 * x0) / (1 + 1.432788 * -x0 + 0.189269 * x0 * x0
    - 0.001308 * x0 * x0 * x0)
  return invert(M.normal_cdf, normal_pdf, p, math.min(x0, 0), -40, 0)
end

-- chi2_quantile(p, k): the x with P(chi^2_k <= x) = p (Wilson-Hilferty start).
function M.chi2_quantile(p, k)
  check_p(p, "chi2_quantile")
  check_dof(k, "chi2_quantile")
  local z, c = M.normal_quantile(p), 2 / (9 * k)
  local x0 = math.max(k * (1 - c + z * math.sqrt(c)) ^ 3, 1e-3)
  return invert(function(x) return M.chi2_cdf(x, k) end, function(x) return chi2_pdf(x, k) end, p, x0, 0, math.huge)
end

-- t_quantile(p, nu): the t with P(T_nu <= t) = p.
function M.t_quantile(p, nu)
  check_p(p, "t_quantile")
  check_dof(nu, "t_quantile")
  if p < 0.5 then return -M.t_quantile(1 - p, nu) end
  if p == 0.5 then return 0 end
  local x0 = M.normal_quantile(p)
  return invert(function(t) return M.t_cdf(t, nu) end, function(t) return t_pdf(t, nu) end, p, x0, 0, math.huge)
end

return M
