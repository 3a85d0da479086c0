-- salta.help_topics: the topics salta.help(name) explains besides the
-- option tables (salta.options): a fit's result and its methods, the
-- goodness of fit and the status, bounds, JSON and `salta compile`. Each
-- is { name, title, lines }; doc/reference.md is generated from them (make
-- doc), so the REPL and the documents say the same.

local M = {}

M.TOPICS = {
  { "Fit", "the result of salta.fit (salta.fit_report)", {
    "fields: params (by name), x (in the order of free), free, loss, method, status, reason, converged, ok,",
    "  iterations, evaluations, total_s, ms_per_iter, start, truth, lower, upper, goodness (topic goodness),",
    "  history {loss, gnorm, ms, params}, stages (horizon), starts and starts_summary (multi-start), options",
    "r:table()                  parameters, start, fitted, std err, error %, status, goodness; print(r) too",
    "r:report()                 the table, 95 % Wald intervals, labelled covariance and correlation (topic report)",
    "r:std_errors()             standard errors by name (nil and why when J'J is singular)",
    "r:covariance()             the covariance matrix, in the order of free (topic covariance)",
    "r:correlation()            the correlation matrix, in the order of free",
    "r:confidence(level)        Wald intervals by name at any level (topic confidence)",
    "r:profile(name, opts)      a profile likelihood (topic profile; salta.help(\"Profile\"))",
    "r:plot(path, opts)         model over data, residuals below, a panel per output (topic plot_fit)",
    "r:to_json(path, extra)     the result as JSON with provenance (topic json)",
    "r:starts_table()           a multi-start's starts by final loss, with seconds and outcome",
    "r:waterfall(path, opts)    a multi-start's final losses by rank (topic waterfall)",
    "r:errors(), r:row(label)   relative errors against truth; a row of salta.compare_fits",
    "r:dof()                    residual degrees of freedom m - n",
  } },
  { "status", "how a fit ended (salta.fit_status)", {
    "r.status is one of",
    "  converged: <reason>                     the optimiser converged and, with sigma known, chi2/dof is plausible",
    "  converged to a misfit: chi2/dof = ...   sigma known and chi2/dof above its misfit_level (0.999) quantile",
    "  not converged: <reason>                 e.g. maximum iterations",
    "  stopped: <what failed>                  an evaluation failed; a horizon stage failed (named); a start limit",
    "followed by 'no goodness of fit: <why>' where it could not be computed (r.goodness_error), horizon stages",
    "that did not converge and, for a multi-start, the starts' tally.",
    "r.reason is the optimiser's own words: MINPACK's 'lmder info N: ...', L-BFGS-B's task ('CONVERGENCE: ...',",
    "'ABNORMAL_TERMINATION_IN_LNSRCH'), or a shared rule ('maximum iterations', 'gradient norm below tol').",
    "r.ok is true only for a converged fit that is not a misfit and has its goodness of fit.",
  } },
  { "goodness", "chi2, reduced chi2, AIC, AICc, BIC (salta.goodness): r.goodness", {
    "m finite data, n free parameters; sigma known: chi2 = sum ((y - d) / sigma)^2, reduced chi2 = chi2 / (m - n),",
    "  -2 log L = chi2 + sum log(2 pi sigma^2), k = n; a misfit when chi2/dof exceeds the misfit_level quantile",
    "sigma unknown: chi2 = SSR, reduced chi2 = SSR / (m - n) = s^2; -2 log L = m (log(2 pi SSR / m) + 1), k = n + 1",
    "noise model (salta.noise): -2 log L = sum (e / sigma)^2 + log(2 pi sigma^2), k = n",
    "AIC = -2 log L + 2 k; AICc = AIC + 2 k (k + 1) / (m - k - 1); BIC = -2 log L + k log m",
    "fields: m, n, dof, chi2, reduced_chi2, absolute, neg2_log_likelihood, k, aic, aicc, bic, misfit, misfit_threshold",
  } },
  { "confidence", "r:confidence(level): Wald intervals", {
    "r:confidence(0.9) -> { name = { lo, hi } }, c: estimate -+ c std err at any level in (0, 1) (default 0.95)",
    "c is the normal (1 + level) / 2 quantile with sigma known (salta.lsq's sigma, a noise model), and Student's t",
    "with m - n degrees of freedom when sigma is estimated from the residuals. Profile-based intervals at any",
    "level: r:profile(name, { level = 0.9 }) (topic profile).",
  } },
  { "covariance", "r:covariance(), r:std_errors(), r:correlation()", {
    "the linearised covariance s^2 (J'J)^-1 in natural units (curve_fit's pcov), J the Jacobian of the",
    "residuals at the fitted values; s^2 = 1 with sigma known, SSR / (m - n) without; a noise model's is the",
    "inverse expected Fisher information. nil and a message when J'J is singular (a parameter the data do not",
    "determine) or m <= n. correlation()[i][j] = cov[i][j] / sqrt(cov[i][i] cov[j][j]).",
  } },
  { "report", "r:report(): the fit's full text report", {
    "r:table() (topic Fit), then 95 % Wald intervals (normal or t, topic confidence), the covariance and the",
    "correlation, each labelled by parameter name; 'no covariance: <why>' when there is none.",
  } },
  { "Profile", "the result of r:profile(name, opts) (salta.profile)", {
    "fields: interval {lo, hi}, bounded {lower, upper} (false: open at a bound or the walk's end), level,",
    "  threshold, chi2_min, values and chi2 (sorted), points (each value, chi2, converged, status, bisection),",
    "  jumps (from, to, rise), descents (value, chi2), end_at_jump {lower, upper}, se (the step unit)",
    "pr:table()   the points with each re-fit's status, the interval and warnings; print(pr) too",
    "pr:plot(path)  chi2 and the threshold, the y axis over the interval's region",
  } },
  { "bounds", "parameter bounds and scales", {
    "declare: salta.dae{ params = { k = { 1.0, min = 0, max = 10, nominal = 2, unit = \"1/s\" } } } or",
    "  params = { { \"k\", 1.0, min = 0 } }; a spec's parameters: { \"name\": \"k\", \"value\": 1, \"min\": 0, ... }",
    "salta.fit's lower and upper narrow them; every method keeps them: L-BFGS-B and Adam natively,",
    "Levenberg-Marquardt by MINUIT's transform (two-sided: v = a + (b - a)(sin u + 1)/2; one-sided:",
    "v = a - 1 + sqrt(u^2 + 1)), with the chain rule on the Jacobian; the covariance is the loss's at the",
    "fitted values. The optimiser moves p / nominal (log p for log parameters), and the difference step of",
    "loss:fd_grad has the nominal as its floor. A start outside the bounds is an error.",
  } },
  { "json", "JSON output (salta.json)", {
    "salta.json.write(path, value)   the whole document or nothing; 17 significant digits, keys sorted,",
    "                                NaN and infinities as null",
    "salta.json.encode(value [, { indent = \"  \" }])   the text",
    "r:to_json(path [, extra])       a fit: params, start, truth, loss, status, reason, converged, ok,",
    "  iterations, evaluations, goodness, std_error, covariance, correlation and confidence_95 by name,",
    "  history.loss, stages, relative_error_percent, provenance { salta_version, written (UTC), experiments",
    "  (model name, c_source_digest, params, param_info; data targets, outputs, digest, sigma; free, rtol,",
    "  atol), fit_options }, and extra's fields",
  } },
  { "compile", "salta compile: a model as standalone C (salta.aot)", {
    "salta compile MODEL.lua|SPEC.json|SPEC.yaml -o OUT.c [--symbol NAME] [key=value ...]",
    "  MODEL.lua returns a model or a function building one; key=value arguments go to that function as a",
    "  table (numbers converted: N=15 gives { N = 15 }); --symbol names the salta_model_def (default",
    "  salta_model_<name>). The C file compiles on its own (cc -c OUT.c) and links with libsalta.",
  } },
}

