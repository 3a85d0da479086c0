-- The distributions behind confidence levels and the misfit test, against
-- independent references: values from mpmath at 30 digits (findroot on
-- its gammainc, betainc and erfinv), and the closed forms for chi^2 with
-- 2 degrees of freedom and t with 1 and 2.
local stats = require("salta.stats")
local H = require("spec.helpers")

local function rel(ref, v, tol)
  assert(math.abs(v - ref) <= tol * math.abs(ref), ("%.17g, expected %.17g"):format(v, ref))
end

describe("salta.stats", function()
  it("chi^2 quantiles match mpmath's", function()
    local cases = { { 0.95, 1, 3.8414588206941245 }, { 0.99, 1, 6.6348966010212136 }, { 0.68, 1, 0.98894648147802327 },
      { 0.5, 3, 2.3659738843753383 }, { 0.95, 10, 18.307038053275144 }, { 0.999, 100, 149.44925277903871 },
      { 0.05, 5, 1.1454762260617693 }, { 0.999, 3000, 3245.0788307025241 }, { 0.9, 50, 63.16712100572632 },
      { 0.999, 1, 10.827566170662731 } }
    for _, c in ipairs(cases) do rel(c[3], stats.chi2_quantile(c[1], c[2]), 1e-13) end
    for _, p in ipairs({ 0.1, 0.5, 0.9, 0.999 }) do rel(-2 * math.log(1 - p), stats.chi2_quantile(p, 2), 1e-13) end
  end)

  it("t quantiles match mpmath's and the closed forms", function()
    local cases = { { 0.975, 3, 3.1824463052837084 }, { 0.975, 10, 2.2281388519862742 }, { 0.995, 5, 4.0321429835552272 },
      { 0.975, 30, 2.0422724563012379 }, { 0.8, 7, 0.89602964431376513 }, { 0.9995, 4, 8.6103015813795228 } }
    for _, c in ipairs(cases) do rel(c[3], stats.t_quantile(c[1], c[2]), 1e-13) end
    for _, p in ipairs({ 0.6, 0.9, 0.975, 0.999 }) do
      rel(math.tan(math.pi * (p - 0.5)), stats.t_quantile(p, 1), 1e-13)
      rel((2 * p - 1) / math.sqrt(2 * p * (1 - p)), stats.t_quantile(p, 2), 1e-13)
    end
    rel(-stats.t_quantile(0.9, 6), stats.t_quantile(0.1, 6), 1e-15)
  end)

  it("normal quantiles match mpmath's, and t tends to them", function()
    local cases = { { 0.975, 1.9599639845400539 }, { 0.995, 2.5758293035489005 }, { 0.999, 3.0902323061678133 },
      { 0.84, 0.99445788320975304 }, { 0.6, 0.25334710313579974 }, { 1e-10, -6.3613409024040562 } }
    for _, c in ipairs(cases) do rel(c[2], stats.normal_quantile(c[1]), 1e-13) end
    rel(stats.normal_quantile(0.975), stats.t_quantile(0.975, 1e7), 1e-6)
    rel(stats.normal_quantile(0.975) ^ 2, stats.chi2_quantile(0.95, 1), 1e-13)
  end)

  it("names a bad probability or degrees of freedom", function()
    H.has(H.err_of(stats.chi2_quantile, 1.5, 1), "chi2_quantile: the probability must be in (0, 1), got 1.5")
    H.has(H.err_of(stats.t_quantile, 0.9, 0), "t_quantile: the degrees of freedom must be a positive number, got 0")
  end)
end)
