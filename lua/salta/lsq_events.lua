-- salta.lsq_events: what a loss's events do to its outputs (salta.lsq):
-- the outputs that jump at events, the events' times in the run at p, how
-- the loss treats jumps, and the warning a fit gives when it does not.
-- install(Loss) adds them to the loss's class.

local E = {}
local Methods = {}

-- The run at free values p on the loss's interval, its outputs at the ends.
local function run_at(self, p)
  local P, X = self:full(p)
  local spec = self.spec
  return self.model:simulate{ t0 = self.t0, tf = self.tf, params = P, x0 = X, rtol = spec.rtol,
    atol = spec.atol, method = spec.method, times = { self.t0, self.tf } }, P
end

-- jumps(p): the compared outputs that jump at events in the run at p by
-- more than 1e-6 of their data's size (salta.jumps.at): { output, event,
-- count, size, t } each.
function Methods:jumps(p)
  local tr, P = run_at(self, p)
  local scale = {}   -- a jump below 1e-6 of the data's size is none
  for _, n in ipairs(self.outputs) do
    scale[n] = 0
    for _, v in ipairs(self.columns[n]) do
      if v == v then scale[n] = math.max(scale[n], math.abs(v)) end
    end
  end
  return require("salta.jumps").at(self.model, tr, P, self.outputs, scale)
end

-- event_times(p): the distinct times of the model's events (input
-- breakpoints left out) in the run at p, increasing.
function Methods:event_times(p)
  local out = {}
  for _, e in ipairs(run_at(self, p):events()) do
    if e.t ~= out[#out] then out[#out + 1] = e.t end
  end
  return out
end

-- treated(): how the loss treats outputs that jump ("event windows", "a
-- robust loss", both), or nil.
function Methods:treated()
  local t = {}
  if self.windows then t[#t + 1] = "event windows" end
  if self.spec.robust and self.spec.robust ~= "linear" then t[#t + 1] = ("a %s loss"):format(self.spec.robust) end
  return #t > 0 and table.concat(t, " and ") or nil
end

-- jump_warning(p): nil, or the warning a fit gives at its start p when
-- compared outputs jump at events and the loss does not treat them.
function Methods:jump_warning(p)
  if self:treated() then return nil end
  local list = self:jumps(p)
  if #list == 0 then return nil end
  local parts = {}
  for _, j in ipairs(list) do
    parts[#parts + 1] = ("output '%s' jumps at event '%s' (%d times in the run at the start, by up to %.3g; first "
      .. "at t = %.6g)"):format(j.output, j.event, j.count, j.size, j.t)
  end
  return table.concat(parts, "; ") .. ": a datum between a fitted and a measured event is a large residual that "
    .. "the gradient does not see, so the fit can stall or be biased. Treat it with event_window = true in "
    .. "salta.lsq (drops those data near each event, the windows following the fitted events) or a robust loss "
    .. "(robust = \"soft_l1\", robust_scale = a few sigma); doc/guide.md, \"Fitting a hybrid model to measured data\""
end

function E.install(Loss)
  for k, f in pairs(Methods) do Loss[k] = f end
end

return E