-- Other names of topics: a method's name finds its topic.
local ALIASES = { correlation = "covariance", std_errors = "covariance", to_json = "json", ["salta.json"] = "json",
  interval = "confidence", aic = "goodness", bic = "goodness", chi2 = "goodness", min = "bounds", max = "bounds",
  nominal = "bounds", aot = "compile", starts_table = "Fit", plot_profile = "Profile" }

-- describe(name): a topic's text, or nil.
function M.describe(name)
  name = ALIASES[name] or name
  for _, t in ipairs(M.TOPICS) do
    if t[1] == name then return ("%s: %s\n  %s"):format(t[1], t[2], table.concat(t[3], "\n  ")) end
  end
end

function M.names()
  local out = {}
  for _, t in ipairs(M.TOPICS) do out[#out + 1] = t[1] end
  return out
end

-- doc/reference.md: every topic as Markdown (generated: make doc).
function M.markdown()
  local out = { "# salta reference: results, goodness, bounds, JSON, compile", "",
    "Generated by `make doc` from `lua/salta/help_topics.lua`; `spec/doc_spec.lua` fails when this file is",
    "stale. `salta.help(\"<topic>\")` prints a topic in the REPL; the option tables are in",
    "[options.md](options.md).", "" }
  for _, t in ipairs(M.TOPICS) do
    out[#out + 1] = ("## %s"):format(t[1])
    out[#out + 1] = ""
    out[#out + 1] = t[2]
    out[#out + 1] = ""
    out[#out + 1] = "```"
    for _, l in ipairs(t[3]) do out[#out + 1] = l end
    out[#out + 1] = "```"
    out[#out + 1] = ""
  end
  return table.concat(out, "\n")
end

return M
