-- salta.options: the option tables salta's functions take, each option
-- declared once with its type, so that every function checks its table the
-- same way: an unknown key is an error that suggests the nearest valid one
-- ('paramaters': did you mean 'parameters'?), a value of the wrong type an
-- error naming the option and the value.
--
--   options.check("lsq", spec, "salta.lsq", 2)
--
-- The options of a simulation (and of a loss's simulations) are declared
-- in the engine (engine/src/options.c, salta_sim_option_info), which
-- checks them on every run; this file takes them from there, and declares
-- the options only Lua functions take (fit, profiles, plots, ...).

local core = require("salta.core")

local M = {}

-- Every option table, each option once: { key, type, default, range,
-- description }. Types: "number", "integer", "string", "boolean", "table",
-- "function", or several joined by "|"; "any" accepts anything. The
-- default is what the option is when left out, as text for the docs; a
-- range { low, high, low_open, high_open } bounds a numeric option. The
-- checker, salta.help(topic) and doc/options.md (salta.docgen) all read
-- this table.
local INF = math.huge
local POSITIVE, NONNEG, FRACTION = { 0, INF, true }, { 0, INF }, { 0, 1, false, true }

-- A number as the docs write it: 5, 1e-6, 0.999.
local function number_text(v)
  if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return ("%d"):format(v) end
  for digits = 6, 17 do
    local s = ("%." .. digits .. "g"):format(v)
    if tonumber(s) == v then return (s:gsub("e([-+])0*(%d)", "e%1%2"):gsub("e%+", "e")) end
  end
end

local ENGINE_TYPES = { number = "number", integer = "integer", boolean = "boolean", choice = "string" }

-- The default of engine option o in words; defaults: the topic's own words
-- for t0 and tf, which the caller chooses.
local function engine_default(o, defaults)
  if o.interval then return defaults[o.name] end
  if o.default_text then return o.default_text end
  if o.type == "choice" then return '"' .. o.default .. '"' end
  if o.type == "boolean" then return tostring(o.default) end
  return number_text(o.default)
end

-- The engine's options as entries of a topic: "simulate" (a simulation's),
-- or "lsq" (a loss's: a single atol, none that means nothing to a loss).
local function engine_options(scope, defaults)
  local out = {}
  for _, o in ipairs(core.sim_options()) do
    if not (scope == "lsq" and o.sim_only) and not (scope == "simulate" and o.loss_only) then
      local vector = o.per_unknown and scope == "simulate"
      out[#out + 1] = { o.name, ENGINE_TYPES[o.type] .. (vector and "|table" or ""), engine_default(o, defaults),
        o.range, o.help .. (vector and ": a number, or one per state and algebraic" or "") }
    end
  end
  return out
end

-- The range of engine option name (rtol's bounds a twin's rtol too).
local function engine_range(name)
  for _, o in ipairs(core.sim_options()) do
    if o.name == name then return o.range end
  end
end
local RTOL = engine_range("rtol")

-- The entries of lists, in order, as one list.
local function concat(...)
  local out = {}
  for _, list in ipairs({ ... }) do
    for _, o in ipairs(list) do out[#out + 1] = o end
  end
  return out
end

local TOPICS = {
  { "dae", "salta.dae{...}: a model", {
    { "name", "string", '"model"', nil, "the model's name, in messages, the C symbol and the JIT cache key" },
    { "states", "table", "{}", nil, "differential states: {\"x\", \"v\"}, {{\"x\", 1.0}, ...} or {x = 1.0}; a start may be a function of the parameters" },
    { "algebraics", "table", "{}", nil, "algebraic variables, as states (start values are Newton's first guess)" },
    { "discrete", "table", "{}", nil, "discrete variables {{\"on\", true}, {\"count\", 0}}: constant between events, set by resets" },
    { "params", "table", "{}", nil, "parameters with their values, as states; a table may add min, max, nominal and unit: {k = {1.0, min = 0, max = 10, nominal = 2}} (bounds of every fit, the scale of its steps)" },
    { "parameters", "table", "{}", nil, "the same as params" },
    { "inputs", "table", "{}", nil, "input tables by name: {Tout = salta.table{...}}, read as u.Tout(t) (closures' fifth argument)" },
    { "f", "function", "-", nil, "function(t, x, z, p, u) returning the state derivatives (a table by name or in order)" },
    { "g", "function", "-", nil, "function(t, x, z, p, u) returning one residual per algebraic variable (0 = g)" },
    { "h", "function", "states and algebraics", nil, "function(t, x, z, p, u) returning the outputs (a table by name)" },
    { "outputs", "table", "h's keys, sorted", nil, "the output names, in order, when h returns an array" },
    { "events", "table", "{}", nil, "events: {name =, direction =, guard =, reset =, terminal =} each (topic event)" },
    { "start", "table", "{}", nil, "start values by name, overriding those of states and algebraics" },
    { "backend", "string", '"auto"', nil, "JIT compiler: \"auto\" (cc from a warm cache or for small models, else tcc now and cc in the background), \"cc\" or \"tcc\"" },
    { "cache_dir", "string", "$XDG_CACHE_HOME/salta", nil, "where compiled models are cached" },
    { "structural", "boolean", "true", nil, "run the structural compiler: aliases, index reduction, BLT, tearing (false: one Newton on all of g)" },
  } },
  { "event", "an entry of salta.dae's events", {
    { "name", "string", '"event<k>"', nil, "the event's name, in the log and in messages" },
    { "direction", "string", '"both"', nil, "\"down\" (the guard falls through 0), \"up\" (rises through 0) or \"both\"" },
    { "guard", "function", "-", nil, "function(t, x, z, p, u) returning the guard, whose zero crossing fires the event" },
    { "reset", "function", "no reset", nil, "function(t, x, z, p, u) returning the states (and discrete variables) it sets, from the left limits" },
    { "terminal", "boolean", "false", nil, "the run ends at the event's time" },
  } },
  { "event_data", "an entry of salta.lsq's event_data: { <event> = { times = ..., sigma = ... } }", {
    { "times", "table", "-", nil, "the event's measured times in order, its k-th the k-th firing (NaN: a firing not measured); a firing the run does not reach is matched with the run's end" },
    { "sigma", "number|table", "1", nil, "standard deviation of the times: a number, or one per time; residuals (tau - t) / sigma" },
  } },
  { "simulate", "model:simulate{...}", concat(engine_options("simulate", { t0 = "0", tf = "the last of times" }), {
    { "times", "table", "101 times on [t0, tf]", nil, "output times, sorted, inside [t0, tf]" },
    { "params", "table", "the nominal values", nil, "parameter values, an array or a table by name" },
    { "x0", "table", "the start values", nil, "the start state, an array or a table by name (overrides start functions)" },
    { "sens", "table", "none", nil, "sensitivity directions, parameter names and \"x0.<state>\": each event's dtau and the end's dt_end (d/d each, by name)" },
  }) },
  { "lsq", "salta.lsq{...}: a least-squares loss", concat({
    { "model", "table", "-", nil, "the model" },
    { "data", "table|string", "-", nil, "data columns by output name, or a CSV file with a column t or time" },
    { "times", "table", "the data's t column", nil, "target times (with a CSV, must agree with its t column)" },
    { "outputs", "table", "the outputs the data name", nil, "the outputs compared, in order" },
    { "free", "table", "{}", nil, "free parameters by name, and \"x0.<state>\" for start values" },
    { "transform", "string|table", '"none"', nil, "\"log\" to optimise log p (all, or a table by name)" },
    { "weights", "table", "1 each", nil, "a weight per output (by name or in order)" },
    { "sigma", "number|table", "none", nil, "known standard deviations: a number, or per output a number, an array (per time) or a data column; residuals become (y - d) / sigma" },
    { "blend", "number", "0 (off)", NONNEG, "sigmoid blending across events with this sharpness (1/time)" },
    { "params", "table", "the nominal values", nil, "values of the parameters that are not free" },
    { "x0", "table", "the start values", nil, "the start state" },
    { "after_end", "string", '"error"', nil, "targets past a terminal event: \"error\" or \"drop\" (zero residuals)" },
    { "event_data", "table", "none", nil, "measured event times by event name: {off = {1.2, 3.4}} or {off = {times = {...}, sigma = s}}; the k-th time is the k-th firing (topic event_data)" },
    { "robust", "string", '"linear"', nil, "a robust loss for outliers and outputs that jump at events: \"soft_l1\", \"huber\" or \"cauchy\" (scipy's; \"linear\": least squares)" },
    { "robust_scale", "number", "1", POSITIVE, "the robust loss's scale C, in units of the weighted residual (of sigma with sigma): residuals well below C count as in least squares" },
    { "event_window", "boolean|number|table", "false", nil, "drop the data of outputs that jump at an event near it, the windows following the fitted events: true, a width, or a table (topic event_window)" },
  }, engine_options("lsq", { t0 = "min(0, first time)", tf = "the last time (30 blend widths later with blend; with event_data, at least a tenth of the span past the last event time)" })) },
  { "event_window", "salta.lsq's event_window = {...}", {
    { "width", "number", "2 median target spacings", NONNEG, "data within this time of an event at which their output jumps are dropped" },
    { "ramp", "number", "the width", NONNEG, "beyond the width, data are down-weighted over this time (a C2 ramp from 0 to 1; 0: a hard drop, whose motion the gradient does not see)" },
    { "outputs", "table", "every output that jumps", nil, "the outputs windowed (names)" },
    { "events", "table", "every event", nil, "the events windowed (names)" },
  } },
  { "grad", "the options of loss:value, grad, value_and_grad", {
    { "method", "string", '"auto"', nil, "gradient route: \"auto\" (sens or adjoint_cont by the number of free parameters, loss:route()), \"sens\" (forward sensitivities), \"adjoint_cont\" (continuous adjoint), \"adjoint\" (discrete adjoint) or \"fd\" (central differences)" },
    { "mesh", "integer|string", '"steps"', nil, "adjoint: \"steps\" (the integrator's) or K uniform nodes per segment" },
    { "forward", "string", '"consistent"', nil, "adjoint: \"consistent\" (re-solved discrete trajectory) or \"ida\" (the seed paper's)" },
    { "h", "number", "2e-5", { 0, INF, true, true }, "fd: relative step, times max(1, |p|)" },
    { "richardson", "boolean", "true", nil, "fd: one Richardson step (assumes a smooth loss)" },
    { "of", "table", "the loss", nil, "fd: differentiate the value with these options (e.g. the adjoint's discrete loss)" },
  } },
  { "experiments", "salta.experiments{...}: one loss over several", {
    { "losses", "table", "-", nil, "salta.lsq losses, one per experiment" },
    { "names", "table", '"exp1", "exp2", ...', nil, "the experiments' names (local parameters are name@experiment)" },
    { "shared", "table", "{}", nil, "parameters with one value for all experiments; the others are local" },
  } },
  { "noise", "salta.noise{...}: a noise model estimated with the parameters (salta.noise)", {
    { "loss", "table", "-", nil, "a salta.lsq loss without sigma and weights" },
    { "sigma", "table", "-", nil, "per output: a noise parameter's name (sigma = a) or { a =, b = } (sigma = a + b |y|), each a name or a number >= 0" },
    { "start", "table", "1 each", nil, "start values of the noise parameters by name (positive; optimised by their log)" },
  } },
  { "fit", "salta.fit{...}: parameter estimation", {
    { "loss", "table", "-", nil, "a salta.lsq loss, salta.experiments or salta.noise" },
    { "method", "string", '"lm"', nil, "\"lm\" (Levenberg-Marquardt; bounds by MINUIT's transform), \"lbfgsb\" or \"adam\"" },
    { "start", "table", "the nominal values", nil, "start values, an array or a table by name" },
    { "lower", "table", "the model's min, else -inf", nil, "lower bounds, within the model's min (every method; with starts: the sampling box too)" },
    { "upper", "table", "the model's max, else +inf", nil, "upper bounds, within the model's max" },
    { "gradient", "string|table", '"auto"', nil, "gradient route for lbfgsb and adam (topic grad)" },
    { "check", "boolean", "false", nil, "check the fit's gradient route against Richardson differences at the start (loss:check_gradient) and stop when it disagrees" },
    { "horizon", "boolean|table", "false", nil, "continuation on the time horizon: true (stages ending before the 1st, 2nd, 4th, ... event of the run at the start) or increasing end times" },
    { "hold", "number", "1", POSITIVE, "horizon: a stage before the last holds a parameter its data do not determine: no influence, or a relative standard error above this" },
    { "truth", "table", "none", nil, "true values, for the error column of the report" },
    { "misfit_level", "number", "0.999", { 0, 1, true, true }, "sigma known: chi2/dof above this quantile of chi2/dof flags the fit a misfit (salta.goodness)" },
    { "max_iter", "integer", "lm: none, lbfgsb: 200, adam: 500", NONNEG, "iterations (per horizon stage)" },
    { "max_eval", "integer", "lm: 100 (n + 1), lbfgsb: 2 max_iter + 20", { 1, INF }, "loss evaluations" },
    { "tol", "number", "none", NONNEG, "stop when the gradient's 2-norm is below" },
    { "rel_tol", "number", "none", NONNEG, "stop when the loss changes relatively less" },
    { "ftol", "number", "1e-12", NONNEG, "lm: relative reduction of the sum of squares" },
    { "xtol", "number", "1e-12", NONNEG, "lm: relative change of the parameters" },
    { "gtol", "number", "0", NONNEG, "lm: orthogonality of residuals and Jacobian" },
    { "factor", "number", "100", POSITIVE, "lm: initial step bound, times |x|" },
    { "m", "integer", "10", { 1, INF }, "lbfgsb: corrections kept" },
    { "factr", "number", "1e7", NONNEG, "lbfgsb: loss tolerance, in machine epsilons" },
    { "pgtol", "number", "1e-8", NONNEG, "lbfgsb: projected gradient tolerance" },
    { "lr", "number", "1e-2", POSITIVE, "adam: learning rate" },
    { "beta1", "number", "0.9", FRACTION, "adam: first moment decay" },
    { "beta2", "number", "0.999", FRACTION, "adam: second moment decay" },
    { "eps", "number", "1e-8", POSITIVE, "adam: denominator guard" },
    { "best", "integer", "none", { 1, INF }, "adam: keep the best iterate of the last this many" },
    { "print_every", "integer", "10", NONNEG, "progress every this many iterations (0: silent); rank 0 only" },
    { "log", "function", "print", nil, "where progress lines go" },
    { "callback", "function", "none", nil, "callback(iter, p, loss, grad) after each iteration; true stops" },
    { "starts", "integer|table", "none", nil, "multi-start: a count of starts sampled in [lower, upper], or a list" },
    { "sampling", "string", '"latin"', nil, "multi-start: \"latin\", \"sobol\" or \"uniform\"" },
    { "seed", "integer", "1", nil, "multi-start: seed of latin and uniform sampling" },
    { "start_time", "number", "none", POSITIVE, "multi-start: seconds per start; a start past it stops at its last iterate (checked between evaluations)" },
    { "start_evals", "integer", "none", { 1, INF }, "multi-start: loss evaluations per start (a Jacobian goes with its residuals)" },
  } },
  { "profile", "fit:profile(name, opts): a profile likelihood (salta.profile)", {
    { "level", "number", "0.95", { 0, 1, true, true }, "confidence level of the interval (chi2 quantile with sigma known; t-based with sigma estimated)" },
    { "step", "number", "0.5", POSITIVE, "the walk's first step, in standard errors; halved where chi2 rises by more than half the threshold's height, grown where by less than a tenth" },
    { "max_steps", "integer", "60", { 1, INF }, "re-fits per side of the walk, at most" },
    { "beyond", "number", "1", NONNEG, "the walk goes on past the threshold by this many threshold heights (for the plot)" },
    { "xtol", "number", "1e-3", POSITIVE, "the interval's ends by bisection to this many standard errors" },
    { "range", "table", "none: the walk", nil, "a fixed grid over { lo, hi }, lo < hi, instead of the walk" },
    { "span", "number", "none: the walk", { 0, INF, true, true }, "a fixed grid over estimate -+ span |estimate| (not with range)" },
    { "points", "integer", "11", { 3, INF }, "the fixed grid's values, evenly spaced (with range or span)" },
    { "method", "string", "the fit's", nil, "optimiser of the re-fits, as in salta.fit" },
    { "print_every", "integer", "0", NONNEG, "re-fits' progress every this many iterations (0: silent)" },
  } },
  { "table", "salta.table{...}: an input table", {
    { "t", "table|string", "-", nil, "the points' arguments, increasing (with csv: a column's name)" },
    { "v", "table|string", "-", nil, "the values at the points (with csv: a column's name)" },
    { "interp", "string", '"linear"', nil, "\"linear\", \"step\" (the last point's value at or before the argument) or \"cubic\" (a natural spline)" },
    { "csv", "string", "none", nil, "a CSV file holding the columns t and v name" },
    { "name", "string", "with csv: v's column", nil, "the input's name in messages" },
    { "extrapolate", "string", '"none"', nil, "\"none\" (outside the points is an error) or \"hold\" (the last value holds after the last point; step and linear)" },
  } },
  { "plot", "salta.plot.trajectory(path, tr, opts)", {
    { "outputs", "table", "every output", nil, "the outputs drawn" },
    { "data", "table", "none", nil, "data points: {t = times, name = values, ...}" },
    { "units", "table", "none", nil, "units by output {w = \"rad/s\", i = \"A\"}: outputs of one unit share a panel; without, one panel per output" },
    { "title", "string", "model '<name>'", nil, "the figure's title" },
    { "size", "table", "{900, 540} (one panel), {900, 180 + 240 panels}", nil, "width and height in pixels" },
  } },
  { "plot_fit", "fit:plot(path, opts)", {
    { "outputs", "table", "every output of the loss", nil, "the outputs drawn" },
    { "units", "table", "none", nil, "units by output: outputs of one unit share a panel (and its residual panel); without, one per output" },
    { "title", "string", "the model and the loss", nil, "the figure's title" },
    { "size", "table", "{900, 360 + 360 panels}", nil, "width and height in pixels" },
  } },
  { "plot_series", "salta.plot.series(path, list, opts)", {
    { "title", "string", "none", nil, "the figure's title" },
    { "xlabel", "string", "none", nil, "the x axis' label" },
    { "ylabel", "string", "none", nil, "the y axis' label" },
    { "logy", "boolean", "false", nil, "a logarithmic y axis" },
    { "yrange", "table", "the data's", nil, "the y axis' range { lo, hi } (points outside are clipped)" },
    { "vlines", "table", "none", nil, "x values marked by dashed vertical lines (e.g. event times)" },
    { "size", "table", "{900, 540}", nil, "width and height in pixels" },
  } },
  { "check_gradient", "loss:check_gradient(opts)", {
    { "at", "table", "the loss's nominal values", nil, "the free values to check at (an array, or a table by name)" },
    { "h", "number", "1e-4", POSITIVE, "relative difference step: h |p|, with the nominal value as the floor; not given, a reference more uncertain than tol is retried at h / 10 and h / 100" },
    { "rtol_ref", "number", "rtol / 1000 in [1e-13, 1e-10]", RTOL, "the reference differences' tolerance" },
    { "tol", "number", "max(1000 rtol, 1e-8)", POSITIVE, "a route agrees within tol of the largest component (plus 10 times the reference's error estimate; fd: at least rtol / h)" },
    { "routes", "table", "all", nil, "the routes compared: \"sens\", \"sens, erk\", \"sens, bdf\", \"adjoint\", \"adjoint, erk\", \"adjoint, bdf\", \"adjoint_cont\", \"fd\"" },
    { "progress", "boolean|function", "false", nil, "a line as the reference and each route end, with its time: true prints it, a function is called with it" },
  } },
  { "waterfall", "fit:waterfall(path, opts)", {
    { "title", "string", '"multi-start: <n> starts"', nil, "the figure's title" },
    { "size", "table", "{900, 540}", nil, "width and height in pixels" },
  } },
  { "series", "an entry of salta.plot.series' list", {
    { "name", "string|number", '"series <k>"', nil, "the legend's entry" },
    { "x", "table", "-", nil, "the abscissae (numbers)" },
    { "y", "table", "-", nil, "the ordinates, one per x (a point not finite is left out)" },
    { "points", "boolean", "false", nil, "draw points instead of a line" },
    { "color", "integer", "the entry's index", { 1, INF }, "an index into salta.plot.COLORS" },
  } },
  { "load_spec", "salta.load_spec(path, opts)", {
    { "name", "string", "the file's name", nil, "the model's name" },
    { "backend", "string", '"auto"', nil, "as in salta.dae" },
    { "cache_dir", "string", "$XDG_CACHE_HOME/salta", nil, "as in salta.dae" },
    { "structural", "boolean", "true", nil, "as in salta.dae" },
  } },
}
M.TOPICS = TOPICS

-- name -> { key -> type } and name -> { key -> range }, from TOPICS; an
-- option declared twice in a topic (here and in the engine, say) is an
-- error.
local TABLES, RANGES = {}, {}
for _, topic in ipairs(TOPICS) do
  local types, ranges = {}, {}
  for _, o in ipairs(topic[3]) do
    assert(not types[o[1]], ("salta.options: topic %s declares option '%s' twice"):format(topic[1], o[1]))
    types[o[1]] = o[2]
    if o[4] then ranges[o[1]] = o[4] end
  end
  TABLES[topic[1]], RANGES[topic[1]] = types, ranges
end
M.TABLES, M.RANGES = TABLES, RANGES

-- engine_values(tbl): the engine's options that tbl gives (t0 and tf
-- left to the caller), as model:simulate and salta.lsq pass them to
-- salta.core, which reads every declared option by name.
function M.engine_values(tbl)
  local out = {}
  for _, o in ipairs(core.sim_options()) do
    if not o.interval then out[o.name] = tbl[o.name] end
  end
  return out
end

local function in_range(v, r)
  if v ~= v then return false end
  if r[3] and not (v > r[1]) or not r[3] and not (v >= r[1]) then return false end
  if r[4] and not (v < r[2]) or not r[4] and not (v <= r[2]) then return false end
  return true
end

-- What a value of range r (of an option of types) must be: ">= 0", "an
-- integer from 1 to 5", ... (the engine's words for its own options).
local function describe_range(r, types)
  if types == "integer" and r[1] > -INF and r[2] < INF then
    return ("an integer from %s to %s"):format(number_text(r[1]), number_text(r[2]))
  end
  local lo = r[1] == -INF and "" or ((r[3] and "> " or ">= ") .. number_text(r[1]))
  local hi = r[2] == INF and "" or ((r[4] and "< " or "<= ") .. number_text(r[2]))
  if lo ~= "" and hi ~= "" then return lo .. " and " .. hi end
  if lo == "" and hi == "" then return "finite" end
  return lo .. hi
end

-- Optimal string alignment distance (Levenshtein with transpositions).
local function distance(a, b)
  local d = {}
  for i = 0, #a do d[i] = { [0] = i } end
  for j = 0, #b do d[0][j] = j end
  for i = 1, #a do
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      d[i][j] = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and a:sub(i, i) == b:sub(j - 1, j - 1) and a:sub(i - 1, i - 1) == b:sub(j, j) then
        d[i][j] = math.min(d[i][j], d[i - 2][j - 2] + 1)
      end
    end
  end
  return d[#a][#b]
end

-- The valid key nearest to key, when it is near enough to be a typo.
function M.nearest(key, keys)
  local best, best_d
  for _, k in ipairs(keys) do
    local dist = distance(key, k)
    if not best_d or dist < best_d or (dist == best_d and k < best) then best, best_d = k, dist end
  end
  if best and best_d <= math.max(2, #key // 3) then return best end
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

local function type_ok(v, types)
  if types == "any" then return true end
  for ty in types:gmatch("[^|]+") do
    if ty == "integer" then
      if math.type(v) == "integer" or (type(v) == "number" and v == math.floor(v) and v == v) then return true end
    elseif type(v) == ty then
      return true
    end
  end
  return false
end

local ARTICLE = { number = "a number", integer = "an integer", string = "a string", boolean = "a boolean",
  table = "a table", ["function"] = "a function" }

local function describe_types(types)
  local out = {}
  for ty in types:gmatch("[^|]+") do out[#out + 1] = ARTICLE[ty] or ty end
  return table.concat(out, " or ")
end

local function describe_value(v)
  if type(v) == "string" then return ("the string '%s'"):format(v) end
  if type(v) == "number" then return tostring(v) end
  return "a " .. type(v)
end

-- check(name, tbl, caller): raises for an unknown key or a value of the
-- wrong type in the option table tbl; messages start with caller (the
-- function's name, and the model's) and carry no internal file position.
function M.check(name, tbl, caller)
  local spec = assert(TABLES[name], "salta.options: no option table " .. tostring(name))
  local level = 0
  if type(tbl) ~= "table" then
    error(("%s: expected a table of options, got %s"):format(caller, describe_value(tbl)), level)
  end
  for k, v in pairs(tbl) do
    local types = spec[k]
    if not types then
      local near = type(k) == "string" and M.nearest(k, sorted_keys(spec))
      error(("%s: unknown option '%s'%s"):format(caller, tostring(k),
        near and (" (did you mean '" .. near .. "'?)") or (" (options: " .. table.concat(sorted_keys(spec), ", ") .. ")")),
        level)
    end
    if not type_ok(v, types) then
      error(("%s: option '%s' must be %s, got %s"):format(caller, k, describe_types(types), describe_value(v)), level)
    end
    local r = RANGES[name] and RANGES[name][k]
    if r and type(v) == "number" and not in_range(v, r) then
      error(("%s: option '%s' must be %s, got %s"):format(caller, k, describe_range(r, types), tostring(v)), level)
    end
  end
  return tbl
end

-- The options of one topic as text (salta.help(topic)), or nil.
function M.describe(topic)
  for _, t in ipairs(TOPICS) do
    if t[1] == topic then
      local lines = { ("%s: %s"):format(t[1], t[2]) }
      for _, o in ipairs(t[3]) do
        lines[#lines + 1] = ("  %-14s %-14s default %s"):format(o[1], o[2], o[3])
        lines[#lines + 1] = ("  %-14s %s%s"):format("", o[5], o[4] and (" (" .. describe_range(o[4], o[2]) .. ")") or "")
      end
      return table.concat(lines, "\n")
    end
  end
end

function M.topics()
  local out = {}
  for _, t in ipairs(TOPICS) do out[#out + 1] = t[1] end
  return out
end

-- doc/options.md: every option table as Markdown (generated: make doc).
function M.markdown()
  local out = { "# salta options", "",
    "Generated by `make doc` from the engine's option declarations (`engine/src/options.c`: a simulation's",
    "options and a loss's) and `lua/salta/options.lua` (the others); `spec/doc_spec.lua` fails when this",
    "file is stale.",
    "Every function checks its option table against these declarations: an unknown key is an error that",
    "suggests the nearest valid one, a value of the wrong type or out of range an error naming it.",
    "`salta.help(\"<topic>\")` prints a topic in the REPL.", "" }
  for _, t in ipairs(TOPICS) do
    out[#out + 1] = ("## %s"):format(t[1])
    out[#out + 1] = ""
    out[#out + 1] = t[2]
    out[#out + 1] = ""
    out[#out + 1] = "| option | type | default | description |"
    out[#out + 1] = "|---|---|---|---|"
    for _, o in ipairs(t[3]) do
      local desc = o[5] .. (o[4] and (" (" .. describe_range(o[4], o[2]) .. ")") or "")
      out[#out + 1] = ("| `%s` | %s | %s | %s |"):format(o[1], o[2]:gsub("|", " or "), o[3]:gsub("|", "\\|"),
        desc:gsub("|", "\\|"))
    end
    out[#out + 1] = ""
  end
  return table.concat(out, "\n")
end

return M
