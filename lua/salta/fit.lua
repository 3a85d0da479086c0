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
-- (multistart: starts = K | {...}) and the result with its reports
-- (fit_report).

local options = require("salta.options")
local interface = require("salta.loss_interface")
local plan_of = require("salta.fit_plan")
local run = require("salta.fit_run")
local horizon = require("salta.fit_horizon")
local multistart = require("salta.multistart")
local report = require("salta.fit_report")

local M = {}

-- fit(spec): spec is topic fit's table (salta.help("fit")); returns a Fit
-- (salta.fit_report).
function M.fit(spec)
  if type(spec) ~= "table" then error("salta.fit: expected a table", 2) end
  options.check("fit", spec, "salta.fit")
  local loss = spec.loss
  local missing = interface.missing(loss)
  if missing then error("salta.fit: loss must be a salta.lsq loss (or a loss of its interface): " .. missing, 2) end
  if #loss.free == 0 then error("salta.fit: the loss has no free parameters", 2) end
  if spec.starts then return report.new(multistart.fit(spec)) end
  local plan = plan_of.prepare(spec)   -- its errors name the caller (level 3)
  if spec.check then plan_of.check_start(spec, plan) end
  if spec.horizon then return report.new(horizon.fit(spec, plan)) end
  return report.new(run.once(spec, plan, loss, plan.start))
end

M.compare = report.compare

return M
