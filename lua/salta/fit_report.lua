-- salta.fit_report: the result of a fit (salta.fit), a Fit: its fitted
-- values and how it ran, their uncertainty (covariance, standard errors,
-- correlation, Wald intervals, profiles), and reports (text tables, JSON,
-- plots, the comparison of several fits).
--
--   print(r)   r:report()   r:to_json("fit.json")   r:plot("fit.png")
--   r:std_errors()   r:confidence(0.95)   r:profile("k")

local covariance = require("salta.covariance")
local options = require("salta.options")
local json = require("salta.json")
local mpi = require("salta.mpi")
local stats = require("salta.stats")

local M = {}

local Fit = {}
Fit.__index = Fit
Fit.__name = "salta.Fit"

-- new(result): the Fit of a result of salta.fit_run (fitted values in
-- x, by name in params).
function M.new(result)
  local self = setmetatable(result, Fit)
  self.params = {}
  for k, n in ipairs(self.free) do self.params[n] = self.x[k] end
  return self
end

-- profile(name, opts): the profile likelihood of a fitted parameter
-- (salta.profile).
function Fit:profile(name, opts)
  return require("salta.profile").run(self, name, opts)
end

-- starts_table(): every start of a multi-start fit, sorted by final loss.
function Fit:starts_table()
  if not self.starts then return "not a multi-start fit" end
  local lines = { ("%5s %6s %14s %7s %9s %s"):format("rank", "start", "final loss", "iters", "seconds", "outcome") }
  for r, o in ipairs(self.starts) do
    lines[#lines + 1] = ("%5d %6d %14.6e %7d %9.3f %s"):format(r, o.index, o.loss, math.tointeger(o.iterations) or 0,
      o.seconds or 0, o.failed and ("failed: " .. tostring(o.message)) or tostring(o.message))
  end
  lines[#lines + 1] = self.starts_summary
  return table.concat(lines, "\n")
end

-- waterfall(path): the final losses against their rank (log scale), the
-- plateaus showing how many starts reached each minimum. Rank 0 writes.
function Fit:waterfall(path, opts)
  if not self.starts then error("salta.fit: waterfall needs a multi-start fit", 2) end
  if not mpi.is_root() then return end
  local x, y = {}, {}
  for r, o in ipairs(self.starts) do
    if o.loss < math.huge then x[#x + 1], y[#y + 1] = r, o.loss end
  end
  opts = opts or {}
  options.check("waterfall", opts, "fit:waterfall")
  return require("salta.plot").series(path, { { name = "final loss", x = x, y = y, points = true } },
    { title = opts.title or ("multi-start: %d starts"):format(#self.starts), xlabel = "start, by rank",
      ylabel = "final loss", logy = true, size = opts.size })
end

-- covariance(): the linearised covariance of the fitted parameters
-- (salta.covariance), computed once; nil and a message when it has none.
function Fit:covariance()
  if not (self.cov or self.cov_error) then self.cov, self.cov_error = covariance.at(self.lsq, self.x) end
  return self.cov, self.cov_error
end

-- std_errors(): the square roots of the covariance's diagonal, by name.
function Fit:std_errors()
  local cov, err = self:covariance()
  if not cov then return nil, err end
  local out = {}
  for k, n in ipairs(self.free) do out[n] = math.sqrt(cov[k][k]) end
  return out
end

-- correlation(): the correlation matrix of the fitted parameters (nil and
-- a message without a covariance).
function Fit:correlation()
  local cov, err = self:covariance()
  if not cov then return nil, err end
  local out = {}
  for i = 1, #cov do
    out[i] = {}
    for j = 1, #cov do out[i][j] = cov[i][j] / math.sqrt(cov[i][i] * cov[j][j]) end
  end
  return out
end

-- The residual degrees of freedom m - n of the fit.
function Fit:dof()
  if self.goodness then return self.goodness.dof end
  return #self.lsq:residuals(self.x) - #self.free
end

-- confidence(level): Wald intervals estimate -+ c se by name, at any level
-- in (0, 1) (0.95 by default): c the normal quantile with sigma known, the
-- t quantile with m - n degrees of freedom when sigma is estimated (as
-- curve_fit's users compute them); profile-based ones come from
-- fit:profile(name, { level = ... }).
function Fit:confidence(level)
  level = level or 0.95
  if type(level) ~= "number" or not (level > 0 and level < 1) then
    error(("fit:confidence: level must be a number in (0, 1), got %s"):format(tostring(level)), 2)
  end
  local se, err = self:std_errors()
  if not se then return nil, err end
  local c = self.lsq:absolute() and stats.normal_quantile((1 + level) / 2)
    or stats.t_quantile((1 + level) / 2, math.max(self:dof(), 1))
  local out = {}
  for k, n in ipairs(self.free) do out[n] = { self.x[k] - c * se[n], self.x[k] + c * se[n] } end
  return out, c
end

-- A labelled square matrix as text.
local function matrix_text(title, names, m, fmt)
  local w = 12
  for _, n in ipairs(names) do w = math.max(w, #n + 1) end
  local head = { ("%-" .. w .. "s"):format(title) }
  for _, n in ipairs(names) do head[#head + 1] = ("%" .. w .. "s"):format(n) end
  local lines = { table.concat(head) }
  for i, n in ipairs(names) do
    local row = { ("%-" .. w .. "s"):format(n) }
    for j = 1, #names do row[#row + 1] = ("%" .. w .. "s"):format(fmt:format(m[i][j])) end
    lines[#lines + 1] = table.concat(row)
  end
  return table.concat(lines, "\n")
end

-- report(): the table, the 95 % Wald intervals, and the labelled
-- covariance and correlation matrices.
function Fit:report()
  local out = { self:table() }
  local ci, c = self:confidence(0.95)
  if not ci then
    out[#out + 1] = "no covariance: " .. tostring(c)
    return table.concat(out, "\n")
  end
  out[#out + 1] = ("\n95 %% confidence intervals (Wald: estimate -+ %.6g std err, %s; fit:profile(name) for "
    .. "profile-based):"):format(c, self.lsq:absolute() and "normal, sigma known" or
    ("t with %d dof, sigma estimated"):format(self:dof()))
  for _, n in ipairs(self.free) do out[#out + 1] = ("  %-14s [%.8g, %.8g]"):format(n, ci[n][1], ci[n][2]) end
  out[#out + 1] = ""
  out[#out + 1] = matrix_text("covariance", self.free, self:covariance(), "%.4g")
  out[#out + 1] = ""
  out[#out + 1] = matrix_text("correlation", self.free, self:correlation(), "%.4f")
  return table.concat(out, "\n")
end

-- plot(path, opts): the model at the fitted parameters over the data, the
-- residuals below (salta.plot.fit); rank 0 writes.
function Fit:plot(path, opts)
  if not mpi.is_root() then return end
  return require("salta.plot").fit(path, self, opts)
end

-- A relative error in % with d decimals; "-" for none, and a small error
-- keeps its magnitude instead of printing as zero.
local function percent(v, d)
  if v == nil then return "-" end
  if v ~= 0 and math.abs(v) < 10 ^ (1 - d) then return ("%.1e"):format(v) end
  return ("%." .. d .. "f"):format(v)
end

-- "at min" or "at max" for a fitted value on a bound of the fit, else "".
local function at_bound(self, k)
  local v, lo, hi = self.x[k], self.lower and self.lower[k], self.upper and self.upper[k]
  if lo and v <= lo then return "  at min" end
  if hi and v >= hi then return "  at max" end
  return ""
end

-- The final table: parameter, true value (if known), initial, fitted, its
-- standard error and relative error % (a value on a bound marked), the
-- status with iterations and times, and the goodness of fit.
function Fit:table()
  local se = self:std_errors()
  local lines = { ("%-14s %16s %16s %16s %10s %12s"):format("parameter", "true", "initial", "fitted", "std err",
    "error %") }
  for k, n in ipairs(self.free) do
    local truth = self.truth and self.truth[n]
    lines[#lines + 1] = ("%-14s %16s %16.10g %16.10g %10s %12s%s"):format(n,
      truth and ("%.10g"):format(truth) or "-", self.start[k], self.x[k], se and ("%.2e"):format(se[n]) or "-",
      percent(truth and 100 * math.abs(self.x[k] - truth) / math.abs(truth), 6), at_bound(self, k))
  end
  lines[#lines + 1] = ("%s: %s after %d iterations%s (%d evaluations); loss %.6e; %.2f ms/iter; %.3f s"):format(
    self.method, self.status, self.iterations, self.stages and (" over %d horizons"):format(#self.stages) or "",
    self.evaluations, self.loss, self.ms_per_iter, self.total_s)
  for i, st in ipairs(self.stages or {}) do
    if st.held then
      lines[#lines + 1] = ("horizon %d (t <= %g) held, not determined by its data: %s"):format(i, st.t_end,
        require("salta.fit_horizon").held_text(st.held, st.held_rse))
    end
  end
  for _, w in ipairs(self.warnings or {}) do lines[#lines + 1] = "warning: " .. w end
  if self.goodness then lines[#lines + 1] = require("salta.goodness").text(self.goodness) end
  return table.concat(lines, "\n")
end

function Fit:__tostring() return self:table() end

-- Relative errors (%) of the fitted parameters against the truth.
function Fit:errors()
  local out = {}
  for k, n in ipairs(self.free) do
    local t = self.truth and self.truth[n]
    out[n] = t and 100 * math.abs(self.x[k] - t) / math.abs(t) or nil
  end
  return out
end

-- A row for compare(): this fit under a label, with its final loss or a
-- loss given (e.g. an unblended MSE measured apart from the training loss).
function Fit:row(label, loss)
  return { label = label, errors = self:errors(), loss = loss or self.loss, iterations = self.iterations,
    total_s = self.total_s, ms_per_iter = self.ms_per_iter }
end

-- compare(rows, names): a paper-style table, one line per fit: relative
-- error % of each named parameter, final loss, iterations, total seconds,
-- ms per iteration. Rows are Fit:row()s or tables with the same fields
-- (published numbers); a field left out prints as "-".
function M.compare(rows, names)
  local function cell(fmt, v) return v and fmt:format(v) or "-" end
  local head = { ("%-24s"):format("") }
  for _, n in ipairs(names) do head[#head + 1] = ("%11s"):format(n .. " %") end
  head[#head + 1] = ("%12s %7s %9s %9s"):format("final loss", "iters", "total s", "ms/iter")
  local lines = { table.concat(head, " ") }
  for _, r in ipairs(rows) do
    local line = { ("%-24s"):format(r.label) }
    for _, n in ipairs(names) do line[#line + 1] = ("%11s"):format(percent(r.errors and r.errors[n], 4)) end
    line[#line + 1] = ("%12s %7s %9s %9s"):format(cell("%.4e", r.loss), cell("%d", r.iterations),
      cell("%.2f", r.total_s), cell("%.2f", r.ms_per_iter))
    lines[#lines + 1] = table.concat(line, " ")
  end
  return table.concat(lines, "\n")
end

-- to_json(path [, extra]): the fit as JSON (salta.json: 17 digits, keys
-- sorted): parameters, start, truth, loss, status and reason, iterations,
-- goodness (chi2, AIC, BIC), standard errors, covariance, correlation and
-- 95 % intervals by name, the history's losses, the horizon stages, and
-- provenance (salta.provenance: version, time, model and data digests, the
-- fit's options); extra's fields are added as they are.
function Fit:to_json(path, extra)
  local doc = {
    method = self.method, params = self.params, start = {}, truth = self.truth, loss = self.loss,
    iterations = self.iterations, evaluations = self.evaluations, status = self.status, reason = self.reason,
    converged = self.converged, ok = self.ok, goodness = self.goodness, ms_per_iter = self.ms_per_iter, total_s = self.total_s,
    relative_error_percent = self:errors(), history = { loss = self.history.loss }, stages = self.stages,
    warnings = self.warnings,
  }
  doc.std_error, doc.std_error_unavailable = self:std_errors()
  if doc.std_error then   -- labelled: { row = { column = value } }
    local cov, cor = self:covariance(), self:correlation()
    doc.covariance, doc.correlation, doc.confidence_95 = {}, {}, self:confidence(0.95)
    for i, a in ipairs(self.free) do
      doc.covariance[a], doc.correlation[a] = {}, {}
      for j, b in ipairs(self.free) do doc.covariance[a][b], doc.correlation[a][b] = cov[i][j], cor[i][j] end
    end
  end
  for k, n in ipairs(self.free) do doc.start[n] = self.start[k] end
  doc.provenance = require("salta.provenance").of(self)
  for k, v in pairs(extra or {}) do doc[k] = v end
  return json.write(path, doc)
end

return M
