-- salta.hybrid: what a model description gains from its hidden states and
-- events, shared by the model DSL (salta.dae) and the spec importer: the
-- modes of if-expressions and the held values of step inputs (states f
-- keeps constant), the events that switch them, and the breakpoint events
-- and range checks of input tables.

local expr = require("salta.expr")

local M = {}

-- add_hidden_states(d, hidden): the hidden states cond.finish() returned,
-- appended to d's states (constant under f; a mode starts as the engine
-- sets it, a held step input at the table's value at t0, a start
-- expression the engine evaluates at t0). Sets d.modes and d.hidden.
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
    for i = 1, #xn do d.start[i] = d.start[i] or expr.const(x0[i]) end
    for _, h in ipairs(hidden) do
      if h.kind == "input" then
        d.start[h.index] = h.value
        x0[h.index] = h.nominal
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

-- A table read in f or g at an argument that moves with t: each
-- breakpoint is an event without a reset (hidden from the trajectory's
-- event list), so that no step crosses a kink or a jump.
local function input_events(d, uses, T, seen)
  local done = {}
  for _, u in ipairs(uses) do
    local key = u.table.hash .. ":" .. u.arg.id
    if not done[key] and expr.deps(u.arg)[T] then
      done[key] = true
      for k, tk in ipairs(u.table:breakpoints()) do
        local j, r = #d.e + 1, {}
        -- a held input takes the piece after the breakpoint (point k + 1)
        if u.held then
          local piece = u.table:piece(k + 1)
          for q, h in ipairs(u.held) do r[h.index] = expr.const(piece[q]) end
        end
        local en = ("input %s breakpoint %d"):format(u.name, k)
        while seen[en] do en = en .. "'" end
        seen[en] = true
        d.e_names[j], d.e_dir[j], d.e[j], d.r[j], d.e_terminal[j] = en, 1, u.arg - tk, r, false
        d.e_hidden[j], d.e_breakpoint[j] = true, true
      end
    end
  end
end

-- add_hidden_events(d, name, uses_fg, T, seen): after the model's own
-- events (seen: their names), the events of its modes and input tables.
-- An if-expression's mode becomes 1 where the compared difference goes
-- below zero and 0 where it goes above (two one-sided events, so that one
-- left at zero by its own switch is armed again as the difference moves
-- away).
function M.add_hidden_events(d, name, uses_fg, T, seen)
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
  input_events(d, uses_fg, T, seen)
end

-- input_tables(uses_fg, uses_other, T): the tables a model reads (for
-- their C source), and the range checks of its reads: an argument t +
-- shift(p), or one of the parameters alone.
function M.input_tables(uses_fg, uses_other, T)
  local tables, seen, checks = {}, {}, {}
  for _, list in ipairs({ uses_fg, uses_other }) do
    for _, u in ipairs(list) do
      if not seen[u.table.hash] then
        seen[u.table.hash] = true
        tables[#tables + 1] = u.table
      end
      local dt = expr.diff(u.arg, T)
      if dt.op == "const" and dt.value == 1 then
        checks[#checks + 1] = { name = u.name, table = u.table, arg = u.arg, shift = expr.subst(u.arg, { [T] = expr.ZERO }) }
      elseif not expr.deps(u.arg)[T] then
        checks[#checks + 1] = { name = u.name, table = u.table, arg = u.arg, fixed = u.arg }
      end
    end
  end
  return tables, checks
end

return M
