-- salta.structure: the structural compiler, between tracing and code
-- generation. It rewrites a model description (salta.model.describe, or
-- the spec importer's) so the engine solves g = 0 cheaply:
--
--   1. aliases: an equation 0 = a -/+ b (a algebraic, b algebraic or
--      state) removes a; every expression reads +/- b instead, and the
--      trajectory still gives a by name;
--   2. index reduction: an equation that constrains states alone is kept,
--      differentiated along f, and one of its states becomes algebraic (a
--      dummy derivative, chosen where the constraint's Jacobian is largest
--      at the start), until every equation reaches an algebraic;
--   3. BLT: a matching of equations to algebraics, then the strongly
--      connected components (Tarjan) in the order they must be solved;
--   4. each scalar block linear in its unknown becomes an assignment; each
--      loop is torn (greedy: assign what one equation gives explicitly,
--      else tear the unknown that occurs most often) and, when its one
--      residual is linear in its one tearing variable, solved explicitly
--      too; the rest is a Newton block on the tearing variables alone.
--
-- The description gains z_block, nblocks, block_stage, z_segments and
-- pivots (the dummies' pivots, which the engine checks along a run) for
-- the code generator (see salta_kernel.h) and d.structure for the user.

local expr = require("salta.expr")

local M = {}

local function fail(d, fmt, ...)
  error(("model '%s': " .. fmt):format(d.name, ...), 0)
end

-- The algebraics (as a set of var nodes) an expression depends on.
local function z_deps(e, zset)
  local out = {}
  for _, v in ipairs(expr.sorted_deps(e)) do if zset[v] then out[#out + 1] = v end end
  return out
end

-- Renumbering ----------------------------------------------------------------

-- Keeps the states and algebraics whose keep flags are set, appends the
-- new algebraics (dummies: {name, start}), gives every kept variable a
-- fresh leaf numbered by its new place and rewrites every expression.
-- extra maps an old leaf to what replaces it (an alias's expression).
local function renumber(d, keep_x, keep_z, new_z, extra)
  local map = {}
  for k, v in pairs(extra) do map[k] = v end
  local xn, x0, xv, f, xmode, xmap = {}, {}, {}, {}, {}, {}
  for i, v in ipairs(d.vars.x) do
    if keep_x[i] then
      local j = #xn + 1
      xn[j], x0[j], f[j], xmap[i] = d.x_names[i], d.x_start[i], d.f[i], j
      xv[j] = expr.var("x", j, d.x_names[i])
      if xv[j] ~= v then map[v] = xv[j] end
      xmode[j] = d.x_mode and d.x_mode[i]
    end
  end
  local zn, z0, zv = {}, {}, {}
  local function add_z(name, start, old)
    local j = #zn + 1
    zn[j], z0[j] = name, start
    zv[j] = expr.var("z", j, name)
    if old and zv[j] ~= old then map[old] = zv[j] end
  end
  for i, v in ipairs(d.vars.z) do
    if keep_z[i] then add_z(d.z_names[i], d.z_start[i], v) end
  end
  for _, nz in ipairs(new_z) do add_z(nz.name, nz.start, nz.var) end
  local go = expr.substituter(map)
  local function all(list)
    local out = {}
    for i, e in ipairs(list) do out[i] = go(e) end
    return out
  end
  for _, k in ipairs(expr.sorted(extra)) do map[k] = go(extra[k]) end
  d.f, d.g, d.h, d.e = all(f), all(d.g), all(d.h), all(d.e)
  for j, r in ipairs(d.r) do
    local out = {}
    for i = 1, #d.vars.x do
      if r[i] ~= nil and xmap[i] then out[xmap[i]] = go(r[i]) end
    end
    d.r[j] = out
  end
  if d.start then
    local s = {}
    for i, e in ipairs(d.start) do if xmap[i] then s[xmap[i]] = go(e) end end
    d.start = s
  end
  for _, h in ipairs(d.hidden or {}) do
    h.index = xmap[h.index]; h.var = xv[h.index]
    if h.value then h.value = go(h.value) end
  end
  for _, c in ipairs(d.input_checks or {}) do c.arg = go(c.arg) end
  d.n_continuous = d.n_continuous and (function()
    local n = 0
    for i = 1, d.n_continuous do if xmap[i] then n = n + 1 end end
    return n
  end)()
  d.x_names, d.x_start, d.x_mode = xn, x0, xmode
  d.z_names, d.z_start = zn, z0
  d.vars.x, d.vars.z = xv, zv
  return go
end

-- 1. Aliases ------------------------------------------------------------------

-- 0 = c1 a + c2 b with |c1| = |c2| and a algebraic: a = -(c2/c1) b.
local function alias_of(e, zset)
  local vs = expr.sorted_deps(e)
  if #vs ~= 2 or not (zset[vs[1]] or zset[vs[2]]) then return nil end
  local c1, c2 = expr.diff(e, vs[1]), expr.diff(e, vs[2])
  if c1.op ~= "const" or c2.op ~= "const" or math.abs(c1.value) ~= math.abs(c2.value) or c1.value == 0 then
    return nil
  end
  if expr.subst(e, { [vs[1]] = expr.ZERO, [vs[2]] = expr.ZERO }) ~= expr.ZERO then return nil end
  if vs[1].kind ~= "x" and vs[1].kind ~= "z" or vs[2].kind ~= "x" and vs[2].kind ~= "z" then return nil end
  local a, b, ca, cb = vs[1], vs[2], c1.value, c2.value
  if not zset[a] or (zset[b] and b.index > a.index) then a, b, ca, cb = b, a, cb, ca end
  return a, b, -cb / ca
end

local function eliminate_aliases(d, info)
  local zset = {}
  for _, v in ipairs(d.vars.z) do zset[v] = true end
  local repl, keep_z, rows = {}, {}, {}
  for i = 1, #d.vars.z do keep_z[i] = true end
  local resolve = expr.substituter(repl)
  for _, e in ipairs(d.g) do
    local r = resolve(e)
    if next(expr.deps(r)) == nil then
      fail(d, "structurally singular: equation 0 = %s repeats another (it reads 0 = %s once the aliases "
        .. "before it are used), so an algebraic is left without an equation", expr.show(e), expr.show(r))
    end
    local a, b, sign = alias_of(r, zset)
    if a and not repl[a] and a ~= b then
      repl[a] = sign == 1 and b or expr.neg(b)
      keep_z[a.index] = false
      resolve = expr.substituter(repl)
    else
      rows[#rows + 1] = e
    end
  end
  if next(repl) == nil then return end
  -- chains: each alias to its final variable
  local final = expr.substituter(repl)
  local aliases = {}
  for _, a in ipairs(expr.sorted(repl)) do aliases[#aliases + 1] = { name = a.name, var = a, expr = final(repl[a]) } end
  local extra = {}
  for _, al in ipairs(aliases) do extra[al.var] = al.expr end
  d.g = rows
  local keep_x = {}
  for i = 1, #d.vars.x do keep_x[i] = true end
  local go = renumber(d, keep_x, keep_z, {}, extra)
  for _, al in ipairs(aliases) do
    local e = go(al.expr)
    local neg = e.op == "neg"
    local v = neg and e[1] or e
    info.aliases[#info.aliases + 1] = { name = al.name, of = v.name, kind = v.kind, sign = neg and -1 or 1 }
  end
end

-- Matching --------------------------------------------------------------------

-- A maximum matching of rows (each a list of column indices) to ncol
-- columns by augmenting paths (iterative): row_of[col], col_of[row].
local function match(adj, ncol)
  local row_of, col_of = {}, {}
  for r, cols in ipairs(adj) do   -- greedy start
    for _, c in ipairs(cols) do
      if not row_of[c] then row_of[c], col_of[r] = r, c; break end
    end
  end
  for r = 1, #adj do
    if not col_of[r] then
      local seen, stack, parent = {}, { { r, 1 } }, {}
      local found
      while #stack > 0 and not found do
        local top = stack[#stack]
        local row, k = top[1], top[2]
        local c = adj[row][k]
        if not c then
          stack[#stack] = nil
        else
          top[2] = k + 1
          if not seen[c] then
            seen[c] = true
            parent[c] = row
            if not row_of[c] then found = c
            else stack[#stack + 1] = { row_of[c], 1 } end
          end
        end
      end
      while found do   -- flip the path
        local row = parent[found]
        local prev = col_of[row]
        row_of[found], col_of[row] = row, found
        found = prev
      end
    end
  end
  return row_of, col_of
end
M.match = match

-- 2. Index reduction -------------------------------------------------------------

local function start_env(d)
  local env = { [d.vars.t] = 0.0 }
  for i, v in ipairs(d.vars.x) do env[v] = d.x_start[i] end
  for i, v in ipairs(d.vars.z) do env[v] = d.z_start[i] end
  for i, v in ipairs(d.vars.p) do env[v] = d.p_nominal[i] end
  return env
end

-- The dummy of constraint e (row k of st.rows): the state new at this
-- level whose partial derivative is largest at the start values; and the
-- squared gradient of e over the candidates, as an expression.
local function choose_dummy(d, st, e, k)
  local best, bestv, grad2
  for _, v in ipairs(expr.sorted_deps(e)) do
    if st.xidx[v] and not st.dummy[v] and not st.parent_deps[k][v] then
      local dv = expr.diff(e, v)
      local s = math.abs(expr.eval(dv, st.env))
      if not best or s > bestv or (s == bestv and v.index < best.index) then best, bestv = v, s end
      grad2 = grad2 and expr.add(grad2, expr.mul(dv, dv)) or expr.mul(dv, dv)
    end
  end
  if not best then
    fail(d, "structurally singular: equation 0 = %s constrains no state whose derivative f gives, "
      .. "so no index reduction can make it solvable", expr.show(e))
  end
  return best, grad2
end

-- Differentiates constraint row k: its dummy made algebraic, its pivot
-- kept for the engine's check, and d e / dt along x' = f appended as a row.
local function differentiate(d, info, st, k)
  local e = st.rows[k]
  local best, grad2 = choose_dummy(d, st, e, k)
  st.dummy[best] = true
  st.dummies[#st.dummies + 1] = best
  -- the pivot, de/d(dummy), must stay away from 0 against the gradient
  -- over the states the dummy was chosen from: the engine checks it
  -- along the run (a constant one cannot vanish)
  local piv = expr.diff(e, best)
  if piv.op ~= "const" or piv.value == 0 then
    st.pivots[#st.pivots + 1] = { dummy = best.name, equation = expr.show(e), pivot = piv,
      scale = expr.unary("sqrt", grad2) }
  end
  local de = expr.diff(e, d.vars.t)
  for _, v in ipairs(expr.sorted_deps(e)) do
    if st.xidx[v] then de = expr.add(de, expr.mul(expr.diff(e, v), d.f[st.xidx[v]])) end
  end
  st.rows[#st.rows + 1] = de
  local pd = {}
  for v in pairs(expr.deps(e)) do pd[v] = true end
  st.parent_deps[#st.rows] = pd
  info.differentiated[#info.differentiated + 1] = { equation = expr.show(e), dummy = best.name }
end

-- The dummies must stay algebraic: no reset may set one, and a state must
-- be left to integrate.
local function check_dummies(d, st)
  for _, v in ipairs(st.dummies) do
    for j, r in ipairs(d.r) do
      if r[v.index] ~= nil and r[v.index] ~= v then
        fail(d, "event '%s' resets '%s', which index reduction made algebraic (a dummy derivative)",
          d.e_names[j], v.name)
      end
    end
  end
  local left = 0
  for i = 1, st.ncont do if not st.dummy[d.vars.x[i]] then left = left + 1 end end
  if left == 0 then
    local names, eqs = {}, {}
    for q, v in ipairs(st.dummies) do names[q] = "'" .. v.name .. "'" end
    for q = 1, #d.g do if #z_deps(d.g[q], st.zset) == 0 then eqs[#eqs + 1] = "0 = " .. expr.show(d.g[q]) end end
    fail(d, "index reduction leaves no differential state: the constraints %s fix %s (every state), so "
      .. "the model has no dynamics to integrate", table.concat(eqs, ", "), table.concat(names, ", "))
  end
end

-- The description rewritten: the dummies become algebraics, g gains the
-- differentiated rows, and the pivots are renumbered with it.
local function make_dummies_algebraic(d, info, st)
  local keep_x, keep_z, new_z = {}, {}, {}
  for i = 1, #d.vars.x do keep_x[i] = not st.dummy[d.vars.x[i]] end
  for i = 1, #d.vars.z do keep_z[i] = true end
  for _, v in ipairs(st.dummies) do new_z[#new_z + 1] = { name = v.name, start = d.x_start[v.index], var = v } end
  d.g = st.rows
  local go = renumber(d, keep_x, keep_z, new_z, {})
  for _, pv in ipairs(st.pivots) do pv.pivot, pv.scale = go(pv.pivot), go(pv.scale) end
  d.pivots = st.pivots
  local made_algebraic = {}
  for _, v in ipairs(st.dummies) do
    info.dummies[#info.dummies + 1] = v.name
    made_algebraic[v.name] = true
  end
  for _, al in ipairs(info.aliases) do
    if al.kind == "x" and made_algebraic[al.of] then al.kind = "z" end
  end
end

local function reduce_index(d, info)
  local st = { zset = {}, xidx = {}, rows = {}, parent_deps = {}, dummy = {}, dummies = {}, pivots = {},
    env = start_env(d), ncont = d.n_continuous or #d.vars.x }
  for _, v in ipairs(d.vars.z) do st.zset[v] = true end
  for i = 1, st.ncont do
    if d.f[i] ~= expr.ZERO then st.xidx[d.vars.x[i]] = i end
  end
  for i, e in ipairs(d.g) do st.rows[i] = e; st.parent_deps[i] = {} end
  local done, k = {}, 1
  while k <= #st.rows do
    if not done[k] and #z_deps(st.rows[k], st.zset) == 0 then
      done[k] = true
      if #st.rows > 4 * #d.g + 8 then fail(d, "index reduction does not end (equation %s)", expr.show(d.g[1])) end
      differentiate(d, info, st, k)
    end
    k = k + 1
  end
  if #st.dummies == 0 then return end
  check_dummies(d, st)
  make_dummies_algebraic(d, info, st)
end

-- 3. BLT --------------------------------------------------------------------------

-- Tarjan's strongly connected components of the graph row -> rows (succ),
-- iterative; components come out with what they depend on first.
local function tarjan(n, succ)
  local index, low, on, stack, comps, counter = {}, {}, {}, {}, {}, 0
  for root = 1, n do
    if not index[root] then
      local work = { { root, 1 } }
      counter = counter + 1
      index[root], low[root] = counter, counter
      stack[#stack + 1], on[root] = root, true
      while #work > 0 do
        local top = work[#work]
        local v, k = top[1], top[2]
        local w = succ[v][k]
        if w then
          top[2] = k + 1
          if not index[w] then
            counter = counter + 1
            index[w], low[w] = counter, counter
            stack[#stack + 1], on[w] = w, true
            work[#work + 1] = { w, 1 }
          elseif on[w] and index[w] < low[v] then
            low[v] = index[w]
          end
        else
          work[#work] = nil
          if #work > 0 then
            local u = work[#work][1]
            if low[v] < low[u] then low[u] = low[v] end
          end
          if low[v] == index[v] then
            local comp = {}
            repeat
              local w2 = stack[#stack]
              stack[#stack], on[w2] = nil, nil
              comp[#comp + 1] = w2
            until w2 == v
            comps[#comps + 1] = comp
          end
        end
      end
    end
  end
  return comps
end
M.tarjan = tarjan

-- Tears the loop of rows (equation expressions) over vars: assignments in
-- solving order {var, expr} with expr in the tearing variables and what
-- precedes, the tearing variables and the residual equations.
local function tear(rows, vars)
  local unknown, count = {}, {}
  for _, v in ipairs(vars) do unknown[v] = true; count[v] = 0 end
  local used, assigns, tearing = {}, {}, {}
  local row_vars = {}
  for i, e in ipairs(rows) do
    row_vars[i] = {}
    for _, v in ipairs(expr.sorted_deps(e)) do
      if unknown[v] then row_vars[i][#row_vars[i] + 1] = v; count[v] = count[v] + 1 end
    end
  end
  local left = #vars
  while left > 0 do
    local progress = false
    for i, e in ipairs(rows) do
      if not used[i] then
        local only, n = nil, 0
        for _, v in ipairs(row_vars[i]) do if unknown[v] then only, n = v, n + 1 end end
        if n == 1 then
          local sol = expr.solve_linear(e, only)
          if sol then
            assigns[#assigns + 1] = { var = only, expr = sol, row = e }
            used[i], unknown[only], left, progress = true, nil, left - 1, true
          end
        end
      end
    end
    if not progress and left > 0 then
      local best
      for _, v in ipairs(vars) do
        if unknown[v] and (not best or count[v] > count[best]) then best = v end
      end
      tearing[#tearing + 1] = best
      unknown[best], left = nil, left - 1
    end
  end
  local residual = {}
  for i, e in ipairs(rows) do if not used[i] then residual[#residual + 1] = e end end
  return assigns, tearing, residual
end
M.tear = tear

-- The incidence of g's rows on the algebraics and a matching of rows to
-- algebraics (row_of[col], col_of[row]); an error naming the equations
-- and algebraics left over when g is structurally singular.
local function matched(d)
  local nz, zset, adj = #d.vars.z, {}, {}
  for _, v in ipairs(d.vars.z) do zset[v] = true end
  for i, e in ipairs(d.g) do
    adj[i] = {}
    for _, v in ipairs(z_deps(e, zset)) do adj[i][#adj[i] + 1] = v.index end
  end
  local row_of, col_of = match(adj, nz)
  local bad_rows, bad_vars = {}, {}
  for i = 1, nz do
    if not col_of[i] then bad_rows[#bad_rows + 1] = ("g[%d]: 0 = %s"):format(i, expr.show(d.g[i]):sub(1, 80)) end
    if not row_of[i] then bad_vars[#bad_vars + 1] = "'" .. d.z_names[i] .. "'" end
  end
  if #bad_rows > 0 then
    fail(d, "structurally singular: no equation is left to determine %s; the equations %s do not involve "
      .. "algebraics they could solve for (each algebraic needs its own equation)",
      table.concat(bad_vars, ", "), table.concat(bad_rows, "; "))
  end
  return adj, row_of, col_of
end

-- The blocks of g in the order they are solved (Tarjan's components of
-- the matched rows' dependencies).
local function components(adj, row_of, col_of)
  local succ = {}
  for i = 1, #adj do
    succ[i] = {}
    for _, c in ipairs(adj[i]) do
      if c ~= col_of[i] then succ[i][#succ[i] + 1] = row_of[c] end
    end
  end
  return tarjan(#adj, succ)
end

-- The staging of the blocks: a component needs the Newton stages before
-- it done; the blocks of one stage do not read each other and are solved
-- together. b holds what the code generator gets (g, z_block, segments,
-- block_stage) and the count of blocks and stages.
local function new_staging()
  return { g = {}, z_block = {}, segments = {}, sizes = {}, block_stage = {}, comp_of = {}, need = {}, newton = {},
    nblocks = 0, nstages = 0 }
end

-- Segment k of the explicit algebraics (made on first use, with those
-- before it).
local function segment(b, k)
  for q = #b.segments + 1, k do b.segments[q] = {} end
  return b.segments[k]
end

local function assign(seg, v, e) seg[#seg + 1] = { index = v.index, var = v, expr = e } end

-- A Newton block of component ci over the variables of list (size of them).
local function block(b, ci, stage, list, size)
  for _, v in ipairs(list) do b.z_block[v.index] = b.nblocks end
  b.block_stage[b.nblocks + 1] = stage
  b.nblocks, b.nstages = b.nblocks + 1, math.max(b.nstages, stage + 1)
  b.sizes[#b.sizes + 1] = size
  b.newton[ci] = true
end

-- A scalar component: an assignment when its equation is linear in its
-- unknown, else a Newton block of one.
local function stage_scalar(b, info, ci, stage, v, e)
  local sol = expr.solve_linear(e, v)
  b.g[v.index] = e
  if sol then
    assign(segment(b, stage + 1), v, sol)
    b.z_block[v.index] = -1
    info.explicit = info.explicit + 1
  else
    block(b, ci, stage, { v }, 1)
  end
end

-- A loop: torn; its residuals in the tearing variables alone are what g
-- keeps (what a Newton on them evaluates), solved explicitly when there is
-- one, linear in its one tearing variable; the torn assignments follow.
local function stage_loop(b, info, ci, stage, rows, vars)
  local assigns, tearing, residual = tear(rows, vars)
  local inner = {}
  for _, a in ipairs(assigns) do inner[a.var] = expr.subst(a.expr, inner) end
  local reduced = {}
  for q, e in ipairs(residual) do reduced[q] = expr.subst(e, inner) end
  local loop = { size = #rows, tearing = #tearing, names = {} }
  for q, v in ipairs(tearing) do loop.names[q] = v.name end
  info.loops[#info.loops + 1] = loop
  local sol = #tearing == 1 and expr.solve_linear(reduced[1], tearing[1])
  if sol then
    assign(segment(b, stage + 1), tearing[1], sol)
    b.z_block[tearing[1].index] = -1
    b.g[tearing[1].index] = reduced[1]
    loop.explicit = true
    info.explicit = info.explicit + 1
  else
    for q, v in ipairs(tearing) do b.g[v.index] = reduced[q] end
    block(b, ci, stage, tearing, #tearing)
  end
  local seg = segment(b, stage + (b.newton[ci] and 2 or 1))
  for _, a in ipairs(assigns) do
    assign(seg, a.var, a.expr)
    b.z_block[a.var.index] = -1
    b.g[a.var.index] = a.row
    info.explicit = info.explicit + 1
  end
end

-- Component ci (rows of g): its stage, after the Newton stages of the
-- components it reads, then its blocks.
local function stage_component(d, info, b, ci, comp, adj, col_of)
  local vars, rows, stage = {}, {}, 0
  for q, r in ipairs(comp) do
    rows[q], vars[q] = d.g[r], d.vars.z[col_of[r]]
    b.comp_of[col_of[r]] = ci
  end
  for _, r in ipairs(comp) do
    for _, c in ipairs(adj[r]) do
      local dc = b.comp_of[c]
      if dc ~= ci then stage = math.max(stage, b.need[dc] + (b.newton[dc] and 1 or 0)) end
    end
  end
  b.need[ci] = stage
  if #comp == 1 then stage_scalar(b, info, ci, stage, vars[1], rows[1])
  else stage_loop(b, info, ci, stage, rows, vars) end
end

local function blt(d, info)
  local nz = #d.vars.z
  if #d.g ~= nz then
    fail(d, "g has %d equations for %d algebraic variables%s", #d.g, nz,
      #info.dummies > 0 and " after index reduction" or "")
  end
  if nz == 0 then
    d.z_block, d.nblocks, d.z_segments = {}, 0, { {} }
    return
  end
  local adj, row_of, col_of = matched(d)
  local b = new_staging()
  for ci, comp in ipairs(components(adj, row_of, col_of)) do stage_component(d, info, b, ci, comp, adj, col_of) end
  segment(b, b.nstages + 1)
  d.g, d.z_block, d.nblocks, d.z_segments, d.block_stage = b.g, b.z_block, b.nblocks, b.segments, b.block_stage
  info.blocks, info.stages = b.sizes, b.nstages
end

-- add_stats(structure, stats): a run's stats gain the sizes of the
-- Newton blocks (blocks) and how many algebraics are assigned
-- (explicit_algebraics); stats is returned.
function M.add_stats(st, stats)
  if st and stats then stats.blocks, stats.explicit_algebraics = { table.unpack(st.blocks) }, st.explicit end
  return stats
end

-- explain(structure, err): an engine error, with what index reduction
-- chose when the algebraic equations failed (its code "algebraic") in a
-- model that has dummy derivatives (the engine names a dummy whose pivot
-- it saw vanish itself); the same error object, reworded.
function M.explain(st, err)
  local core = require("salta.core")
  if not st or #st.dummies == 0 or core.errcode(err) ~= "algebraic" then return err end
  local names = {}
  for i, n in ipairs(st.dummies) do names[i] = "'" .. n .. "'" end
  return core.error(("%s (index reduction made %s algebraic, chosen where the constraints' derivatives by them are "
    .. "largest at the start values: Newton fails where the motion makes those derivatives vanish, e.g. a "
    .. "pendulum passing the point where the chosen coordinate's partial is 0; start where they stay away "
    .. "from 0, or write the model in coordinates that do not degenerate)"):format(tostring(err),
    table.concat(names, ", ")), err.status)
end

-- compile(d): applies the structural compiler to description d in place
-- and returns d.structure: { aliases = { {name, of, kind, sign} },
-- dummies = {names}, differentiated = { {equation, dummy} }, explicit = n,
-- blocks = {sizes of the Newton blocks}, stages = n (blocks of one stage
-- are solved together), loops = { {size, tearing, names, explicit} } }.
function M.compile(d)
  local info = { aliases = {}, dummies = {}, differentiated = {}, explicit = 0, blocks = {}, loops = {} }
  eliminate_aliases(d, info)
  reduce_index(d, info)
  blt(d, info)
  d.structure = info
  return info
end

return M
