-- salta.options: the option tables salta's functions take, each option
-- declared once with its type, so that every function checks its table the
-- same way: an unknown key is an error that suggests the nearest valid one
-- ('paramaters': did you mean 'parameters'?), a value of the wrong type an
-- error naming the option and the value.
--
--   options.check("lsq", spec, "salta.lsq", 2)

local M = {}

-- name -> { key -> type }. Types: "number", "integer", "string", "boolean",
-- "table", "function", or several joined by "|"; "any" accepts anything.
local TABLES = {
  dae = { name = "string", states = "table", algebraics = "table", params = "table", parameters = "table",
    f = "function", g = "function", h = "function", outputs = "table", events = "table", start = "table",
    discrete = "table", inputs = "table",
    backend = "string", cache_dir = "string" },
  event = { name = "string", direction = "string", guard = "function", reset = "function", terminal = "boolean" },
  simulate = { t0 = "number", tf = "number", times = "table", params = "table", x0 = "table", rtol = "number",
    atol = "number|table", max_events = "integer", record_steps = "boolean", max_step = "number",
    init_step = "number", max_order = "integer", zeno_count = "integer", zeno_window = "number",
    max_steps = "integer", linear_solver = "string", method = "string" },
  lsq = { model = "table", times = "table", data = "table|string", outputs = "table", weights = "table",
    free = "table", transform = "string|table", blend = "number", rtol = "number", atol = "number",
    max_events = "integer", t0 = "number", tf = "number", x0 = "table", params = "table", max_step = "number",
    linear_solver = "string", max_steps = "integer", zeno_count = "integer", zeno_window = "number",
    method = "string", after_end = "string", sigma = "number|table" },
  grad = { method = "string", mesh = "integer|string", forward = "string", h = "number", richardson = "boolean",
    of = "table" },
  experiments = { losses = "table", names = "table", shared = "table" },
  fit = { loss = "table", start = "table", method = "string", lower = "table", upper = "table",
    max_iter = "integer", tol = "number", rel_tol = "number", lr = "number", beta1 = "number", beta2 = "number",
    eps = "number", best = "integer", m = "integer", factr = "number", pgtol = "number", ftol = "number",
    xtol = "number", gtol = "number", max_eval = "integer", print_every = "integer", log = "function",
    callback = "function", truth = "table", factor = "number", horizon = "boolean|table",
    gradient = "string|table", starts = "integer|table", sampling = "string", seed = "integer" },
  load_spec = { name = "string", backend = "string", cache_dir = "string" },
}
M.TABLES = TABLES

-- Ranges of numeric options: { low, high, low_open, high_open }.
local INF = math.huge
local POSITIVE, NONNEG, FRACTION = { 0, INF, true }, { 0, INF }, { 0, 1, false, true }
local RANGES = {
  simulate = { rtol = { 1e-14, 1, false, true }, max_step = NONNEG, init_step = NONNEG, zeno_window = NONNEG,
    t0 = { -INF, INF, true, true }, tf = { -INF, INF, true, true } },
  lsq = { rtol = { 1e-14, 1, false, true }, atol = POSITIVE, blend = NONNEG, max_step = NONNEG,
    zeno_window = NONNEG, t0 = { -INF, INF, true, true }, tf = { -INF, INF, true, true } },
  grad = { h = { 0, INF, true, true } },
  fit = { m = { 1, INF }, max_iter = NONNEG, max_eval = { 1, INF }, lr = POSITIVE, beta1 = FRACTION,
    beta2 = FRACTION, eps = POSITIVE, tol = NONNEG, rel_tol = NONNEG, factr = NONNEG, pgtol = NONNEG,
    ftol = NONNEG, xtol = NONNEG, gtol = NONNEG, factor = POSITIVE, best = { 1, INF }, print_every = NONNEG },
}
M.RANGES = RANGES

local function in_range(v, r)
  if v ~= v then return false end
  if r[3] and not (v > r[1]) or not r[3] and not (v >= r[1]) then return false end
  if r[4] and not (v < r[2]) or not r[4] and not (v <= r[2]) then return false end
  return true
end

local function describe_range(r)
  local lo = r[1] == -INF and "" or ((r[3] and "> " or ">= ") .. tostring(r[1]))
  local hi = r[2] == INF and "" or ((r[4] and "< " or "<= ") .. tostring(r[2]))
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
      error(("%s: option '%s' must be %s, got %s"):format(caller, k, describe_range(r), tostring(v)), level)
    end
  end
  return tbl
end

return M
