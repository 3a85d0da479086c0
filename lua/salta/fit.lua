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
-- gradient = "sens" (default) | "adjoint" | { method = "adjoint", mesh =
-- "steps" (default) | K, forward = "consistent" | "ida" } for adam and lbfgsb: the
-- adjoint route fits the discrete loss it differentiates, at a cost that
-- does not grow with the number of free parameters.
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
local status = require("salta.fit_status")

local M = {}

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
  local function done(result)
    result.options = options_of(spec)
    return report.new(status.finish(result, spec.misfit_level))
  end
  if spec.starts then return done(multistart.fit(spec)) end
  local plan = plan_of.prepare(spec)   -- its errors name the caller (level 3)
  if spec.check then plan_of.check_start(spec, plan) end
  if spec.horizon then return done(horizon.fit(spec, plan)) end
  return done(run.once(spec, plan, loss, plan.start))
end

M.compare = report.compare

return M
