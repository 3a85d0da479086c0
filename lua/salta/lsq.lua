-- salta.lsq: a least-squares loss over a model, target times and data,
-- with exact gradients by forward sensitivities through the events.
--
--   local loss = salta.lsq{ model = m, times = {...}, data = {h = {...}},
--     free = {"g", "e"}, transform = "log", blend = 150, rtol = 1e-8 }
--   loss:value(p [, opts])  loss:grad(p [, opts])  loss:value_and_grad(p [, opts])
--     opts.method = "auto" (default: "sens" or "adjoint_cont", loss:route()) |
--     "sens" | "adjoint_cont" | "adjoint" (mesh = "steps" (default) | K,
--     forward) | "fd" (h)
--   loss:residuals(p [, opts])  loss:predict(p [, opts])  loss:jacobian(p)
--     (opts.method = "adjoint": those of the adjoint's discrete trajectory)
--   loss:window(t_end)   the same loss over the targets at t <= t_end
--   loss:stats()   the last evaluation's run: steps, events, method, ...
--
-- The loss interface salta.fit relies on is stated in salta.loss_interface;
-- this is its reference implementation. This file builds a loss (data,
-- weights, windows, free directions) and its windows; its evaluations are
-- in salta.lsq_routes, what its events do to its outputs in
-- salta.lsq_events.
--
-- L(p) = mean over the finite data entries of (w (y(t_k) - data))^2 (w
-- the output's weight, divided by sigma when given); the residuals are r =
-- w (y - data) / sqrt(N), so that L = sum r^2. p is an array in the order of `free` or a
-- table keyed by name, always in natural units; with transform = "log" the
-- gradient and Jacobian are by log p (what an optimiser in log space needs).
--
-- Outputs that jump at events (loss:jumps(p)) make the loss discontinuous:
-- a datum between a fitted and a measured event time is a large residual
-- that no gradient sees. Two treatments, both in the engine's residuals
-- (engine/src/targets.h) so that every route differentiates them:
--   robust = "soft_l1" | "huber" | "cauchy", robust_scale = C: scipy's
--     robust losses, L = sum C^2 rho((u / C)^2) / N with u = w (y - data);
--     the residuals u sqrt(rho / (u / C)^2) / sqrt(N) square-sum to L;
--   event_window = true | width | { width =, ramp =, outputs =, events = }:
--     data of an output within width of an event at which it jumps are
--     dropped, those within width + ramp down-weighted smoothly; the
--     windows follow the fitted events and the gradient carries that.

local core = require("salta.core")
local data_io = require("salta.data")
local names = require("salta.names")
local index_of = names.index_of
local options = require("salta.options")

local M = {}

local Loss = {}
Loss.__index = Loss
Loss.__name = "salta.Loss"

local function fail(fmt, ...) error(("salta.lsq: " .. fmt):format(...), 3) end

-- Data and times from a table of columns or a CSV file.
local function load_data(spec, model)
  local times, columns = spec.times, spec.data
  if type(columns) == "string" then
    local csv = data_io.read_csv(columns)
    local tname = csv.columns.t and "t" or (csv.columns.time and "time")
    if not tname then fail("%s: no time column (named 't' or 'time')", columns) end
    local col = csv.columns[tname]
    if times then   -- given twice: they must be the same times
      if #times ~= #col then
        fail("times has %d values but %s's column '%s' has %d rows: give one of them", #times, columns, tname, #col)
      end
      for k = 1, #col do
        if type(times[k]) ~= "number" or math.abs(times[k] - col[k]) > 1e-12 * math.max(1, math.abs(col[k])) then
          fail("times[%d] = %s but %s's column '%s' holds %.17g at row %d (line %d): the data would be compared "
            .. "with the model at other times; give one of them", k, tostring(times[k]), columns, tname, col[k], k, k + 1)
        end
      end
    end
    times = times or col
    local cols = {}
    local outs = index_of(model.outputs)
    local sigma_cols = {}
    if type(spec.sigma) == "table" then
      for _, v in pairs(spec.sigma) do if type(v) == "string" then sigma_cols[v] = true end end
    end
    for _, n in ipairs(csv.names) do
      if n ~= tname then
        if not outs[n] and not sigma_cols[n] then
          fail("%s: column '%s' is not an output of model '%s'", columns, n, model.name)
        end
        cols[n] = csv.columns[n]
      end
    end
    columns = cols
  end
  if type(columns) ~= "table" then fail("data must be a table of columns or a CSV path") end
  if type(times) ~= "table" or #times == 0 then fail("times must be a non-empty array") end
  return times, columns
end

-- The per-datum weights 1 / sigma (flat, row per time) from sigma: a
-- number, or per output a number, an array (one per time) or the name of
-- a data column; nil without sigma.
local function sigma_weights(sigma, outputs, times, columns)
  if sigma == nil then return nil end
  local function check(v, what)
    if type(v) ~= "number" or not (v > 0) or v == math.huge then
      fail("sigma %s must be a positive finite number, got %s", what, type(v) == "table" and "a table" or tostring(v))
    end
    return v
  end
  local w = {}
  for j, n in ipairs(outputs) do
    local s = type(sigma) == "number" and sigma or (type(sigma) == "table" and sigma[n])
    if s == nil then fail("sigma has no entry for output '%s'", n) end
    if type(s) == "string" then
      s = columns[s] or fail("sigma for '%s' names column '%s', which the data do not have", n, s)
    end
    if type(s) == "table" and #s ~= #times then
      fail("sigma for output '%s' has %d values, expected %d (one per target time)", n, #s, #times)
    end
    for k = 1, #times do
      local v = s
      if type(s) == "table" then v = s[k] end
      w[(k - 1) * #outputs + j] = 1 / check(v, ("of '%s' at t = %s"):format(n, tostring(times[k])))
    end
  end
  return w
end

-- after_end: what targets past a terminal event's end of the run are:
-- "error" (the default) or "drop" (zero residuals).
-- The run's end: the last target, or with blending 30 blend widths past
-- it, so that an event appearing at the end of the horizon enters the
-- predictions with a weight below 1e-13 instead of jumping in at the last
-- target; that margin stops at the end of an input table read at time t.
local function blended_end(spec, model, last)
  if not ((spec.blend or 0) > 0) then return last end
  local tf = last + 30 / spec.blend
  local show = require("salta.expr").show
  for _, c in ipairs(model.symbolic.input_checks or {}) do
    local t_end = c.table.t[#c.table.t]
    if show(c.arg) == show(c.T) and t_end < tf then tf = math.max(last, t_end) end
  end
  return tf
end

local function after_end(v)
  if v == nil or v == "error" then return false end
  if v == "drop" then return true end
  error(("salta.lsq: after_end must be \"error\" or \"drop\", got %s"):format(tostring(v)), 0)
end

-- The robust loss of spec (robust, robust_scale), given to the engine.
local function robust_loss(spec, loss)
  local kind = spec.robust or "linear"
  local KINDS = { linear = true, soft_l1 = true, huber = true, cauchy = true }
  if not KINDS[kind] then
    error(("salta.lsq: robust must be \"linear\", \"soft_l1\", \"huber\" or \"cauchy\", got %s"):format(
      tostring(kind)), 0)
  end
  if spec.robust_scale and kind == "linear" then
    error("salta.lsq: robust_scale is the scale of a robust loss: give robust = \"soft_l1\", \"huber\" or "
      .. "\"cauchy\" too", 0)
  end
  loss:robust(kind, spec.robust_scale or 1.0)
end

-- The median spacing of the target times (the event windows' unit).
local function spacing(times)
  local d = {}
  for k = 2, #times do
    if times[k] > times[k - 1] then d[#d + 1] = times[k] - times[k - 1] end
  end
  if #d == 0 then return 0 end
  table.sort(d)
  return d[(#d + 1) // 2]
end

M.WINDOW_SAMPLES = 2   -- event_window = true: width and ramp in median target spacings

-- The event windows of spec.event_window: width, ramp and the flags
-- (events x outputs compared) of the outputs that jump structurally
-- (salta.jumps), narrowed to the outputs and events it names; nil when off.
local function event_windows(spec, model, outputs, out_idx, times)
  local ew = spec.event_window
  if ew == nil or ew == false then return nil end
  if ew == true then ew = {} elseif type(ew) == "number" then ew = { width = ew } end
  if type(ew) ~= "table" then
    error(("salta.lsq: event_window must be true, a width or a table { width =, ramp =, outputs =, events = }, "
      .. "got %s"):format(tostring(ew)), 0)
  end
  options.check("event_window", ew, "salta.lsq: event_window")
  local unit = M.WINDOW_SAMPLES * spacing(times)
  local width = ew.width or unit
  local ramp = ew.ramp or (ew.width or unit)
  local pick_out = ew.outputs and index_of(ew.outputs)
  local pick_ev = ew.events and index_of(ew.events)
  for _, n in ipairs(ew.outputs or {}) do
    if not index_of(outputs)[n] then error(("salta.lsq: event_window names output '%s', which the loss does not "
      .. "compare (%s)"):format(tostring(n), table.concat(outputs, ", ")), 0) end
  end
  for _, n in ipairs(ew.events or {}) do
    if not index_of(model.events)[n] then error(("salta.lsq: event_window names event '%s', which model '%s' does "
      .. "not have (%s)"):format(tostring(n), model.name, table.concat(model.events, ", ")), 0) end
  end
  if not (width + ramp > 0) then return nil end   -- windows of no width: none
  local J = require("salta.jumps").structural(model)
  local flags = {}
  for e = 1, #model.events do
    for j, n in ipairs(outputs) do
      flags[(e - 1) * #outputs + j] = J[e][out_idx[j]] and (not pick_out or pick_out[n] ~= nil)
        and (not pick_ev or pick_ev[model.events[e]] ~= nil) or false
    end
  end
  return { width = width, ramp = ramp, flags = flags }
end

-- The same, from a helper of M.new: the error names M.new's caller.
local function fail_new(fmt, ...) error(("salta.lsq: " .. fmt):format(...), 4) end

-- The outputs compared (spec.outputs, or the model's that the data name),
-- their 1-based indices in the model's outputs, and the data flat, row
-- per target time.
local function compared(spec, model, times, columns)
  local outs, outputs = index_of(model.outputs), spec.outputs
  if not outputs then
    outputs = {}
    for _, n in ipairs(model.outputs) do if columns[n] then outputs[#outputs + 1] = n end end
    if #outputs == 0 then fail_new("data names none of the outputs of model '%s'", model.name) end
  end
  local out_idx, flat = {}, {}
  for j, n in ipairs(outputs) do
    out_idx[j] = outs[n] or fail_new("'%s' is not an output of model '%s' (outputs: %s)", tostring(n),
      model.name, table.concat(model.outputs, ", "))
    local col = columns[n] or fail_new("no data for output '%s'", n)
    if type(col) ~= "table" then fail_new("data for '%s' must be an array of numbers, got %s", n, type(col)) end
    if #col ~= #times then fail_new("data for '%s' has %d values, expected %d (one per time)", n, #col, #times) end
    for k = 1, #times do
      if type(col[k]) ~= "number" then
        fail_new("data for '%s' at row %d (t = %s) is %s, not a number (NaN, 0/0, marks a missing value)", n, k,
          tostring(times[k]), type(col[k]) == "string" and ("the string '" .. col[k] .. "'") or tostring(col[k]))
      end
    end
  end
  for k = 1, #times do
    if type(times[k]) ~= "number" then fail_new("times[%d] is %s, not a number", k, tostring(times[k])) end
  end
  for k = 1, #times do
    for j, n in ipairs(outputs) do flat[(k - 1) * #outputs + j] = columns[n][k] end
  end
  return outputs, out_idx, flat
end

-- A weight per output compared, from spec.weights (by name or in order);
-- nil without.
local function output_weights(spec, outputs)
  if not spec.weights then return nil end
  local weights = {}
  for j, n in ipairs(outputs) do
    weights[j] = (spec.weights[n] or spec.weights[j]) or fail_new("no weight for output '%s'", n)
  end
  return weights
end

-- The free directions of spec.free (parameter names, or "x0.<state>" for
-- start values) in the engine's encoding (salta_sim_set_sens): parameter
-- i (from 0), or -(i + 1) for state i's start value; and whether each is
-- log-transformed (spec.transform: "log" for all, or a table by name).
local function free_directions(spec, model)
  local dirs, log = {}, {}
  for k, n in ipairs(spec.free or {}) do
    local dir, why = names.direction(model, n)
    dirs[k] = dir or fail_new("free %s", why)
    if dir < 0 and model:start_follows_params() then
      fail_new("free '%s': the start values of model '%s' depend on the parameters; free those parameters "
        .. "instead, or give the start values as numbers", n, model.name)
    end
    local tr = spec.transform
    if type(tr) == "table" then tr = tr[n] end
    if tr ~= nil and tr ~= "log" and tr ~= "none" then fail_new("transform of '%s' must be \"log\" or \"none\"", n) end
    log[k] = tr == "log"
  end
  return dirs, log
end

-- Event times as data: spec.event_data = { <event> = { t1, t2, ... } or
-- { times = {...}, sigma = s (a number, or one per time) } }, the k-th
-- time of an event matched with its k-th firing (NaN: a firing not
-- measured). Returns the data flat in the order of the model's events
-- (their 1-based indices, times, weights 1 / sigma or nil without sigma),
-- whether every event has a sigma, and per event its entry { name, times,
-- sigma }; nil without event data.
local function event_data(spec, model)
  local ed = spec.event_data
  if ed == nil then return nil end
  if type(ed) ~= "table" or #ed > 0 then
    fail_new("event_data must be a table by event name ({ %s = { 1.2, 3.4 } }), got %s", model.events[1] or "off",
      type(ed) == "table" and "an array" or type(ed))
  end
  local index, hidden = index_of(model.events), model.symbolic and model.symbolic.e_hidden or {}
  local entries = {}
  for name, v in pairs(ed) do
    local j = index[name]
    if not j or hidden[j] then
      local shown = {}
      for i, n in ipairs(model.events) do if not hidden[i] then shown[#shown + 1] = "'" .. n .. "'" end end
      fail_new("event_data: '%s' is not an event of model '%s' (events: %s)", tostring(name), model.name,
        #shown > 0 and table.concat(shown, ", ") or "none")
    end
    local times, sigma = v, nil
    if type(v) == "table" and #v == 0 and next(v) ~= nil then
      options.check("event_data", v, ("salta.lsq: event_data for '%s'"):format(name))
      times, sigma = v.times, v.sigma
    end
    if type(times) ~= "table" or #times == 0 then
      fail_new("event_data for '%s' must be an array of times or { times = {...}, sigma = ... }", name)
    end
    for k = 1, #times do
      if type(times[k]) ~= "number" then
        fail_new("event_data for '%s': time %d is %s, not a number (NaN, 0/0, marks a firing not measured)", name, k,
          tostring(times[k]))
      end
    end
    if sigma ~= nil and type(sigma) ~= "number" and not (type(sigma) == "table" and #sigma == #times) then
      fail_new("event_data for '%s': sigma must be a number or one per time (%d), got %s", name, #times,
        type(sigma) == "table" and ("%d values"):format(#sigma) or tostring(sigma))
    end
    entries[#entries + 1] = { index = j, name = name, times = times, sigma = sigma }
  end
  table.sort(entries, function(a, b) return a.index < b.index end)
  local ev, t, w, all_sigma = {}, {}, {}, true
  for _, e in ipairs(entries) do
    all_sigma = all_sigma and e.sigma ~= nil
    for k, tk in ipairs(e.times) do
      local s = type(e.sigma) == "table" and e.sigma[k] or e.sigma or 1
      if type(s) ~= "number" or not (s > 0) or s == math.huge then
        fail_new("event_data for '%s': sigma of time %d must be a positive finite number, got %s", e.name, k,
          tostring(s))
      end
      ev[#ev + 1], t[#t + 1], w[#w + 1] = e.index, tk, 1 / s
    end
  end
  return { events = ev, times = t, weights = w, all_sigma = all_sigma, entries = entries }
end

-- The last measured event time (nil for none).
local function last_event_time(ed)
  local last
  for _, t in ipairs(ed and ed.times or {}) do
    if t == t and (not last or t > last) then last = t end
  end
  return last
end

function M.new(spec)
  if type(spec) ~= "table" then fail("expected a table") end
  if type(spec.free) == "string" then
    fail("option 'free' must be a list of names, got the string '%s' (write free = { \"%s\" })", spec.free, spec.free)
  end
  options.check("lsq", spec, "salta.lsq")
  local model = spec.model
  if type(model) ~= "table" or not model.core then fail("model must be a salta model") end
  local ed = event_data(spec, model)
  local times, columns, outputs, out_idx, flat = {}, {}, {}, {}, {}
  if not (ed and spec.data == nil and spec.times == nil) then   -- event times alone: no targets
    times, columns = load_data(spec, model)
    outputs, out_idx, flat = compared(spec, model, times, columns)
  end
  local self = setmetatable({ model = model, outputs = outputs, times = times, spec = spec,
    columns = columns, event_data = ed and ed.entries or {} }, Loss)
  self.core = core.loss(model.core, times, out_idx, flat, output_weights(spec, outputs))
  -- known standard deviations: residuals (y - d) / sigma, and standard
  -- errors on that scale (not re-estimated from the residuals)
  local dw = sigma_weights(spec.sigma, outputs, times, columns)
  if dw then self.core:datum_weights(dw) end
  if ed then self.core:event_data(ed.events, ed.times, ed.weights) end
  self.absolute_sigma = (dw ~= nil or #times == 0) and (not ed or ed.all_sigma)
  self.measured_times = ed and ed.times or {}
  self.free = spec.free or {}
  self.dirs, self.log = free_directions(spec, model)
  self.base_p = model:vector("params", spec.params, model.params, model.p0)
  self.base_x0 = spec.x0 and model:vector("x0", spec.x0, model.states, model.x0) or nil
  local last_ev = last_event_time(ed)
  self.t0 = spec.t0 or math.min(0, times[1] or 0)
  self.tf = spec.tf or blended_end(spec, model, times[#times] or self.t0)
  -- event times: a tenth of the span past the last, so that a firing a
  -- little later than measured is still seen
  if not spec.tf and last_ev then self.tf = math.max(self.tf, last_ev + 0.1 * (last_ev - self.t0)) end
  self.options = options.engine_values(spec)
  self.options.t0, self.options.tf, self.options.blend = self.t0, self.tf, spec.blend
  self.options.free, self.options.drop_after_end = #self.dirs > 0 and self.dirs or nil, after_end(spec.after_end)
  self.core:configure(self.options)
  robust_loss(spec, self.core)
  self.windows = event_windows(spec, model, outputs, out_idx, times)
  if self.windows then self.core:event_windows(self.windows.width, self.windows.ramp, self.windows.flags) end
  return self
end

-- A copy of the spec the loss was made from.
local function spec_of(self)
  local spec = {}
  for k, v in pairs(self.spec) do spec[k] = v end
  return spec
end

-- twin(changes): a loss of the same spec with the options in changes
-- replaced (salta.gradcheck's tighter and other-method twins).
function Loss:twin(changes)
  local spec = spec_of(self)
  for k, v in pairs(changes) do spec[k] = v end
  return M.new(spec)
end

-- The full parameter vector and initial state for free values p.
function Loss:full(p)
  local P = { table.unpack(self.base_p) }
  local X = self.base_x0 and { table.unpack(self.base_x0) } or nil
  if type(p) ~= "table" then error("salta.lsq: parameters must be an array or a table by name", 3) end
  local by_name = #p == 0 and next(p) ~= nil
  if not by_name and #p ~= #self.free then
    error(("salta.lsq: %d parameter values, expected %d (%s)"):format(#p, #self.free,
      table.concat(self.free, ", ")), 3)
  end
  if by_name then
    local known = index_of(self.free)
    for k in pairs(p) do
      if not known[k] then error(("salta.lsq: '%s' is not a free parameter"):format(tostring(k)), 3) end
    end
  end
  for k, n in ipairs(self.free) do
    local v = by_name and p[n] or p[k]
    if v == nil then error(("salta.lsq: no value for '%s'"):format(n), 3) end
    local d = self.dirs[k]
    if d >= 0 then P[d + 1] = v
    else
      X = X or self.model:vector("x0", nil, self.model.states, self.model.x0)
      X[-d] = v
    end
  end
  return P, X
end

-- The point the engine evaluates at p: full parameters and start state
-- (the engine checks the inputs over [t0, tf] and sets a given start
-- state's input pieces at t0).
function Loss:point(p)
  return self:full(p)
end

-- The value of free parameter k in the model (its nominal or start value).
function Loss:nominal(k)
  local d = self.dirs[k]
  if d >= 0 then return self.base_p[d + 1] end
  return (self.base_x0 or self.model:vector("x0", nil, self.model.states, self.model.x0))[-d]
end

-- attributes(k): free parameter k's min, max and nominal as its model
-- declares them (salta.param_info; a start value has none): {} when none.
function Loss:attributes(k)
  local d = self.dirs[k]
  return d >= 0 and self.model.param_info and self.model.param_info[self.model.params[d + 1]] or {}
end

-- residual_counts(): every residual is divided by sqrt of the count of
-- finite data, N (salta.loss_interface).
function Loss:residual_counts()
  local n, out = self.core:nresid(), {}
  for i = 1, n do out[i] = n end
  return out
end

-- absolute(): whether the residuals are in units of known sigma.
function Loss:absolute() return self.absolute_sigma end

-- log_sigma(): the sum over the finite data of log(sigma / w), the
-- residuals' scale (sigma 1 when not given, w the output's weight): the
-- constant of the Gaussian log-likelihood (salta.goodness).
function Loss:log_sigma()
  local dw = sigma_weights(self.spec.sigma, self.outputs, self.times, self.columns)
  local w, no, s = output_weights(self.spec, self.outputs), #self.outputs, 0
  for k = 1, #self.times do
    for j, n in ipairs(self.outputs) do
      local d = self.columns[n][k]
      if d == d then s = s - math.log((dw and dw[(k - 1) * no + j] or 1) * (w and w[j] or 1)) end
    end
  end
  return s
end

-- window(t_end): the same loss (options, weights, free parameters) over
-- the targets at t <= t_end only, simulated up to the last of them; an
-- explicit tf is not carried over. salta.fit's horizon continuation fits
-- on a growing sequence of these.
function Loss:window(t_end)
  if type(t_end) ~= "number" or t_end ~= t_end then
    error(("salta.lsq: window needs an end time, got %s"):format(tostring(t_end)), 2)
  end
  local times = {}
  for i, t in ipairs(self.times) do if t <= t_end then times[#times + 1] = i end end
  -- event times: an event's data up to its last measured time <= t_end
  local ed, any_ed = {}, false
  for _, e in ipairs(self.event_data) do
    local keep = 0
    for k, t in ipairs(e.times) do if t == t and t <= t_end then keep = k end end
    if keep > 0 then
      local sig = type(e.sigma) == "table" and { table.unpack(e.sigma, 1, keep) } or e.sigma
      ed[e.name], any_ed = { times = { table.unpack(e.times, 1, keep) }, sigma = sig }, true
    end
  end
  if #times == 0 and not any_ed then
    error(("salta.lsq: window(%g) holds no target (the first is at t = %g)"):format(t_end,
      self.times[1] or last_event_time({ times = self.measured_times })), 2)
  end
  local spec = spec_of(self)
  spec.event_data = any_ed and ed or nil
  if #times == 0 then   -- event times alone
    spec.data, spec.times, spec.outputs, spec.sigma, spec.tf = nil, nil, nil, nil, nil
    return M.new(spec)
  end
  spec.data, spec.outputs, spec.tf = {}, self.outputs, nil
  for _, n in ipairs(self.outputs) do
    local col, out = self.columns[n], {}
    for j, i in ipairs(times) do out[j] = col[i] end
    spec.data[n] = out
  end
  if type(spec.sigma) == "table" then   -- per-time sigmas: the window's rows
    local sig = {}
    for n, v in pairs(spec.sigma) do
      local col = type(v) == "string" and self.columns[v] or v
      if type(col) == "table" then
        local out = {}
        for j, i in ipairs(times) do out[j] = col[i] end
        sig[n] = out
      else
        sig[n] = v
      end
    end
    spec.sigma = sig
  end
  for j, i in ipairs(times) do times[j] = self.times[i] end
  spec.times = times
  return M.new(spec)
end

function Loss:__tostring()
  local ev = {}
  for _, e in ipairs(self.event_data) do ev[#ev + 1] = ("%s (%d)"):format(e.name, #e.times) end
  local parts = {}
  if #self.times > 0 then
    parts[1] = ("%d times x %d outputs (%s)"):format(#self.times, #self.outputs, table.concat(self.outputs, ", "))
  end
  if #ev > 0 then parts[#parts + 1] = "event times of " .. table.concat(ev, ", ") end
  return ("salta least-squares loss on model '%s': %s, free: %s"):format(self.model.name, table.concat(parts, ", "),
    #self.free > 0 and table.concat(self.free, ", ") or "none")
end

local routes = require("salta.lsq_routes")
routes.install(Loss, { new = M.new, spec_of = spec_of })
require("salta.lsq_events").install(Loss)
M.ROUTES = routes.ROUTES   -- salta.fit_plan names them

return M
