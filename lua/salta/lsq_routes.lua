-- salta.lsq_routes: a loss's evaluations (salta.lsq): its value, its
-- gradient by every route (topic grad), its residuals and their Jacobian,
-- its predictions, and the last evaluation's statistics. install(Loss,
-- shared) adds them to the loss's class; shared holds what they need of
-- its construction: new (salta.lsq.new) and spec_of (a copy of a loss's
-- spec).

local options = require("salta.options")

local R = {}
local Methods = {}
local S   -- shared, set by install

local function call(self, p, what)
  local P, X = self:point(p)
  local res = table.pack(self.core:eval(P, X, what))
  -- the engine names model, element and time
  if res[1] == nil then error(self.model:explain(res[2]), 0) end
  return table.unpack(res, 1, res.n)
end

-- chain rule for log-transformed parameters: d/d log p = p d/dp
local function apply_log(self, p, g)
  for k = 1, #self.free do
    if self.log[k] then
      local v = p[k] or p[self.free[k]]
      g[k] = g[k] * v
    end
  end
  return g
end

-- adjoint options: mesh = K (uniform nodes per segment) or "steps" (the
-- integrator's steps), forward = "consistent" (the discrete trajectory
-- re-solved: the exact gradient of the discrete loss) or "ida" (the
-- integrator's values as they are, the seed paper's approach). The engine
-- checks K's range; "steps" is its 0.
local function mesh_arg(opts)
  local mesh = opts.mesh or "steps"
  if opts.forward and opts.forward ~= "consistent" and opts.forward ~= "ida" then
    error(("salta.lsq: forward must be \"consistent\" or \"ida\", got %q"):format(tostring(opts.forward)), 0)
  end
  if mesh == "steps" then return 0 end
  if math.type(mesh) ~= "integer" or mesh < 1 then
    error(("salta.lsq: adjoint option 'mesh' must be \"steps\" or a number of nodes per segment (>= 1), got %s"):format(
      tostring(mesh)), 0)
  end
  return mesh
end

-- A uniform mesh too coarse for the trajectory (the trapezoid does not
-- damp a stiff mode: it rings) gives a discrete loss far from the
-- integrator's. The first use of each mesh compares the two: more than
-- MESH_TOL apart, relatively, is a warning (once), and salta.fit refuses it.
R.MESH_TOL = 0.1

function Methods:mesh_check(p, opts)
  local mesh = opts.mesh
  if mesh == nil or mesh == "steps" or opts.forward == "ida" then return true end
  self.mesh_checked = self.mesh_checked or {}
  local known = self.mesh_checked[mesh]
  if known ~= nil then return known == true, known ~= true and known or nil end
  local P, X = self:point(p)
  local discrete, why = self.core:eval_adjoint(P, X, mesh_arg(opts), false, false)
  if discrete == nil then error(self.model:explain(why), 0) end
  local exact = (self:value(p))
  if math.abs(discrete - exact) <= R.MESH_TOL * math.abs(exact) + 1e-300 then
    self.mesh_checked[mesh] = true
    return true
  end
  local msg = ("the adjoint's uniform mesh of %d nodes per segment gives a discrete loss of %.6g where the "
    .. "integrator's is %.6g (more than %g %% apart: the trapezoid does not resolve the trajectory, e.g. a stiff "
    .. "mode rings): use mesh = \"steps\" (tolerance-controlled) or a finer mesh"):format(mesh, discrete, exact,
    100 * R.MESH_TOL)
  self.mesh_checked[mesh] = msg
  io.stderr:write("salta.lsq: warning: ", msg, "\n")
  return false, msg
end

-- The options of value, grad and value_and_grad, checked once.
local function grad_opts(opts, what)
  if opts == nil then return nil end
  options.check("grad", opts, "salta.lsq: " .. what)
  if opts.of then options.check("grad", opts.of, "salta.lsq: " .. what .. " option 'of'") end
  return opts
end

-- The adjoint's discrete loss, with its gradient (want_grad) or its
-- residuals (want_resid, alone).
local function call_adjoint(self, p, opts, want_grad, want_resid)
  local P, X = self:point(p)
  local v, g = self.core:eval_adjoint(P, X, mesh_arg(opts), want_grad, opts.forward == "ida", want_resid)
  if v == nil then error(self.model:explain(g), 0) end
  if not (self.mesh_checked and self.mesh_checked[opts.mesh]) then self:mesh_check(p, opts) end
  return v, g
end

-- value(p [, {method = "adjoint", mesh = ...}]): the loss, or the loss of
-- the discrete trajectory the adjoint route differentiates.
function Methods:value(p, opts)
  opts = grad_opts(opts, "value")
  if opts and opts.method == "adjoint" then return (call_adjoint(self, p, opts, false)) end
  return (call(self, p, ""))
end

-- The gradient routes by name (topic grad): "auto" lets the engine choose
-- between "sens" and "adjoint_cont" (loss:route()).
R.ROUTES = { "auto", "sens", "adjoint_cont", "adjoint", "fd" }
local ROUTE = {}
for _, r in ipairs(R.ROUTES) do ROUTE[r] = true end

local function call_cont(self, p)
  local P, X = self:point(p)
  local v, g = self.core:eval_adjoint_cont(P, X, true)
  if v == nil then error(self.model:explain(g), 0) end
  return v, g
end

