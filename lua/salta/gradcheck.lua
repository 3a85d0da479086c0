-- salta.gradcheck: a loss's gradient by every route against Richardson
-- central differences of a tighter twin of the loss, per parameter, with
-- an error estimate and a verdict, and the event structure at the point
-- (groups, cascades, near-grazing crossings) that explains a disagreement.
--
--   local report = loss:check_gradient{ at = p }
--   print(report)            -- the table; report.verdict is "ok",
--                            -- "disagree", "not differentiable" or
--                            -- "inconclusive" (the reference's own error
--                            -- exceeds the tolerance: no route can fail)
--
-- The reference: D(s) = (L(p + s e_k) - L(p - s e_k)) / 2s of the twin
-- at rtol_ref, Richardson-extrapolated twice, (4 D(s) - D(2s)) / 3 and
-- (4 D(s/2) - D(s)) / 3; the latter is the reference, their difference
-- its error estimate. The step s is relative: h |p_k|, with the
-- parameter's nominal value as the floor (h itself when both are 0), in
-- log space for log-transformed parameters. Without opts.h, a reference
-- whose error estimate exceeds the tolerance is retried with h / 10 and
-- h / 100; one still uncertain makes the verdict "inconclusive".
local M = {}

local DEFAULT_H = 1e-4

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

-- The routes compared: each a name and a function giving the gradient.
local function routes(loss, p)
  local list = {
    { "sens", function() return loss:grad(p, { method = "sens" }) end },
    { "sens, erk", function() return loss:twin({ method = "erk" }):grad(p, { method = "sens" }) end },
    { "sens, bdf", function() return loss:twin({ method = "bdf" }):grad(p, { method = "sens" }) end },
    { "adjoint", function() return loss:grad(p, { method = "adjoint" }) end },
    { "adjoint, erk", function() return loss:twin({ method = "erk" }):grad(p, { method = "adjoint" }) end },
    { "adjoint, bdf", function() return loss:twin({ method = "bdf" }):grad(p, { method = "adjoint" }) end },
    { "adjoint_cont", function() return loss:grad(p, { method = "adjoint_cont" }) end },
    { "fd", function() return loss:fd_grad(p) end },
  }
  return list
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
  for _, r in ipairs(self.routes) do
    if r.error then lines[#lines + 1] = ("%s refused: %s"):format(r.name, r.error)
    else lines[#lines + 1] = ("%s: worst %.3g of the largest component (%s within %.3g)"):format(r.name, r.worst,
      r.ok and "ok" or "DISAGREES", r.tol) end
  end
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

-- check(loss, opts): opts.at (free values; default the loss's nominal
-- ones), h (relative step, default 1e-4), rtol_ref (default rtol / 1000,
-- at most 1e-10 and at least 1e-13), tol (default max(1000 rtol, 1e-8):
-- the sensitivities' error grows with the integration's through the
-- events; the "fd" route gets rtol / h, its noise over the step), routes
-- (names to keep).
function M.check(loss, opts)
  opts = opts or {}
  require("salta.options").check("check_gradient", opts, "loss:check_gradient")
  local p = {}
  for k, n in ipairs(loss.free) do p[k] = opts.at and (opts.at[k] or opts.at[n]) or loss:nominal(k) end
  local rtol = loss.spec.rtol or 1e-6
  local rtol_ref = opts.rtol_ref or math.max(1e-13, math.min(1e-10, rtol / 1000))
  local tol = opts.tol or math.max(1e3 * rtol, 1e-8)
  local h = opts.h or DEFAULT_H
  local tight = loss:twin({ rtol = rtol_ref, atol = (loss.spec.atol or rtol) * rtol_ref / rtol })
  local rep = setmetatable({ parameters = loss.free, at = p, rtol = rtol, rtol_ref = rtol_ref, tol = tol, h = h,
    reference = {}, reference_err = {}, routes = {} }, Report)
  local texts = {}
  for k, n in ipairs(loss.free) do texts[k] = ("%s = %.6g"):format(n, p[k]) end
  rep.point_text = table.concat(texts, ", ")
  rep.reference, rep.reference_err, rep.h_refined = reference(tight, p, h, tol, not opts.h)
  local big = largest(rep.reference)
  local keep = opts.routes and require("salta.names").index_of(opts.routes)
  local any_bad, undefined = false, false
  for _, r in ipairs(routes(loss, p)) do
    if not keep or keep[r[1]] then
      local ok, g = pcall(r[2])
      local entry = { name = r[1], bad = {} }
      if not ok then
        entry.error = tostring(g)
        undefined = undefined or require("salta.core").errcode(g) == "nondifferentiable"
      else
        -- differences at the loss's own tolerance carry its noise over the step
        local t = r[1] == "fd" and math.max(tol, rtol / h) or tol
        entry.grad, entry.worst, entry.ok, entry.tol = g, 0, true, t
        for k = 1, #p do
          local diff = math.abs(g[k] - rep.reference[k])
          entry.worst = math.max(entry.worst, big > 0 and diff / big or diff)
          entry.bad[k] = diff > t * big + 10 * rep.reference_err[k]
          entry.ok = entry.ok and not entry.bad[k]
        end
        any_bad = any_bad or not entry.ok
      end
      rep.routes[#rep.routes + 1] = entry
    end
  end
  -- a reference whose own error exceeds the tolerance cannot fail a route
  rep.uncertain = {}
  for k, n in ipairs(loss.free) do
    if rep.reference_err[k] > tol * big then rep.uncertain[#rep.uncertain + 1] = n end
  end
  rep.events = event_structure(loss, p, rtol_ref)
  rep.verdict = undefined and "not differentiable" or any_bad and "disagree"
    or #rep.uncertain > 0 and "inconclusive" or "ok"
  return rep
end

return M
