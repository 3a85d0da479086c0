-- salta.profile_view: a loss with one free parameter held at a value, a
-- loss of the interface salta.loss_interface over the others: what a
-- profile likelihood (salta.profile) re-fits at each of its points.

local M = {}

-- A loss with free parameter k held at value: a loss of the interface
-- salta.loss_interface over the other free parameters.
local View = {}
View.__index = View

local function view(loss, k, value)
  local v = setmetatable({ base = loss, k = k, held = value, free = {}, log = {} }, View)
  for i, n in ipairs(loss.free) do
    if i ~= k then v.free[#v.free + 1], v.log[#v.log + 1] = n, loss.log[i] end
  end
  v.times, v.t0 = loss.times, loss.t0
  return v
end
M.new = view

-- The base loss's point: p (an array over the view's free parameters, or
-- a table by their names) with the held value.
function View:full(p)
  if type(p) ~= "table" then error("salta.profile: parameters must be an array or a table by name", 3) end
  if #p == 0 and next(p) ~= nil then
    local out = {}
    for key, v in pairs(p) do
      if key == self.base.free[self.k] then
        error(("salta.profile: '%s' is held at %.17g, not free (free: %s)"):format(key, self.held,
          table.concat(self.free, ", ")), 3)
      end
      out[key] = v
    end
    out[self.base.free[self.k]] = self.held
    return out
  end
  if #p ~= #self.free then
    error(("salta.profile: %d parameter values, expected %d (%s)"):format(#p, #self.free,
      table.concat(self.free, ", ")), 3)
  end
  local out, j = {}, 0
  for i = 1, #self.base.free do
    if i == self.k then out[i] = self.held else j = j + 1; out[i] = p[j] end
  end
  return out
end

local function drop(self, g)
  local out = {}
  for i, x in ipairs(g) do if i ~= self.k then out[#out + 1] = x end end
  return out
end

function View:value(p, o) return self.base:value(self:full(p), o) end
function View:value_and_grad(p, o)
  local v, g = self.base:value_and_grad(self:full(p), o)
  return v, drop(self, g)
end
function View:grad(p, o) return select(2, self:value_and_grad(p, o)) end
function View:residuals(p) return self.base:residuals(self:full(p)) end
function View:jacobian(p)
  local J = self.base:jacobian(self:full(p))
  for r, row in ipairs(J) do J[r] = drop(self, row) end
  return J
end
function View:mesh_check(p, o) return self.base:mesh_check(self:full(p), o) end
function View:nominal() return nil end
function View:attributes(k)
  if not self.base.attributes then return {} end
  return self.base:attributes(k < self.k and k or k + 1)
end
function View:residual_counts() return self.base:residual_counts() end
function View:absolute() return self.base:absolute() end
function View:log_sigma() return self.base.log_sigma and self.base:log_sigma() end
function View:window(t_end) return view(self.base:window(t_end), self.k, self.held) end
function View:stats() return self.base:stats() end

return M
