-- salta.frontend: helpers shared by the importers of model files (the
-- spec importer salta.spec and the Base Modelica importer
-- salta.modelica), which build the symbolic description a salta.dae{}
-- model traces to.

local expr = require("salta.expr")
local input = require("salta.input")

local M = {}

-- make_vars(kind, names): one leaf per name, numbered in order.
function M.make_vars(kind, names)
  local v = {}
  for i, n in ipairs(names) do v[i] = expr.var(kind, i, n) end
  return v
end

-- event_names(clauses): each clause's comment when it names that clause
-- only, else when<i>; never one name twice.
function M.event_names(clauses)
  local count, names, used = {}, {}, {}
  for _, c in ipairs(clauses) do
    if type(c.comment) == "string" then count[c.comment] = (count[c.comment] or 0) + 1 end
  end
  for j, c in ipairs(clauses) do
    local n = (type(c.comment) == "string" and c.comment ~= "" and count[c.comment] == 1) and c.comment
      or ("when" .. j)
    local base, k = n, 1
    while used[n] do k = k + 1; n = base .. "_" .. k end
    used[n], names[j] = true, n
  end
  return names
end

-- with_inputs(env, d, inputs, uses, held): an environment whose input
-- names read their table: name(arg), or the name alone at time; reads are
-- collected in uses (held: piece by piece, in f, g, h and guards).
function M.with_inputs(env, d, inputs, uses, held)
  local proxy = input.proxy(d.name, inputs, uses, d.vars.t, held)
  local out = setmetatable({}, { __index = env })
  for n in pairs(inputs) do
    local read = proxy[n]
    out[n] = function(arg) return read(arg or d.vars.t) end
  end
  return out
end

return M
