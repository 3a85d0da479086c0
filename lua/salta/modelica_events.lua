-- salta.modelica_events: a Base Modelica model's when-equations and
-- asserts as salta events (salta.modelica): when-conditions into guards
-- and directions, their bodies into resets (reinit, discrete variables,
-- terminate), asserts into terminal events that raise, or into checks on
-- the parameters alone. S is salta.modelica's translation state.

local expr = require("salta.expr")
local mexpr = require("salta.modelica_expr")

local E = {}

-- Events ------------------------------------------------------------------------

local DIR = { ["<"] = -1, ["<="] = -1, [">"] = 1, [">="] = 1 }

-- A relation between Integer and Boolean values (n >= 3) holds from a
-- jump that lands on its bound: its guard moves half a unit, so that the
-- jump takes it clearly past zero (event iteration fires it).
local SHIFT = { [">="] = 0.5, [">"] = -0.5, ["<="] = -0.5, ["<"] = 0.5 }

local function integer_shift(S, g, op)
  local any = false
  for v in pairs(expr.deps(g)) do
    local decl = v.kind == "x" and v.index > S.ncont and S.vars[v.name]
    if not (decl and decl.base ~= "Real") then return g end
    any = true
  end
  return any and expr.add(g, expr.const(SHIFT[op])) or g
end