-- value_and_grad(p [, opts]): the loss and its gradient; opts as grad's.
-- With method = "adjoint" the value is that of the discrete loss the
-- adjoint differentiates, so the two agree.
function Methods:value_and_grad(p, opts)
  opts = grad_opts(opts, "value_and_grad")
  local method = opts and opts.method or "auto"
  if not ROUTE[method] then
    error(("salta.lsq: unknown gradient method '%s' (%s)"):format(tostring(method),
      '"' .. table.concat(R.ROUTES, '", "') .. '"'), 2)
  end
  local v, g
  if method == "adjoint" then
    v, g = call_adjoint(self, p, opts, true)
  elseif method == "fd" then
    return self:value(p, opts.of), self:fd_grad(p, opts)
  elseif method == "adjoint_cont" then
    v, g = call_cont(self, p)
  else
    self.core:route(method)
    v, g = call(self, p, "g")
  end
  return v, apply_log(self, p, g)
end

-- route(): the route method = "auto" takes for this loss, "sens" or
-- "adjoint_cont": the continuous adjoint from core.route_crossover free
-- directions on (make bench measures where it becomes the faster; after a
-- run, times the targets per step where they outnumber its steps), sens
-- below and whenever the loss blends.
function Methods:route()
  return self.core:route("auto")
end

function Methods:grad(p, opts)
  opts = grad_opts(opts, "grad")
  if opts and opts.method == "fd" then return self:fd_grad(p, opts) end
  local _, g = self:value_and_grad(p, opts)
  return g
end

-- Central differences of the loss value in the transformed variable, by
-- the engine (salta_loss_grad_fd): one Richardson step, (4 D(h) - D(2h)) /
-- 3, cancels the h^2 error, so a larger h (less round-off from the
-- simulations) gives the same accuracy. opts: h (relative step, default
-- 2e-5), richardson (default true), of (the value's options: of = {
-- method = "adjoint", ... } differences the adjoint's discrete loss),
-- error (true: a second result, the error estimate from steps h and h/2,
-- the gradient then the one from h/2). The step is relative: h |p_k|, with
-- the parameter's nominal value as the floor (h itself when both are 0); h
-- in log space for a log parameter.
function Methods:fd_grad(p, opts)
  opts = opts or {}
  local of = opts.of
  local floor = {}
  for k = 1, #self.free do floor[k] = self:attributes(k).nominal or self:nominal(k) or 0 end
  local fd = { h = opts.h, richardson = opts.richardson ~= false, log = self.log, floor = floor, error = opts.error }
  if of and of.method == "adjoint" then
    fd.mesh, fd.ida = mesh_arg(of), of.forward == "ida"
    if not (self.mesh_checked and self.mesh_checked[of.mesh]) then self:mesh_check(p, of) end
  end
  local P, X = self:point(p)
  local g, err = self.core:grad_fd(P, X, fd)
  if g == nil then error(self.model:explain(err), 0) end
  return g, err
end

-- check_gradient(opts): every route against Richardson differences of a
-- tighter twin (salta.gradcheck).
function Methods:check_gradient(opts)
  return require("salta.gradcheck").check(self, opts)
end

-- residuals(p [, {method = "adjoint", mesh = ...}]): the loss's residuals,
-- or those of the discrete trajectory the adjoint route differentiates.
function Methods:residuals(p, opts)
  opts = grad_opts(opts, "residuals")
  if opts and opts.method == "adjoint" then return select(2, call_adjoint(self, p, opts, false, true)) end
  local _, r = call(self, p, "r")
  return r
end

function Methods:jacobian(p)
  local _, J = call(self, p, "j")
  for _, row in ipairs(J) do apply_log(self, p, row) end
  return J
end

-- stats(): the statistics of the last evaluation's simulation (as
-- trajectory:stats()).
function Methods:stats()
  local st = self.core:stats()
  if st.terminal_event then st.terminal_event = self.model.events[st.terminal_event] end
  require("salta.structure").add_stats(self.model.structure, st)
  return st
end

-- predict(p [, opts]): the loss's predictions (blended when the loss
-- blends) at every target, as columns by output name; with opts = {
-- method = "adjoint", ... }, those of the adjoint's discrete trajectory.
-- Computed as the residuals of a twin loss whose data are all zero.
function Methods:predict(p, opts)
  if #self.times == 0 then return {} end   -- event times alone: no targets
  if not self.zero_twin then
    local zeros = {}
    for _, n in ipairs(self.outputs) do
      zeros[n] = {}
      for i = 1, #self.times do zeros[n][i] = 0.0 end
    end
    -- the user's options, with zero data and neither weights nor sigma: its
    -- residuals are the predictions
    local spec = S.spec_of(self)
    spec.times, spec.data, spec.outputs, spec.weights, spec.sigma = self.times, zeros, self.outputs, nil, nil
    spec.event_data, spec.robust, spec.robust_scale, spec.event_window = nil, nil, nil, nil
    spec.t0, spec.tf = self.t0, self.tf
    self.zero_twin = S.new(spec)
  end
  local r = self.zero_twin:residuals(p, opts)
  local scale, out, no = math.sqrt(#r), {}, #self.outputs
  for j, n in ipairs(self.outputs) do
    out[n] = {}
    for i = 1, #self.times do out[n][i] = r[(i - 1) * no + j] * scale end
  end
  return out
end

function R.install(Loss, shared)
  S = shared
  for k, f in pairs(Methods) do Loss[k] = f end
end

return R
