-- salta.modelica_equations: a Base Modelica model's equations as salta
-- residual rows (salta.modelica): equations and if-equations into
-- residuals, algebraics the parameters and the time alone give
-- substituted, der(x) solved where an equation is linear in it. S is
-- salta.modelica's translation state.

local expr = require("salta.expr")
local mexpr = require("salta.modelica_expr")

local Q = {}

-- Residuals ------------------------------------------------------------------

local function is_zero(n) return n.op == "const" and n.value == 0 end

-- lhs = rhs as a residual: 0 = e and e = 0 give e, else lhs - rhs.
local function residual(S, eq)
  local l, r = mexpr.value(S.cx, eq.lhs), mexpr.value(S.cx, eq.rhs)
  if is_zero(l) then return r end
  if is_zero(r) then return l end
  return expr.sub(l, r)
end


-- An if-equation: a branch chosen now when its condition is a constant,
-- else each equation's residual an if-expression over the branches.
local function if_equation(S, eq, out)
  local lists, conds = {}, {}
  for i, b in ipairs(eq.branches) do
    local c = mexpr.condition(S.cx, b.cond)
    if c.k == "const" then
      if c.v then return Q.residuals(S, b.eqs, out) end
    else
      conds[#conds + 1] = c
      lists[#lists + 1] = Q.residuals(S, b.eqs, {})
    end
    if i == #eq.branches and #conds == 0 then return Q.residuals(S, eq.otherwise or {}, out) end
  end
  local other = Q.residuals(S, eq.otherwise or {}, {})
  for i, l in ipairs(lists) do
    if #l ~= #other then
      S.fail(eq.pos, ("the branches of an if-equation with a condition that varies must have as many equations "
        .. "(branch %d has %d, the else branch %d)"):format(i, #l, #other))
    end
  end
  for k = 1, #other do
    local acc = other[k].e
    for i = #lists, 1, -1 do acc = expr.lift(mexpr.select(conds[i], lists[i][k].e, acc)) end
    out[#out + 1] = { e = acc, pos = eq.pos }
  end
  return out
end

function Q.residuals(S, list, out)
  for _, eq in ipairs(list) do
    if eq.k == "eq" then
      local lhs = eq.lhs.k == "name" and eq.lhs.v
      if not (lhs and (S.defined[lhs] == eq or S.output_def[lhs] == eq)) then
        out[#out + 1] = { e = residual(S, eq), pos = eq.pos }
      end
    elseif eq.k == "if" then if_equation(S, eq, out)
    elseif eq.k == "when" then S.whens[#S.whens + 1] = eq
    elseif eq.k == "call" and eq.name == "assert" then S.asserts[#S.asserts + 1] = eq
    elseif eq.k == "call" then
      S.fail(eq.pos, ("%s(...) outside a when-equation is not supported"):format(eq.name))
    end
  end
  return out
end


-- Known algebraics -----------------------------------------------------------

-- An algebraic that a residual gives from the parameters, the time and
-- discrete values alone (linear in it, a constant coefficient): its value
-- and the residual's solved. nil otherwise.
local function known(S, e, zset, value)
  local z
  for v in pairs(expr.deps(e)) do
    if zset[v] and not value[v] then
      if z then return nil end
      z = v
    elseif v.kind == "u" or (v.kind == "x" and v.index <= S.ncont) then
      return nil
    end
  end
  if not z then return nil end
  local c = expr.diff(e, z)
  if c.op ~= "const" or c.value == 0 then return nil end
  return z, expr.solve_linear(e, z)
end

-- Substitutes every algebraic known that way (a ground's 0, a source's
-- signal, a fixed temperature) into the other residuals, so that a
-- constraint between states behind them reaches the index reduction.
-- rows[k].removed marks the rows used; returns var -> value.
function Q.eliminate_known(S, rows)
  local zset, holders, value, queue = {}, {}, {}, {}
  for _, v in pairs(S.zvar) do zset[v] = true end
  for k, r in ipairs(rows) do
    for v in pairs(expr.deps(r.e)) do
      if zset[v] then holders[v] = holders[v] or {}; holders[v][#holders[v] + 1] = k end
    end
    queue[#queue + 1] = k
  end
  local head = 1
  while head <= #queue do
    local k = queue[head]
    head = head + 1
    local r = rows[k]
    local z, val = nil, nil
    if not r.removed then z, val = known(S, r.e, zset, value) end
    if z then
      value[z], r.removed = val, true
      for _, k2 in ipairs(holders[z]) do
        if not rows[k2].removed then
          rows[k2].e = expr.subst(rows[k2].e, { [z] = val })
          queue[#queue + 1] = k2
        end
      end
    end
  end
  return value
end

-- Derivatives ----------------------------------------------------------------

-- The unknowns (der placeholders, algebraics) a residual reads.
local function unknowns(e, col)
  local out = {}
  for _, v in ipairs(expr.sorted_deps(e)) do if col[v] then out[#out + 1] = col[v] end end
  return out
end

-- der(x) from one residual: linear in it, reading no other der(...) not
-- yet solved; nil otherwise.
local function solve_for(e, D, pending)
  local deps = expr.deps(e)
  if not deps[D] then return nil end
  for v in pairs(deps) do if v ~= D and pending[v] then return nil end end
  local c = expr.diff(e, D)
  if expr.deps(c)[D] or (c.op == "const" and c.value == 0) then return nil end
  return expr.solve_linear(e, D)
end

-- f for each state: der(x) solved from the residual a matching of
-- residuals to unknowns gives it (or another one holding it), where it
-- is linear; else an algebraic named der(x) that the structural compiler
-- solves with the rest. Marks the residuals used.
function Q.solve_derivatives(S, rows)
  local col, ncol, live = {}, 0, {}
  for i = 1, S.ncont do
    local D = S.D[S.x[i].name]
    ncol = ncol + 1
    col[D] = ncol
  end
  for _, v in ipairs(S.z) do
    local zv = S.zvar[v.name]
    if not S.known[zv] then ncol = ncol + 1; col[zv] = ncol end
  end
  local adj = {}
  for _, r in ipairs(rows) do
    if not r.removed then live[#live + 1] = r; adj[#live] = unknowns(r.e, col) end
  end
  local row_of = require("salta.structure").match(adj, ncol)
  local pending, f, solved = {}, {}, {}
  for i = 1, S.ncont do pending[S.D[S.x[i].name]] = i end
  local progress = true
  while progress do
    progress = false
    for i = 1, S.ncont do
      local D = S.D[S.x[i].name]
      if not f[i] then
        local tries = { row_of[col[D]] }
        for k in ipairs(live) do tries[#tries + 1] = k end
        for _, k in ipairs(tries) do
          local r = live[k]
          if r and not r.removed then
            local e = expr.subst(r.e, solved)
            local sol = solve_for(e, D, pending)
            if sol then
              f[i], solved[D], pending[D], r.removed, progress = sol, sol, nil, true, true
              break
            end
          end
        end
      end
    end
  end
  return f
end

return Q
