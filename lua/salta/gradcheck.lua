-- salta.gradcheck: a loss's gradient by every route against Richardson
-- central differences of a tighter twin of the loss, per parameter, with
-- an error estimate and a verdict, and what explains a disagreement: the
-- event structure at the point (groups, cascades, near-grazing crossings)
-- and the gradient error each route's own integration error carries.
--
--   local report = loss:check_gradient{ at = p }
--   print(report)            -- the table; report.verdict is "ok",
--                            -- "disagree", "ill-conditioned" (every route
--                            -- beyond the tolerance is within what its
--                            -- outputs' integration error carries),
--                            -- "not differentiable" or "inconclusive" (the
--                            -- reference's own error exceeds the
--                            -- tolerance, or the differences' route is off
--                            -- by no more than its own error estimate)
--
-- The reference: D(s) = (L(p + s e_k) - L(p - s e_k)) / 2s of the twin
-- at rtol_ref, Richardson-extrapolated twice, (4 D(s) - D(2s)) / 3 and
-- (4 D(s/2) - D(s)) / 3; the latter is the reference, their difference
-- its error estimate. The step s is relative: h |p_k|, with the
-- parameter's nominal value as the floor (h itself when both are 0), in
-- log space for log-transformed parameters. Without opts.h, a reference
-- whose error estimate exceeds the tolerance is retried with h / 10 and
-- h / 100; one still uncertain makes the verdict "inconclusive".
local core = require("salta.core")

local M = {}

local DEFAULT_H = 1e-4

-- What the error of a route's residuals carries into each gradient
-- component: with L = sum r_i^2 and J the residuals' Jacobian, errors e_i
-- in the residuals move dL/dp_k by 2 sum_i e_i J_ik; per component, ten
-- times its bound 2 sum_i |r_i - r_ref_i| |J_ik| (salta_carried_error),
-- r_ref the residuals of a tighter run; an empty table when one of J, r,
-- r_ref is missing. Where an event's timing moves an output sampled in a
-- fast transient after it, a small integration error there can be a large
-- gradient error.
function M.carried_error(J, r, r_ref)
  if not (J and r and r_ref) then return {} end
  return core.carried_error(J, r, r_ref)
end

-- The reference gradient of a loss at p (Richardson differences from
-- steps h and h/2, salta_loss_grad_fd) and its error estimate.
local function richardson(loss, p, h)
  return loss:fd_grad(p, { h = h, error = true })
end

-- Whether some reference's error estimate exceeds the tolerance `tol`.
local function uncertain_any(err, tol)
  for k = 1, #err do
    if err[k] > tol then return true end
  end
  return false
end

local function largest(v)
  local big = 0
  for k = 1, #v do big = math.max(big, math.abs(v[k])) end
  return big
end

-- The reference at p and its error estimate; with `refine`, a loss curved
-- on a smaller scale than the step (a fast transient after an event, a
-- frequency) is retried at h / 10 and h / 100, each parameter keeping its
-- least uncertain reference. Also the smallest step taken, when refined.
local function reference(tight, p, h, tol, refine)
  local ref, err = richardson(tight, p, h)
  local h0, tries = h, refine and 2 or 0
  while tries > 0 and uncertain_any(err, tol * largest(ref)) do
    h, tries = h / 10, tries - 1
    local r, e = richardson(tight, p, h)
    for k = 1, #p do
      if e[k] < err[k] then ref[k], err[k] = r[k], e[k] end
    end
  end
  return ref, err, h < h0 and h or nil
end

-- The routes compared: each a name, its gradient and the residuals of the
-- run it comes from (the discrete adjoint's: its discrete trajectory's;
-- the continuous adjoint runs forward at a hundredth of rtol, so the
-- loss's own residuals bound its). Twins are made for the routes kept.
local function routes(loss, p)
  local twins = {}
  local function on(method)
    return function()
      twins[method] = twins[method] or loss:twin({ method = method })
      return twins[method]
    end
  end
  local function own() return loss end
  local function route(name, of, opts, resid_opts)
    return { name = name, grad = function() return of():grad(p, opts) end,
      residuals = function() return of():residuals(p, resid_opts) end }
  end
  local fd = route("fd", own)   -- with its own error estimate (steps h and h / 2; the gradient from h / 2)
  fd.grad = function() return loss:fd_grad(p, { error = true }) end
  return {
    route("sens", own, { method = "sens" }),
    route("sens, erk", on("erk"), { method = "sens" }),
    route("sens, bdf", on("bdf"), { method = "sens" }),
    route("adjoint", own, { method = "adjoint" }, { method = "adjoint" }),
    route("adjoint, erk", on("erk"), { method = "adjoint" }, { method = "adjoint" }),
    route("adjoint, bdf", on("bdf"), { method = "adjoint" }, { method = "adjoint" }),
    route("adjoint_cont", own, { method = "adjoint_cont" }),
    fd,
  }
end

-- The events of a run at p: groups, cascade rounds, terminal events and
-- crossings whose guard's rate is small against its terms.
local function event_structure(loss, p, rtol)
  local P, X = loss:full(p)
  local m = loss.model
  local tr = m:simulate{ t0 = loss.t0, tf = loss.tf, params = P, x0 = X, rtol = rtol, atol = rtol,
    method = loss.spec.method }
  local out = { count = 0, groups = 0, cascades = 0, near_grazing = {}, terminal = tr.t_end }
  local groups = {}
  for _, e in ipairs(tr:events()) do
    out.count = out.count + 1
    if e.simultaneous and not groups[e.group] then groups[e.group], out.groups = true, out.groups + 1 end
    if e.cascade > 0 then out.cascades = out.cascades + 1 end
    local ratio = e.rate_scale and e.rate_scale > 0 and math.abs(e.rate) / e.rate_scale
    if ratio and ratio < 1e-3 then
      out.near_grazing[#out.near_grazing + 1] = ("'%s' at t = %.6g (rate %.2g of its terms)"):format(e.name, e.t, ratio)
    end
  end
  return out
end

local Report = {}
Report.__index = Report

-- A route's line: refused, ok, disagreeing, or beyond the tolerance only
-- by what its outputs' integration error carries (or, for differences,
-- by their own error estimate).
local function route_line(r, rtol)
  if r.error then return ("%s refused: %s"):format(r.name, r.error) end
  local head = ("%s: worst %.3g of the largest component"):format(r.name, r.worst)
  if r.ok then return ("%s (ok within %.3g)"):format(head, r.tol) end
  if r.ill_conditioned then
    return ("%s (beyond %.3g, but within the %.3g that its outputs' integration error at rtol %g carries: "
      .. "ill-conditioned, a smaller rtol tightens it)"):format(head, r.tol, r.carried_worst, rtol)
  end
  if r.uncertain then
    return ("%s (beyond %.3g, but within its own error estimate %.3g: its step is coarser than the scale the "
      .. "loss curves on; not counted)"):format(head, r.tol, r.own_worst)
  end
  return ("%s (DISAGREES within %.3g%s)"):format(head, r.tol, r.carried_worst > 0
    and (("; its outputs' integration error carries %.3g"):format(r.carried_worst)) or "")
end

function Report:__tostring()
  local lines = { ("gradient check at %s (rtol %g; reference: Richardson differences at rtol %g, relative step %g; "
    .. "%stolerance %g of the largest component)"):format(self.point_text, self.rtol, self.rtol_ref, self.h,
    self.h_refined and ("refined to %g where uncertain; "):format(self.h_refined) or "", self.tol) }
  local head = { ("%-14s %14s %10s"):format("parameter", "reference", "+-") }
  for _, r in ipairs(self.routes) do head[#head + 1] = ("%14s"):format(r.name) end
  lines[#lines + 1] = table.concat(head, " ")
  for k, n in ipairs(self.parameters) do
    local row = { ("%-14s %14.7g %10.2g"):format(n, self.reference[k], self.reference_err[k]) }
    for _, r in ipairs(self.routes) do
      if r.error then row[#row + 1] = ("%14s"):format("refused")
      else row[#row + 1] = ("%14.7g%s"):format(r.grad[k], r.bad[k] and "*" or " ") end
    end
    lines[#lines + 1] = table.concat(row, " ")
  end
  for _, r in ipairs(self.routes) do lines[#lines + 1] = route_line(r, self.rtol) end
  local ev = self.events
  lines[#lines + 1] = ("events: %d (%d groups, %d cascade rounds%s)%s"):format(ev.count, ev.groups, ev.cascades,
    ev.terminal and (", terminal at t = %.6g"):format(ev.terminal) or "",
    #ev.near_grazing > 0 and ("; near grazing: " .. table.concat(ev.near_grazing, ", ")) or "")
  if #self.uncertain > 0 then
    lines[#lines + 1] = ("the reference is uncertain beyond the tolerance for %s: its differences disagree with "
      .. "each other (a kink, or an output sampled in a fast transient after an event); try another point, other "
      .. "target times or a smaller step h"):format(table.concat(self.uncertain, ", "))
  end
  lines[#lines + 1] = "verdict: " .. self.verdict
  return table.concat(lines, "\n")
end

-- Route r's entry in rep: its gradient against the reference by the
-- engine's rule (salta_check_judge: a component is bad beyond tol of the
-- largest, big, and ten times the reference's error), and, for a route
-- with a bad component, what explains it: the error its outputs'
-- integration error carries (tight(): the tight twin's residual Jacobian
-- and residuals, computed once, when first needed), which makes the route
-- ill-conditioned rather than wrong, or (differences) that and ten times
-- their own error estimate, which makes them uncertain.
local function judge_route(r, rep, big, tol, tight)
  local ok, g, own = pcall(r.grad)
  local entry = { name = r.name, bad = {}, ok = true, worst = 0, carried_worst = 0, own_worst = 0 }
  if not ok then
    local code = core.errcode(g)
    if code == "interrupted" or code == "memory" then error(g, 0) end   -- the check stops, not the route
    entry.error, entry.undefined = tostring(g), code == "nondifferentiable"
    return entry
  end
  local scale = big > 0 and big or 1
  -- differences at the loss's own tolerance carry its noise over the step
  entry.grad, entry.tol = g, r.name == "fd" and math.max(tol, rep.rtol / rep.h) or tol
  local verdict
  verdict, entry.bad, entry.worst = core.check_judge(g, rep.reference, rep.reference_err, entry.tol)
  entry.ok = verdict == "ok"
  if entry.ok then return entry end
  local okr, res = pcall(r.residuals)
  local J, r_ref = tight()
  local carried = M.carried_error(J, okr and res, r_ref)
  if #carried == 0 then carried = nil end
  entry.carried_worst = carried and largest(carried) / scale or 0
  entry.own_worst = own and 10 * largest(own) / scale or 0
  verdict = core.check_judge(g, rep.reference, rep.reference_err, entry.tol, carried, own)
  entry.ill_conditioned, entry.uncertain = verdict == "ill-conditioned", verdict == "uncertain"
  return entry
end

-- A route's state in one word: ok, refused, ill-conditioned, uncertain or
-- disagrees.
local function state_of(entry)
  return entry.ok and "ok" or entry.error and "refused" or entry.ill_conditioned and "ill-conditioned"
    or entry.uncertain and "uncertain" or "disagrees"
end

-- Judges the routes kept into rep.routes (big: the reference's largest
-- component), saying each when say is given;
-- returns the set of their states (and `undefined` for a point a route
-- found not differentiable).
local function run_routes(loss, p, rep, big, keep, tight_jr, say)
  local outcome = {}
  for _, r in ipairs(routes(loss, p)) do
    if not keep or keep[r.name] then
      local t0 = core.clock()
      local entry = judge_route(r, rep, big, rep.tol, tight_jr)
      outcome[state_of(entry)] = true
      outcome.undefined = outcome.undefined or entry.undefined
      rep.routes[#rep.routes + 1] = entry
      if say then say(("check_gradient: %s: %s, %.2f s"):format(entry.name, state_of(entry), core.clock() - t0)) end
    end
  end
  return outcome
end

-- Where progress lines go: nowhere, print, or the user's function.
local function progress_log(progress)
  if progress == true then return print end
  if type(progress) == "function" then return progress end
  return nil
end

-- check(loss, opts): opts.at (free values; default the loss's nominal
-- ones), h (relative step, default 1e-4), rtol_ref (default rtol / 1000,
-- at most 1e-10 and at least 1e-13), tol (default max(1000 rtol, 1e-8):
-- the sensitivities' error grows with the integration's through the
-- events; the "fd" route gets rtol / h, its noise over the step), routes
-- (names to keep), progress (true: a line per step of the check as it
-- ends, through print; a function: through it).
function M.check(loss, opts)
  opts = opts or {}
  require("salta.options").check("check_gradient", opts, "loss:check_gradient")
  local p = {}
  for k, n in ipairs(loss.free) do p[k] = opts.at and (opts.at[k] or opts.at[n]) or loss:nominal(k) end
  local rtol = loss.spec.rtol or 1e-6
  local rtol_ref = opts.rtol_ref or math.max(1e-13, math.min(1e-10, rtol / 1000))
  local tol = opts.tol or math.max(1e3 * rtol, 1e-8)
  local h = opts.h or DEFAULT_H
  local say = progress_log(opts.progress)
  local tight = loss:twin({ rtol = rtol_ref, atol = (loss.spec.atol or rtol) * rtol_ref / rtol })
  local rep = setmetatable({ parameters = loss.free, at = p, rtol = rtol, rtol_ref = rtol_ref, tol = tol, h = h,
    reference = {}, reference_err = {}, routes = {} }, Report)
  local texts = {}
  for k, n in ipairs(loss.free) do texts[k] = ("%s = %.6g"):format(n, p[k]) end
  rep.point_text = table.concat(texts, ", ")
  local t0 = core.clock()
  rep.reference, rep.reference_err, rep.h_refined = reference(tight, p, h, tol, not opts.h)
  if say then say(("check_gradient: the reference (differences at rtol %g): %.2f s"):format(rtol_ref, core.clock() - t0)) end
  local tight_side
  local function tight_jr()   -- for the routes that need it, once
    if not tight_side then
      local okJ, J = pcall(tight.jacobian, tight, p)
      local okr, r_ref = pcall(tight.residuals, tight, p)
      tight_side = { okJ and J or nil, okr and r_ref or nil }
    end
    return tight_side[1], tight_side[2]
  end
  local big = largest(rep.reference)
  local keep = opts.routes and require("salta.names").index_of(opts.routes)
  local outcome = run_routes(loss, p, rep, big, keep, tight_jr, say)
  -- a reference whose own error exceeds the tolerance cannot fail a route
  rep.uncertain = {}
  for k, n in ipairs(loss.free) do
    if rep.reference_err[k] > tol * big then rep.uncertain[#rep.uncertain + 1] = n end
  end
  rep.events = event_structure(loss, p, rtol_ref)
  rep.verdict = outcome.undefined and "not differentiable" or outcome.disagrees and "disagree"
    or outcome["ill-conditioned"] and "ill-conditioned"
    or (#rep.uncertain > 0 or outcome.uncertain) and "inconclusive" or "ok"
  return rep
end

return M
