-- salta.jumps: which outputs of a model jump at which of its events, and
-- by how much at a run.
--
-- Structurally: output y can jump at event e when it reads (through h) a
-- state that e's reset writes (a discrete variable, a mode, a state reset
-- to a new value, the piece index of a step table), or an algebraic that
-- depends through g on one of those or on such an algebraic. The piece
-- index of a linear or cubic table moves at its breakpoints but the value
-- read stays continuous, so those breakpoints make no output jump.
-- Numerically: at an event of a run, the outputs at the left limits
-- (x-, z-) and at the right ones (x+, z+) differ.
--
--   local J = require("salta.jumps").structural(m)   -- J[e][y] = true
--   local list = require("salta.jumps").at(m, tr, p, { "i" })

local index_of = require("salta.names").index_of

local M = {}

-- The pattern of function fn (h or g) by wrt as rows: row -> {column, ...}.
local function rows_of(model, fn, wrt)
  local out = {}
  local rows, cols = model.core:pattern(fn, 1, wrt)
  for k, r in ipairs(rows) do
    out[r] = out[r] or {}
    table.insert(out[r], cols[k])
  end
  return out
end

-- The states event e's reset changes: those its reset names with a value
-- other than themselves; none for the breakpoints of a table read whose
-- value is continuous there.
local function written(d, e)
  local out = {}
  local input = d.e_input and d.e_input[e]
  if input and input.read.use.table.interp ~= "step" then return out end
  for i, v in pairs(d.r[e] or {}) do
    if v ~= d.vars.x[i] then out[i] = true end
  end
  return out
end

-- structural(model): J[e][y] = true where output y (an index of
-- model.outputs) can jump at event e (an index of the engine's events,
-- hidden ones included); cached on the model. A model without its
-- symbolic description (compiled ahead of time) has every output jump at
-- every event.
function M.structural(model)
  if model._jumps then return model._jumps end
  local d, ne, ny = model.symbolic, #model.events, #model.outputs
  local J = {}
  if not (d and d.r and d.vars) then
    for e = 1, ne do
      J[e] = {}
      for y = 1, ny do J[e][y] = true end
    end
    model._jumps = J
    return J
  end
  local gx, gz = rows_of(model, "g", "x"), rows_of(model, "g", "z")
  local hx, hz = rows_of(model, "h", "x"), rows_of(model, "h", "z")
  for e = 1, ne do
    local cx, cz = written(d, e), {}
    local grown = true
    while grown do   -- the algebraics that follow through g
      grown = false
      for i = 1, #model.algebraics do
        local hit = false
        for _, c in ipairs(gx[i] or {}) do hit = hit or cx[c] end
        for _, c in ipairs(gz[i] or {}) do hit = hit or cz[c] end
        for _, c in ipairs(hit and gz[i] or {}) do
          if not cz[c] then cz[c], grown = true, true end
        end
      end
    end
    J[e] = {}
    for y = 1, ny do
      local hit = false
      for _, c in ipairs(hx[y] or {}) do hit = hit or cx[c] == true end
      for _, c in ipairs(hz[y] or {}) do hit = hit or cz[c] == true end
      J[e][y] = hit
    end
  end
  model._jumps = J
  return J
end

-- at(model, tr, p, outputs [, scale]): the jumps of the named outputs at
-- the events of trajectory tr (simulated at parameters p, an array over
-- model.params), by output and event: a list of { output, event, count
-- (the event's occurrences where the output jumps), size (the largest
-- |y+ - y-|), t (the first) }, where the structure allows a jump and the
-- values differ by more than 1e-6 of scale[output] (the output's size,
-- e.g. its data's; default 0) and 1e-9 of theirs. The breakpoints of step
-- tables are not in tr:events(): their jumps are the structure's alone.
function M.at(model, tr, p, outputs, scale)
  local J = M.structural(model)
  local yidx = index_of(model.outputs)
  local eidx = index_of(model.events)
  local found, list = {}, {}
  local function array(names, values)
    local a = {}
    for i, n in ipairs(names) do a[i] = values[n] end
    return a
  end
  for _, ev in ipairs(tr:events()) do
    local e = ev.index or eidx[ev.name]
    local ym, yp
    for _, n in ipairs(outputs) do
      local y = yidx[n]
      if J[e] and J[e][y] then
        ym = ym or model:eval("h", ev.t, array(model.states, ev.x_minus), array(model.algebraics, ev.z_minus), p)
        yp = yp or model:eval("h", ev.t, array(model.states, ev.x_plus), array(model.algebraics, ev.z_plus), p)
        local size = math.abs(yp[y] - ym[y])
        if size > math.max(1e-6 * (scale and scale[n] or 0), 1e-9 * math.max(math.abs(yp[y]), math.abs(ym[y])))
          and size > 0 then
          local key = n .. "\0" .. ev.name
          local rec = found[key]
          if not rec then
            rec = { output = n, event = ev.name, count = 0, size = 0, t = ev.t }
            found[key] = rec
            list[#list + 1] = rec
          end
          rec.count, rec.size = rec.count + 1, math.max(rec.size, size)
        end
      end
    end
  end
  return list
end

return M
