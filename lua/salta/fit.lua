-- salta.fit: parameter estimation over a loss (salta.lsq, salta.experiments
-- or any loss of the interface salta.loss_interface states).
--
--   local r = salta.fit{ loss = loss, start = { g = 8.81, e_g = 0.6 },
--     method = "lm" | "lbfgsb" | "adam", truth = { g = 9.81, e_g = 0.5 } }
--   print(r:table())      r:to_json("fit.json")
--
-- Free parameters with transform = "log" in the loss are optimised in log
-- space (bounds too). Progress goes to `log` (default print) every
-- `print_every` iterations (default 10; 0 for silence).
--
-- gradient = "auto" (default: loss:route(), sens or adjoint_cont by the
-- number of free parameters) | "sens" | "adjoint_cont" | "adjoint" | {
-- method = "adjoint", mesh = "steps" (default) | K, forward = "consistent"
-- | "ida" } for adam and lbfgsb (lm always takes the sensitivities'
-- Jacobian): both adjoints cost about the same whatever the number of free
-- parameters; the discrete one fits the discrete loss it differentiates.
--
-- The concerns live apart: the plan (fit_plan: method, route, start and
-- bounds, checked once), one optimiser's run (fit_run), the horizon
-- continuation (fit_horizon: horizon = true | {t1, t2, ...}), multi-start
-- (multistart: starts = K | {...}), the verdict over all of them
-- (fit_status: a misfit with sigma known, a failed stage, the optimiser's
-- own reason) and the result with its reports (fit_report).

local options = require("salta.options")
local interface = require("salta.loss_interface")
local plan_of = require("salta.fit_plan")
local run = require("salta.fit_run")
local horizon = require("salta.fit_horizon")
local multistart = require("salta.multistart")
local report = require("salta.fit_report")
local mpi = require("salta.mpi")
local status = require("salta.fit_status")

local M = {}

-- The warnings of a fit at its start p (free values), each written to
-- stderr (rank 0) and kept in the result's warnings: compared outputs
-- that jump at events where the loss does not treat them (salta.lsq's
-- jump_warning; each experiment's of salta.experiments).
local function start_warnings(loss, p)
  local out = {}
  local function add(L, q)
    local ok, w = pcall(L.jump_warning, L, q)
    if ok and w then out[#out + 1] = w end
  end
  if loss.jump_warning then add(loss, p) end
  for i, L in ipairs(loss.losses or {}) do
    if L.jump_warning and loss.part then add(L, loss:part(p, i)) end
  end
  for _, w in ipairs(out) do
    if mpi.is_root() then io.stderr:write("salta.fit: warning: ", w, "\n") end
  end
  return #out > 0 and out or nil
end

-- The fit's options as data, for its provenance: the loss, the callback
-- and the log left out.
local function options_of(spec)
  local out = {}
  for k, v in pairs(spec) do
    if k ~= "loss" and k ~= "callback" and k ~= "log" then out[k] = v end
  end
  return require("salta.provenance").plain(out)
end

-- fit(spec): spec is topic fit's table (salta.help("fit")); returns a Fit
-- (salta.fit_report).
function M.fit(spec)
  if type(spec) ~= "table" then error("salta.fit: expected a table", 2) end
  for _, key in ipairs({ "transform", "free", "sigma", "blend", "weights" }) do
    if spec[key] ~= nil then
      error(("salta.fit: option '%s' belongs to the loss: salta.lsq{ ..., %s = ... } (salta.help(\"lsq\"))"):format(
        key, key), 2)
    end
  end
  options.check("fit", spec, "salta.fit")
  local loss = spec.loss
  local missing = interface.missing(loss)
  if missing then error("salta.fit: loss must be a salta.lsq loss (or a loss of its interface): " .. missing, 2) end
  if #loss.free == 0 then error("salta.fit: the loss has no free parameters", 2) end
  local function done(result, warnings)
    result.options = options_of(spec)
    result.warnings = warnings
    return report.new(status.finish(result, spec.misfit_level))
  end
  if spec.starts then
    local ok, p = pcall(plan_of.by_name, loss, nil, "start", function(k) return loss:nominal(k) end)
    local warnings = ok and start_warnings(loss, p) or nil
    return done(multistart.fit(spec), warnings)
  end
  local plan = plan_of.prepare(spec)   -- its errors name the caller (level 3)
  local warnings = start_warnings(loss, plan.start)
  if spec.check then plan_of.check_start(spec, plan) end
  local result = spec.horizon and horizon.fit(spec, plan) or run.once(spec, plan, loss, plan.start)
  return done(result, warnings)
end

M.compare = report.compare

return M
