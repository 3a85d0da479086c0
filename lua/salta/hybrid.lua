-- salta.hybrid: what a model description gains from its hidden states and
-- events, shared by the model DSL (salta.dae) and the spec importer: the
-- modes of if-expressions and the piece indices of input tables (states f
-- keeps constant), the events that switch them, and which reads of input
-- tables the engine checks inside their tables (salta_model_def's
-- ninputs; it sets a given start state's piece indices too).

local expr = require("salta.expr")
local piece = require("salta.piece")

local M = {}

-- add_hidden_states(d, hidden): the hidden states cond.finish() returned,
-- appended to d's states (constant under f; a mode starts as the engine
-- sets it, a piece index at the piece holding its argument at t0, the
-- states it reads at their start values). Sets d.modes and d.hidden.
function M.add_hidden_states(d, hidden)
  local xn, x0, xv = d.x_names, d.x_start, d.vars.x
  local held = false
  for _, h in ipairs(hidden) do
    xn[#xn + 1], x0[#x0 + 1], xv[#xv + 1], d.f[#d.f + 1] = h.name, 0.0, h.var, expr.ZERO
    h.index = #xn
    held = held or h.kind == "input"
  end
  if held then
    d.start = d.start or {}
    local at_start = {}
    for i = 1, #xn do
      d.start[i] = d.start[i] or expr.const(x0[i])
      at_start[xv[i]] = d.start[i]
    end
    local nominal = { [d.vars.t] = 0.0 }
    for i, v in ipairs(d.vars.p) do nominal[v] = d.p_nominal[i] end
    for _, h in ipairs(hidden) do
      if h.kind == "input" then
        local s = expr.subst(h.value, at_start)
        d.start[h.index], at_start[h.var] = s, s
        local ok, v = pcall(expr.eval, s, nominal)
        x0[h.index] = ok and v == v and v or 0.0
      elseif h.kind == "mode" then
        d.start[h.index] = expr.ZERO
      end
    end
  elseif d.start then
    for _, h in ipairs(hidden) do d.start[h.index] = expr.ZERO end
  end
  local modes = {}
  for _, h in ipairs(hidden) do if h.kind == "mode" then modes[#modes + 1] = h end end
  d.modes, d.hidden = modes, hidden
  d.x_mode = d.x_mode or {}
end

-- A piece index's events (salta.piece): up, and down where its argument
-- may decrease, input breakpoints hidden from the trajectory's event list.
-- d.e_input[j] names the input and the direction; a piece index with a
-- down event is marked in x_mode (-(up event)) for the engine to start it
-- on the side its argument heads to.
local function input_events(d, seen)
  d.e_input = d.e_input or {}
  for _, h in ipairs(d.hidden) do
    if h.kind == "input" then
      local u = h.use
      local shown = expr.show(u.arg)
      if (utf8.len(shown) or 0) > 40 then shown = shown:sub(1, utf8.offset(shown, 38) - 1) .. "..." end
      for q, ev in ipairs(piece.events(u.table, h.var, u.arg, h.follow, h.down)) do
        local j = #d.e + 1
        local en = ("input %s(%s) %s"):format(u.name, shown, q == 1 and "next piece" or "previous piece")
        while seen[en] do en = en .. "'" end
        seen[en] = true
        d.e_names[j], d.e_dir[j], d.e[j], d.r[j], d.e_terminal[j] = en, ev[2], ev[1], { [h.index] = ev[3] }, false
        d.e_hidden[j], d.e_breakpoint[j] = true, true
        d.e_input[j] = { read = h, input = u.name, direction = ev[2] }
        if q == 2 then d.x_mode[h.index] = -(j - 1) end
      end
    end
  end
end

-- add_hidden_events(d, name, seen): after the model's own events (seen:
-- their names), the events of its modes and input tables. An
-- if-expression's mode becomes 1 where the compared difference goes below
-- zero and 0 where it goes above (two one-sided events, so that one left
-- at zero by its own switch is armed again as the difference moves away).
function M.add_hidden_events(d, name, seen)
  d.n_declared_events = #d.e   -- the model's own, before the hidden ones
  d.e_terminal, d.e_hidden, d.e_breakpoint = d.e_terminal or {}, d.e_hidden or {}, d.e_breakpoint or {}
  for k, m in ipairs(d.modes) do
    local i = m.index
    for _, side in ipairs({ { "true", -1, 1 }, { "false", 1, 0 } }) do
      local j, r, en = #d.e + 1, {}, ("condition %d %s"):format(k, side[1])
      if seen[en] then
        error(("model '%s': event name '%s' is taken by an if-expression's zero-crossing"):format(name, en), 0)
      end
      r[i] = expr.const(side[3])
      d.e_names[j], d.e_dir[j], d.e[j], d.r[j], d.e_terminal[j] = en, side[2], m.guard, r, false
      if side[3] == 1 then d.x_mode[i] = j end
    end
  end
  input_events(d, seen)
end

-- input_tables(uses_held, uses_other, T): the tables a model reads (for
-- their C source), and the range checks of its reads, which the engine
-- makes before a run: an argument of the parameters alone ("fixed"),
-- affine in t ("affine": its ends on [t0, tf]), or any other followed by a
-- piece index ("start": at t0, its events check the rest).
function M.input_tables(uses_held, uses_other, T)
  local tables, seen, checks, checked = {}, {}, {}, {}
  for _, list in ipairs({ uses_held, uses_other }) do
    for _, u in ipairs(list) do
      if not seen[u.table.hash] then
        seen[u.table.hash] = true
        tables[#tables + 1] = u.table
      end
      local key = u.table.hash .. ":" .. u.arg.id
      local deps, how = expr.deps(u.arg), nil
      local state = false
      for v in pairs(deps) do state = state or v.kind == "x" or v.kind == "z" end
      if not state and not deps[T] then how = "fixed"
      elseif not state and not expr.deps(expr.diff(u.arg, T))[T] then how = "affine"
      elseif u.held then how = "start" end
      if how and not checked[key] then
        checked[key] = true
        checks[#checks + 1] = { name = u.name, table = u.table, arg = u.arg, how = how, T = T, key = key }
      end
    end
  end
  return tables, checks
end

return M