-- A when-condition as events: { {guard, dir} }, or { initial = true },
-- { terminal = true }.
local function when_guards(S, c, out)
  out = out or {}
  local k = c.k
  if k == "call" and (c.name == "initial" or c.name == "terminal") then
    out[c.name] = true
    return out
  end
  if k == "call" and (c.name == "edge" or c.name == "change") then
    local g = when_guards(S, c.args[1] or S.fail(c.pos, c.name .. "(...) needs an argument"), {})
    for _, e in ipairs(g) do out[#out + 1] = { guard = e.guard, dir = c.name == "change" and 0 or e.dir } end
    return out
  end
  if k == "array" or k == "or" then
    for _, item in ipairs(k == "array" and c.items or c) do when_guards(S, item, out) end
    return out
  end
  if k == "rel" and DIR[c.op] then
    local a, b = mexpr.value(S.cx, c[1]), mexpr.value(S.cx, c[2])
    out[#out + 1] = { guard = integer_shift(S, expr.sub(a, b), c.op), dir = DIR[c.op] }
    return out
  end
  if k == "name" or k == "not" then
    local t = mexpr.condition(S.cx, c)
    local flip = 1
    while t.k == "not" do t, flip = t[1], -flip end
    if t.k == "val" then out[#out + 1] = { guard = expr.sub(t.v, expr.const(0.5)), dir = flip }; return out end
    if t.k == "cmp" then out[#out + 1] = { guard = expr.sub(t.a, t.b), dir = DIR[t.op] * flip }; return out end
  end
  if k == "call" and c.name == "sample" then S.fail(c.pos, "sample() (a sampled when-equation) is not supported") end
  S.fail(c.pos, "a when-condition must be a relation (x > a), a Boolean variable, edge, change, initial(), "
    .. "terminal(), or several of them in {...} or joined by 'or'")
end

-- Two guards on one difference in opposite directions: one event firing
-- both ways (as to_modelica writes a direction "both").
local function merge_both(list)
  if #list == 2 and list[1].guard == list[2].guard and list[1].dir == -list[2].dir then
    return { { guard = list[1].guard, dir = 0 } }
  end
  return list
end

-- The names read outside pre(...) in an expression.
local function names_now(e, out)
  if type(e) ~= "table" then return out end
  if e.k == "call" and e.name == "pre" then return out end
  if e.k == "name" then out[e.v] = e.pos end
  for _, c in ipairs(e) do names_now(c, out) end
  if e.k == "call" then for _, a in ipairs(e.args) do names_now(a.k == "named" and a.value or a, out) end end
  return out
end

local function x_index(S, name) return S.xvar[name] and S.xvar[name].index end

-- The body of a when-branch: r[index] = value (left limits, as Modelica's
-- reinit and pre read them), and whether it terminates the run.
local function when_body(S, eqs, r, set_here)
  local terminal = false
  for _, eq in ipairs(eqs) do
    if eq.k == "eq" and eq.lhs.k == "name" then
      local n = eq.lhs.v
      if S.kind[n] ~= "discrete" then
        S.fail(eq.pos, ("a when-equation sets '%s', which is not a discrete variable (reinit(...) sets a state)"):format(n))
      end
      for m, pos in pairs(names_now(eq.rhs, {})) do
        if set_here[m] then
          S.fail(pos, ("'%s' is set by this when-equation: read its value before the event as pre(%s)"):format(m, m))
        end
      end
      r[x_index(S, n)] = mexpr.value(S.cx_reset, eq.rhs)
    elseif eq.k == "call" and eq.name == "reinit" then
      local target = eq.args[1]
      if #eq.args ~= 2 or target.k ~= "name" or S.kind[target.v] ~= "state" then
        S.fail(eq.pos, "reinit(x, expr) takes a state and an expression")
      end
      r[x_index(S, target.v)] = mexpr.value(S.cx_reset, eq.args[2])
    elseif eq.k == "call" and eq.name == "terminate" then
      terminal = true
    elseif eq.k == "call" and eq.name == "assert" then
      S.fail(eq.pos, "assert(...) inside a when-equation is not supported")
    else
      S.fail(eq.pos, "a when-equation's body may hold 'discrete = expr', reinit(x, expr) and terminate(...)")
    end
  end
  return terminal
end

-- initial(): the values it sets are start values (of the parameters).
local function initial_actions(S, eqs)
  for _, eq in ipairs(eqs) do
    local n, e = nil, nil
    if eq.k == "eq" and eq.lhs.k == "name" then n, e = eq.lhs.v, eq.rhs
    elseif eq.k == "call" and eq.name == "reinit" and eq.args[1].k == "name" then n, e = eq.args[1].v, eq.args[2] end
    if not (n and S.xvar[n]) then S.fail(eq.pos, "when initial() may set discrete variables and states only") end
    S.start_expr[n] = mexpr.value(S.param_cx, e)
  end
end

function E.when_equation(S, w, events)
  for bi, b in ipairs(w.branches) do
    local g = when_guards(S, b.cond)
    if g.initial then initial_actions(S, b.eqs) end
    if g.initial or g.terminal then goto continue end
    do
      local set_here = {}
      for _, eq in ipairs(b.eqs) do if eq.k == "eq" and eq.lhs.k == "name" then set_here[eq.lhs.v] = true end end
      g = merge_both(g)
      local desc = w.comment.description
      for m, gd in ipairs(g) do
        local r = {}
        local terminal = when_body(S, b.eqs, r, set_here)
        local label = desc and (desc .. (bi > 1 and (" elsewhen " .. (bi - 1)) or "") .. (#g > 1 and (" " .. m) or ""))
        events[#events + 1] = { guard = gd.guard, dir = gd.dir, r = r, terminal = terminal, comment = label }
      end
    end
    ::continue::
  end
end

-- Asserts -------------------------------------------------------------------------

local function message(e)
  if e.k == "str" then return e.v end
  if e.k == "bin" and e.op == "+" then return message(e[1]) .. message(e[2]) end
  return "..."
end

-- assert(cond, message, level): a terminal event where a relation of the
-- condition stops holding (a run that reaches one raises, naming the
-- message); a condition on the parameters alone is checked when the
-- model is built and at every simulate. Warnings are dropped.
function E.assert_equation(S, a, events)
  local cnd, msg, level = a.args[1], a.args[2], a.args[3]
  if not (cnd and msg) then S.fail(a.pos, "assert(condition, message [, level]) needs a condition and a message") end
  if level and level.k == "name" and level.v:match("warning$") then return end
  local text = message(msg)
  while cnd.k == "call" and cnd.name == "noEvent" do cnd = cnd.args[1] end
  local rels = cnd.k == "and" and cnd or { cnd }
  for _, rel in ipairs(rels) do
    while rel.k == "call" and rel.name == "noEvent" do rel = rel.args[1] end
    if rel.k ~= "rel" or not DIR[rel.op] then
      S.fail(rel.pos, "an assert's condition must be relations (<, <=, >, >=) joined by 'and'")
    end
    local g = expr.sub(mexpr.value(S.cx, rel[1]), mexpr.value(S.cx, rel[2]))
    local check = { guard = g, dir = -DIR[rel.op], message = text, pos = a.pos }
    events[#events + 1] = { guard = g, dir = check.dir, r = {}, terminal = true, comment = "assert: " .. text,
      assert = check }
  end
end

-- The asserts whose condition reads the parameters alone (once the known
-- algebraics are substituted) are checked outside the run; the others
-- stay events, each named by its message.
function E.split_asserts(S, go)
  local kept, count = {}, {}
  for _, ev in ipairs(S.events) do
    local keep = true
    if ev.assert then
      ev.guard = go(ev.guard)
      ev.assert.guard = ev.guard
      keep = false
      for v in pairs(expr.deps(ev.guard)) do keep = keep or v.kind ~= "p" end
      if keep then
        count[ev.comment] = (count[ev.comment] or 0) + 1
        if count[ev.comment] > 1 then ev.comment = ("%s (%d)"):format(ev.comment, count[ev.comment]) end
      else
        S.static_asserts[#S.static_asserts + 1] = ev.assert
      end
    end
    if keep then kept[#kept + 1] = ev end
  end
  S.events = kept
end

return E
