-- salta.codegen: symbolic Jacobians with fixed sparsity, and C emission.
--
-- Straight-line kernels with one temporary per shared subexpression, and
-- a constant salta_model_def that tells the engine everything (see
-- engine/include/salta_kernel.h). One C text per model; a large one is cut
-- into units (UNIT_MARK lines) that the cc backend compiles in parallel
-- and caches one by one, while tcc and `salta compile` read it whole.

local expr = require("salta.expr")
local emit = require("salta.codegen_emit")
local codegen_dirs = require("salta.codegen_dirs")

local M = {}

-- Sparse Jacobians ----------------------------------------------------------

-- The column of each variable of a list (computed once per list: a
-- model's variable lists are shared by all its kernels).
local col_cache = setmetatable({}, { __mode = "k" })
local function columns_of(vars)
  local col_of = col_cache[vars]
  if not col_of then
    col_of = {}
    for j, v in ipairs(vars) do col_of[v] = j end
    col_cache[vars] = col_of
  end
  return col_of
end

-- The derivatives of e by the leaves of col_of (leaf -> column) and, by
-- the chain rule, through the leaves of through (leaf -> such derivatives
-- of its own, or false while they are not known): {cols (sorted), by =
-- {[col] = expr}}, terms summed in a fixed order (diff creates nodes); nil
-- when e reads a leaf whose derivatives are not known.
local function derivatives(e, col_of, through)
  local acc = { cols = {}, by = {} }
  local function add(c, term)
    if not acc.by[c] then acc.cols[#acc.cols + 1] = c; acc.by[c] = term
    else acc.by[c] = expr.add(acc.by[c], term) end
  end
  for _, v in ipairs(expr.sorted_deps(e)) do
    local c, src = col_of[v], through and through[v]
    if c then
      add(c, expr.diff(e, v))
    elseif src then
      local d = expr.diff(e, v)
      for _, c2 in ipairs(src.cols) do add(c2, expr.mul(d, src.by[c2])) end
    elseif src == false then
      return nil
    end
  end
  table.sort(acc.cols)
  return acc
end

-- jacobian(exprs, vars [, rows [, through]]): nonzero entries {row, col,
-- expr} of d exprs / d vars, in column-major order. vars is an array of
-- leaf nodes; structural zeros (derivatives that simplify to the constant
-- 0) are left out. With rows (a list of row indices) only those rows: the
-- cost follows the rows and their non-zeros, not the length of exprs or
-- vars. With through (see derivatives), the total derivatives through
-- those leaves, or nil where a row reads one not known.
function M.jacobian(exprs, vars, rows, through)
  local col_of = columns_of(vars)
  local by_col, cols = {}, {}
  for q = 1, rows and #rows or #exprs do
    local i = rows and rows[q] or q
    local acc = derivatives(exprs[i], col_of, through)
    if not acc then return nil end
    for _, j in ipairs(acc.cols) do
      local d = acc.by[j]
      if not (d.op == "const" and d.value == 0) then
        if not by_col[j] then by_col[j] = {}; cols[#cols + 1] = j end
        by_col[j][#by_col[j] + 1] = { row = i, col = j, expr = d }
      end
    end
  end
  table.sort(cols)
  local out = {}
  for _, j in ipairs(cols) do
    local c = by_col[j]
    table.sort(c, function(a, b) return a.row < b.row end)
    for _, ent in ipairs(c) do out[#out + 1] = ent end
  end
  return out
end

-- The reduced right-hand side F(t, x, p) = f(t, x, z(t, x, p), p) of a
-- model whose algebraics one explicit segment assigns in order: its
-- Jacobians by x and by p through the chain rule along the assignments
-- (dz_i = de_i/dleaf + sum of de_i/dz_j dz_j, then dF = df/dleaf + df/dz
-- dz), as entries of t, x, z and p (z: the assigned values). nil when an
-- algebraic is read before it is assigned, an expression is implicit, the
-- Jacobian by x has more than x_limit entries, or both more than
-- codegen_dirs.MAX_ENTRIES (the assignments' derivatives: four times that).
M.REDUCED = true   -- a spec sets false to compare with the solve by g_z
local function reduced_jacobians(m, x_limit)
  local seg, limit = m.z_segments and m.z_segments[1] or {}, codegen_dirs.MAX_ENTRIES
  if not M.REDUCED or m.nblocks ~= 0 or #seg ~= #m.vars.z then return nil end
  local through, budget = { x = {}, p = {} }, 4 * limit
  local col_of = { x = columns_of(m.vars.x), p = columns_of(m.vars.p) }
  for _, v in ipairs(m.vars.z) do through.x[v], through.p[v] = false, false end
  for _, a in ipairs(seg) do
    if emit.contains_implicit(a.expr) then return nil end
    for _, w in ipairs({ "x", "p" }) do
      local acc = derivatives(a.expr, col_of[w], through[w])
      if not acc then return nil end
      through[w][m.vars.z[a.index]] = acc
      budget = budget - #acc.cols
      if budget < 0 then return nil end
    end
  end
  for _, e in ipairs(m.f) do
    if emit.contains_implicit(e) then return nil end
  end
  local jx = M.jacobian(m.f, m.vars.x, nil, through.x)
  local jp = jx and M.jacobian(m.f, m.vars.p, nil, through.p)
  if not jp or #jx > x_limit or #jx + #jp > limit then return nil end
  return { x = jx, p = jp }
end


-- C emission: salta.codegen_emit ------------------------------------------------

local literal, new_emitter = emit.literal, emit.new_emitter
M.literal = literal

-- The text being generated: fns, the kernels' functions (any unit may
-- hold one); protos, their prototypes; main, what the def's unit holds
-- after the prototypes (functions calling the kernels, tables, the def).
-- derived: the subexpressions of the parameters alone that the kernels
-- read (list, in order of first use; at: a node's place), computed once
-- per parameter vector by k_derive into p[np ..] (salta_kernel.h);
-- with M.DERIVE false (a spec's comparison), none: computed in place.
M.DERIVE = true
local function new_out(np)
  return { fns = {}, protos = {}, main = {}, derived = M.DERIVE and emit.new_derived(np) or nil }
end

-- A kernel function: SALTA_FN (the prelude's) makes it file-local in one
-- translation unit, shared among the units of a cut text.
local function add_fn(out, ret, cname, sig, body)
  local decl = "SALTA_FN " .. ret .. " " .. cname .. sig
  out.fns[#out.fns + 1] = decl .. " {\n" .. body .. "\n}"
  out.protos[#out.protos + 1] = decl .. ";"
end

-- kernel(out, name, exprs [, rows]): a C function writing exprs into out[]
-- (with rows, a sorted list of row indices, only those).
local SIG = "(double t, const double *x, const double *z, const double *p, double *out)"

-- Kernels of more rows than this are split into functions of this many
-- rows each (their own common subexpressions): an optimising compiler's
-- time grows faster than linearly in a function's length.
local CHUNK = 256

-- A list's entries from i to j.
local function slice(list, i, j)
  local out = {}
  for k = i, math.min(j, #list) do out[#out + 1] = list[k] end
  return out
end

-- One function writing the rows of list (indices into exprs) into out[].
local function kernel_part(out, cname, exprs, list)
  local em = new_emitter("  ", out.derived)
  local assigns = {}
  for _, i in ipairs(list) do assigns[#assigns + 1] = "  out[" .. (i - 1) .. "] = " .. em:emit(exprs[i]) .. ";" end
  local parts = { "  (void)t; (void)x; (void)z; (void)p; (void)out;" }
  for _, l in ipairs(em.scopes[1].lines) do parts[#parts + 1] = l end
  for _, l in ipairs(assigns) do parts[#parts + 1] = l end
  parts[#parts + 1] = "  return 0;"
  add_fn(out, "int", cname, SIG, table.concat(parts, "\n"))
end

local function kernel(out, cname, exprs, rows)
  local list = rows
  if not list then
    list = {}
    for i = 1, #exprs do list[i] = i end
  end
  if #list <= CHUNK then return kernel_part(out, cname, exprs, list) end
  local calls = {}
  for c = 1, (#list + CHUNK - 1) // CHUNK do
    local name = cname .. "_part" .. c
    kernel_part(out, name, exprs, slice(list, (c - 1) * CHUNK + 1, c * CHUNK))
    calls[#calls + 1] = "  if (" .. name .. "(t, x, z, p, out)) return 1;"
  end
  out.main[#out.main + 1] = "static int " .. cname .. SIG .. " {\n" .. table.concat(calls, "\n") .. "\n  return 0;\n}"
end

-- guard_kernel(name, exprs): a C function returning guard j alone (a case
-- per guard), so that locating one crossing evaluates one guard.
local GUARD_SIG = "(int j, double t, const double *x, const double *z, const double *p)"


local function guard_part(out, cname, exprs, first, last)
  local parts = { "  (void)t; (void)x; (void)z; (void)p;", "  switch (j) {" }
  for i = first, last do
    local em = new_emitter("    ", out.derived)
    local v = em:emit(exprs[i])
    parts[#parts + 1] = "  case " .. (i - 1) .. ": {"
    for _, l in ipairs(em.scopes[1].lines) do parts[#parts + 1] = l end
    parts[#parts + 1] = "    return " .. v .. ";"
    parts[#parts + 1] = "  }"
  end
  parts[#parts + 1] = "  }"
  parts[#parts + 1] = "  return NAN;"
  add_fn(out, "double", cname, GUARD_SIG, table.concat(parts, "\n"))
end

local function guard_kernel(out, cname, exprs)
  if #exprs <= CHUNK then return guard_part(out, cname, exprs, 1, #exprs) end
  local calls = {}
  for c = 1, (#exprs + CHUNK - 1) // CHUNK do
    local name, hi = cname .. "_part" .. c, math.min(c * CHUNK, #exprs)
    guard_part(out, name, exprs, (c - 1) * CHUNK + 1, hi)
    calls[#calls + 1] = ("  if (j < %d) return %s(j, t, x, z, p);"):format(hi, name)
  end
  out.main[#out.main + 1] = "static double " .. cname .. GUARD_SIG .. " {\n" .. table.concat(calls, "\n")
    .. "\n  return NAN;\n}"
end

-- assign_kernel(name, segments): a C function assigning the explicit
-- algebraics of one segment (a case per segment) in place, in order: a
-- later assignment reads the earlier ones from z.
local ASSIGN_SIG = "(int seg, double t, const double *x, double *z, const double *p)"

local function assign_part(out, cname, list)
  local em = new_emitter("  ", out.derived)
  local lines = em.scopes[1].lines
  for _, a in ipairs(list) do
    local v = em:emit(a.expr)
    lines[#lines + 1] = "  z[" .. (a.index - 1) .. "] = " .. v .. ";"
  end
  add_fn(out, "int", cname, "(double t, const double *x, double *z, const double *p)",
    "  (void)t; (void)x; (void)z; (void)p;\n" .. table.concat(lines, "\n") .. "\n  return 0;")
end

local function assign_kernel(out, cname, segments)
  local cases = { "static int " .. cname .. ASSIGN_SIG .. " {", "  switch (seg) {" }
  for s, list in ipairs(segments) do
    if #list > 0 then
      cases[#cases + 1] = "  case " .. (s - 1) .. ":"
      for c = 1, (#list + CHUNK - 1) // CHUNK do
        local name = ("%s_%d_%d"):format(cname, s - 1, c)
        assign_part(out, name, slice(list, (c - 1) * CHUNK + 1, c * CHUNK))
        cases[#cases + 1] = "    if (" .. name .. "(t, x, z, p)) return 1;"
      end
      cases[#cases + 1] = "    return 0;"
    end
  end
  cases[#cases + 1] = "  }"
  cases[#cases + 1] = "  return 0;"
  cases[#cases + 1] = "}"
  out.main[#out.main + 1] = table.concat(cases, "\n")
end

local function int_array(name, vals)
  if #vals == 0 then return "" end
  local s = {}
  for i, v in ipairs(vals) do s[i] = tostring(v) end
  return "static const int " .. name .. "[] = {" .. table.concat(s, ",") .. "};"
end

-- A C string literal of any bytes: letters, digits, space and _ . , : - +
-- / stay; every other byte is a three-digit octal escape, which no
-- following byte can extend, so no quote, backslash, trigraph or comment
-- can form from a user's name.
local function c_string(s)
  return '"' .. s:gsub("[^%w _.,:/+-]", function(c) return ("\\%03o"):format(c:byte()) end) .. '"'
end
M.c_string = c_string

local function name_array(name, names)
  if #names == 0 then return "" end
  local s = {}
  for i, v in ipairs(names) do s[i] = c_string(v) end
  return "static const char *const " .. name .. "[] = {" .. table.concat(s, ", ") .. "};"
end

local function double_array(name, vals)
  if #vals == 0 then return "" end
  local s = {}
  for i, v in ipairs(vals) do s[i] = literal(v) end
  return "static const double " .. name .. "[] = {" .. table.concat(s, ", ") .. "};"
end

-- What salta.codegen_dirs emits its kernels with.
local TOOLS = { add_fn = add_fn, CHUNK = CHUNK }

local WRT = { "x", "z", "p", "t" }
local ARG_BIT = { t = 1, x = 2, z = 4, p = 8 }   -- SALTA_ARG_*

-- The SALTA_ARG_* bits of the arguments no entry of jac depends on.
local function independent_of(jac)
  local used = 0
  for _, ent in ipairs(jac) do
    for v in pairs(expr.deps(ent.expr)) do used = used | (ARG_BIT[v.kind] or 15) end
  end
  return 15 & ~used
end

-- function_def(prefix, exprs, vars, out [, rows, n, dirs]): emits the
-- value kernel and its four Jacobian kernels into out, and returns the C
-- initialiser of a salta_function_def plus the Jacobian patterns. With
-- rows (a sorted list of row indices) and n (the function's length), exprs
-- has only those rows: the kernel writes and the Jacobians keep only them,
-- at a cost in those rows alone. With dirs (a list of "x", "z", "p"), also
-- its directional kernels by those.
local function function_def(prefix, exprs, vars, out, rows, n, dirs)
  kernel(out, prefix, exprs, rows)
  local inits, patterns = {}, {}
  for k, w in ipairs(WRT) do
    local jac = M.jacobian(exprs, vars[w], rows)
    patterns[w] = jac
    local rows, cols, vals = {}, {}, {}
    for i, ent in ipairs(jac) do
      rows[i], cols[i], vals[i] = ent.row - 1, ent.col - 1, ent.expr
    end
    local kn = prefix .. "_" .. w
    if #jac > 0 then
      out.main[#out.main + 1] = int_array(kn .. "_row", rows)
      out.main[#out.main + 1] = int_array(kn .. "_col", cols)
      kernel(out, kn, vals)
      inits[k] = ("[SALTA_WRT_%s] = {.nnz = %d, .row = %s_row, .col = %s_col, .eval = %s, .indep = %d}"):format(
        w:upper(), #jac, kn, kn, kn, independent_of(jac))
    else
      inits[k] = ("[SALTA_WRT_%s] = {.indep = 15}"):format(w:upper())
    end
  end
  local dirs_init = dirs and codegen_dirs.emit(out, prefix, patterns, dirs, TOOLS)
  return ("{.n = %d, .eval = %s,\n    .d = {%s}%s}"):format(n or #exprs, prefix, table.concat(inits, ",\n          "),
    dirs_init and ",\n    " .. dirs_init or ""), patterns
end

-- The def's field name = value, for a list of them.
local function field(list, name, value) list[#list + 1] = ("  .%s = %s,"):format(name, value) end

-- e_input: per event, the checked read (0-based) whose piece index it
-- moves, or -1; into out and fields when any event has one.
local function emit_event_reads(m, checks, out, fields)
  local index, e_input, any = {}, {}, false
  for k, c in ipairs(checks) do index[c.key] = k - 1 end
  for j = 1, #m.e do
    local info = (m.e_input or {})[j]
    local u = info and info.read.use
    e_input[j] = u and index[u.table.hash .. ":" .. u.arg.id] or -1
    any = any or e_input[j] >= 0
  end
  if any then
    out.main[#out.main + 1] = int_array("e_input", e_input)
    field(fields, "e_input", "e_input")
  end
end

-- The reads of input tables the engine checks inside their tables
-- (m.input_checks: "affine" ones at t0 and tf, the others at t0), with
-- the events that move their pieces: kernels and arrays into out, the
-- def's fields into fields.
local function emit_input_checks(m, out, fields)
  local checks, args, lo, hi, affine, names, texts = m.input_checks or {}, {}, {}, {}, {}, {}, {}
  if #checks == 0 then return end
  for k, c in ipairs(checks) do
    args[k], lo[k], hi[k] = c.arg, c.table.t[1], c.table.t[#c.table.t]
    affine[k], names[k], texts[k] = c.how == "affine" and 1 or 0, c.name, expr.show(c.arg)
  end
  emit_event_reads(m, checks, out, fields)
  kernel(out, "k_input_args", args)
  out.main[#out.main + 1] = double_array("input_lo", lo)
  out.main[#out.main + 1] = double_array("input_hi", hi)
  out.main[#out.main + 1] = "static const unsigned char input_affine[] = {" .. table.concat(affine, ",") .. "};"
  out.main[#out.main + 1] = name_array("input_name", names)
  out.main[#out.main + 1] = name_array("input_arg", texts)
  field(fields, "ninputs", #checks)
  for _, f in ipairs({ "input_lo", "input_hi", "input_affine", "input_name", "input_arg" }) do field(fields, f, f) end
  field(fields, "input_args", "k_input_args")
end

-- The piece indices of a given start state (m.hidden inputs), each from
-- the states at t0 (an earlier index replaced by its own expression).
local function emit_held(m, out, fields)
  local held, rows, earlier = {}, {}, {}
  for _, h in ipairs(m.hidden or {}) do
    if h.kind == "input" then
      held[h.index] = expr.subst(h.value, earlier)
      earlier[h.var] = held[h.index]
      rows[#rows + 1] = h.index
    end
  end
  if #rows == 0 then return end
  table.sort(rows)
  kernel(out, "k_held", held, rows)
  field(fields, "held", "k_held")
end

-- The 128-bit BLAKE2b digest of a string, as 32 hex digits (the JIT cache key).
M.hash = require("salta.core").hash

local PRELUDE = [[
#include <math.h>
/* SALTA_FN: a kernel function, file-local in one translation unit; in a
** text cut into units (compiled with SALTA_UNITS defined) shared among
** them and hidden outside the library. */
#ifdef SALTA_UNITS
#define SALTA_FN __attribute__((visibility("hidden")))
#else
#define SALTA_FN static
#endif
static inline double salta_sigmoid_(double u) { return 1.0 / (1.0 + exp(-u)); }
static inline double salta_sign_(double u) { return (double)((u > 0) - (u < 0)); }
]]

-- The directional kernels the engine multiplies by: f's in S' = f_x s_x +
-- f_z s_z + f_p, g's in s_z = -g_z^-1 (g_x s_x + g_p).
local DIRS_OF = { f = { "x", "z", "p" }, g = { "x", "p" } }

-- The kernels of f, g, h and the guards (and of one guard alone, unless a
-- guard is implicit: its Newton can fail, so it stays in k_e) into
-- out: their salta_function_def initialisers and e_one's.
local function emit_functions(m, vars, out)
  local defs, pats = {}, {}
  for _, fn in ipairs({ "f", "g", "h", "e" }) do
    defs[fn], pats[fn] = function_def("k_" .. fn, m[fn], vars, out, nil, nil, DIRS_OF[fn])
  end
  local implicit = false
  for _, e in ipairs(m.e) do implicit = implicit or emit.contains_implicit(e) end
  defs.e_one = "0"
  if #m.e > 0 and not implicit then
    guard_kernel(out, "k_e_one", m.e)
    defs.e_one = "k_e_one"
  end
  return defs, pats
end

-- y_state: for each output, the state it is (0-based), else -1; whether
-- any output is a state.
local function emit_y_state(m, out)
  local y_state, any_state = {}, false
  for i, e in ipairs(m.h) do
    y_state[i] = e.op == "var" and e.kind == "x" and e.index - 1 or -1
    any_state = any_state or y_state[i] >= 0
  end
  if any_state then out.main[#out.main + 1] = int_array("y_state", y_state) end
  return any_state
end

-- m.r[j] holds the states reset j sets, by index (one set to itself keeps
-- its value): its kernel and Jacobians have those rows alone, and the
-- engine applies the identity to the others. The resets' initialisers and
-- the rows each assigns (CSR: ptr, rows).
local function emit_reset_kernels(m, vars, out)
  local assign_ptr, assign_rows, R = { 0 }, {}, {}
  for j, r in ipairs(m.r) do
    local list = {}
    for i, e in pairs(r) do
      if e ~= m.vars.x[i] then list[#list + 1] = i end
    end
    table.sort(list)
    for _, i in ipairs(list) do assign_rows[#assign_rows + 1] = i - 1 end
    assign_ptr[j + 1] = #assign_rows
    R[j] = function_def("k_r" .. (j - 1), r, vars, out, list, #m.x_names)
  end
  return R, assign_ptr, assign_rows
end

-- The names, start and nominal values and guard directions; then the
-- resets' table and their assigned rows.
local function emit_tables(m, out, R, assign_ptr, assign_rows)
  for _, field in ipairs({ "x_names", "z_names", "p_names", "y_names", "e_names" }) do
    out.main[#out.main + 1] = name_array(field, m[field])
  end
  for _, field in ipairs({ "x_start", "z_start", "p_nominal" }) do
    out.main[#out.main + 1] = double_array(field, m[field])
  end
  out.main[#out.main + 1] = int_array("e_dir", m.e_dir)
  if #R > 0 then
    out.main[#out.main + 1] = "static const salta_function_def resets[] = {\n  "
      .. table.concat(R, ",\n  ") .. "\n};"
    out.main[#out.main + 1] = int_array("r_assign_ptr", assign_ptr)
    out.main[#out.main + 1] = int_array("r_assign_rows", assign_rows)
  end
end

-- Per guard, whether it reads a state its row of e_x (the entries ex,
-- emitted) does not show: through floor, ceil, sign or a condition, whose
-- derivatives are 0.
local function hidden_reads(m, ex)
  local shown, hidden = {}, {}
  for _, ent in ipairs(ex) do shown[ent.row] = (shown[ent.row] or 0) + 1 end
  for j, e in ipairs(m.e) do
    local read = 0
    for v in pairs(expr.deps(e)) do if v.kind == "x" then read = read + 1 end end
    hidden[j] = read > (shown[j] or 0)
  end
  return hidden
end

-- The events' flags (SALTA_EVENT_TERMINAL = 1, SALTA_EVENT_BREAKPOINT =
-- 2, SALTA_EVENT_HIDDEN_READS = 4), if any is set, and the states' modes,
-- if any; whether each was emitted. ex: e_x's entries.
local function emit_flags_and_modes(m, out, ex)
  local flags, any_flag, hidden = {}, false, hidden_reads(m, ex)
  for j = 1, #m.e do
    flags[j] = ((m.e_terminal or {})[j] and 1 or 0) | ((m.e_breakpoint or {})[j] and 2 or 0) |
      (hidden[j] and 4 or 0)
    any_flag = any_flag or flags[j] ~= 0
  end
  if any_flag then
    out.main[#out.main + 1] = "static const unsigned char e_flags[] = {" .. table.concat(flags, ",") .. "};"
  end
  local any_mode = next(m.x_mode or {}) ~= nil
  if any_mode then
    local idx = {}
    for i = 1, #m.x_names do idx[i] = m.x_mode[i] and m.x_mode[i] - 1 or -1 end
    out.main[#out.main + 1] = int_array("x_mode", idx)
  end
  return any_flag, any_mode
end

-- The structure of g = 0 (blocks, stages, the explicit algebraics'
-- kernel) and index reduction's pivots: into out, their def fields
-- into fields.
-- The entries an explicit stage's product by the directions in x reads
-- without the reduced right-hand side (f's and g's Jacobian patterns
-- pats): f's by x and z, g's by x, and g_z's inverse (or its factors).
local function stage_entries(pats, nz)
  return #pats.f.x + #pats.f.z + #pats.g.x + nz * nz
end

local function emit_structure(m, out, fields, pats)
  if m.z_block and #m.z_names > 0 then
    out.main[#out.main + 1] = int_array("z_block", m.z_block)
    out.main[#out.main + 1] = int_array("block_stage", m.block_stage)
    local any = false
    for _, seg in ipairs(m.z_segments) do any = any or #seg > 0 end
    if any then assign_kernel(out, "k_zassign", m.z_segments) end
    field(fields, "nblocks", m.nblocks)
    field(fields, "z_block", "z_block")
    if any then field(fields, "z_assign", "k_zassign") end
    if m.nblocks > 0 then field(fields, "block_stage", "block_stage") end
    local jac = any and reduced_jacobians(m, stage_entries(pats, #m.z_names))
    for _, f in ipairs(jac and codegen_dirs.emit_reduced(out, jac, TOOLS) or {}) do field(fields, f[1], f[2]) end
  end
  if m.pivots and #m.pivots > 0 then
    local exprs, dummies, eqs = {}, {}, {}
    for k, pv in ipairs(m.pivots) do
      exprs[2 * k - 1], exprs[2 * k], dummies[k], eqs[k] = pv.pivot, pv.scale, pv.dummy, "0 = " .. pv.equation
    end
    kernel(out, "k_pivots", exprs)
    out.main[#out.main + 1] = name_array("pivot_dummy", dummies)
    out.main[#out.main + 1] = name_array("pivot_eq", eqs)
    field(fields, "npivots", #m.pivots)
    for _, f in ipairs({ "pivot_dummy", "pivot_eq" }) do field(fields, f, f) end
    field(fields, "pivots", "k_pivots")
  end
end

-- k_derive(p): the derived values the kernels read (out.derived), from
-- p's own np, a part of CHUNK values per function; into fields.
local function emit_derive(out, fields)
  local dv = out.derived
  if not dv or #dv.list == 0 then return end
  local calls = {}
  for c = 1, (#dv.list + CHUNK - 1) // CHUNK do
    local em, name = new_emitter("  "), "k_derive_part" .. c
    local lines = em.scopes[1].lines
    for k = (c - 1) * CHUNK + 1, math.min(c * CHUNK, #dv.list) do
      local v = em:emit(dv.list[k])
      lines[#lines + 1] = ("  p[%d] = %s;"):format(dv.np + k - 1, v)
    end
    add_fn(out, "void", name, "(double *p)", table.concat(lines, "\n"))
    calls[#calls + 1] = "  " .. name .. "(p);"
  end
  out.main[#out.main + 1] = "static void k_derive(double *p) {\n" .. table.concat(calls, "\n") .. "\n}"
  field(fields, "np_derived", #dv.list)
  field(fields, "derive", "k_derive")
end

-- The salta_model_def constant, field by name (an absent one is 0 or
-- NULL), from the parts emitted before (d; d.fields: those the emitters
-- set).
local function model_def(m, symbol, hash, d)
  local fields = {}
  local function array(name, n, value) if n > 0 then field(fields, name, value or name) end end
  field(fields, "abi", "SALTA_ABI_VERSION")
  field(fields, "name", c_string(m.name))
  field(fields, "hash", c_string(hash))
  for _, c in ipairs({ { "nx", m.x_names }, { "nz", m.z_names }, { "np", m.p_names }, { "ny", m.y_names },
                       { "ne", m.e_names } }) do field(fields, c[1], #c[2]) end
  for _, c in ipairs({ { "x_names", m.x_names }, { "z_names", m.z_names }, { "p_names", m.p_names },
                       { "y_names", m.y_names }, { "e_names", m.e_names }, { "x_start", m.x_names },
                       { "z_start", m.z_names }, { "p_nominal", m.p_names } }) do array(c[1], #c[2]) end
  array("e_direction", #m.e_names, "e_dir")
  for _, fn in ipairs({ "f", "g", "h", "e" }) do field(fields, fn, d[fn]) end
  array("r", #d.R, "resets"); array("r_assign_ptr", #d.R); array("r_assign_rows", #d.assign_rows)
  if d.e_one ~= "0" then field(fields, "e_one", d.e_one) end
  if d.any_state then field(fields, "y_state", "y_state") end
  if d.S then field(fields, "start", d.S) end
  if d.any_flag then field(fields, "e_flags", "e_flags") end
  if d.any_mode then field(fields, "x_mode", "x_mode") end
  for _, f in ipairs(d.fields) do fields[#fields + 1] = f end
  return table.concat({ "const salta_model_def " .. symbol .. " = {", table.concat(fields, "\n"), "};", "" }, "\n")
end

-- Cutting the text into units. A unit ends after a function picked by its
-- own digest, with odds of its length in UNIT_BYTES, once the unit holds
-- a quarter of that (and always at twice that): an edit moves the cuts
-- near it only, so that the other units keep their digests, and their
-- cached objects. A text of one unit is not cut.
local UNIT_BYTES = 131072
M.UNIT_MARK = "/* salta:unit */"   -- a line of its own; the cc backend cuts there (jit.c)

local function units(fns)
  local list, cur, bytes = {}, {}, 0
  for _, f in ipairs(fns) do
    cur[#cur + 1] = f
    bytes = bytes + #f
    local odds = tonumber(M.hash(f):sub(1, 8), 16) / 2 ^ 32
    if bytes >= 2 * UNIT_BYTES or (bytes >= UNIT_BYTES // 4 and odds < #f / UNIT_BYTES) then
      list[#list + 1], cur, bytes = cur, {}, 0
    end
  end
  if #cur > 0 then list[#list + 1] = cur end
  return list
end

-- The text before the def: the head (every unit's start), the kernels'
-- functions by unit, then the def's unit (prototypes, the rest).
local function text(head, out)
  local groups = units(out.fns)
  local parts = { table.concat(head, "\n") }
  for _, g in ipairs(groups) do
    if #groups > 1 then parts[#parts + 1] = M.UNIT_MARK end
    parts[#parts + 1] = table.concat(g, "\n")
  end
  if #groups > 1 then parts[#parts + 1] = M.UNIT_MARK end
  parts[#parts + 1] = table.concat(out.protos, "\n")
  parts[#parts + 1] = table.concat(out.main, "\n")
  return table.concat(parts, "\n")
end

-- generate(m, abi, symbol): C source for model m.
-- m: { name, x_names, z_names, p_names, y_names, e_names, x_start, z_start,
--      p_nominal, e_dir, vars = {x=, z=, p=, t=}, f, g, h, e, r,
--      start (nil, or start values as expressions of p), e_terminal and
--      e_breakpoint (nil, or per event whether it ends the run / is an
--      input's breakpoint), x_mode (nil, or per state the event that sets
--      its mode), input_tables, the structural compiler's z_block,
--      nblocks, block_stage, z_segments and pivots ({dummy, equation,
--      pivot, scale}), input_checks, hidden and e_input (the input reads
--      the engine checks, the pieces a given start state's indices take) }
-- abi: the text of salta_kernel.h; symbol: the name of the def constant.
function M.generate(m, abi, symbol)
  local head = { "/* generated by salta; do not edit */", abi, PRELUDE }
  for _, tab in ipairs(m.input_tables or {}) do head[#head + 1] = tab:c_source() end
  local out = new_out(#m.p_names)
  local vars = { x = m.vars.x, z = m.vars.z, p = m.vars.p, t = { m.vars.t } }
  local d, pats = emit_functions(m, vars, out)
  d.S = m.start and function_def("k_x0", m.start, vars, out)
  d.any_state = emit_y_state(m, out)
  d.R, d.assign_ptr, d.assign_rows = emit_reset_kernels(m, vars, out)
  emit_tables(m, out, d.R, d.assign_ptr, d.assign_rows)
  d.any_flag, d.any_mode = emit_flags_and_modes(m, out, pats.e.x)
  d.fields = {}
  emit_structure(m, out, d.fields, pats)
  emit_input_checks(m, out, d.fields)
  emit_held(m, out, d.fields)
  emit_derive(out, d.fields)   -- last: every kernel has taken its derived values
  local body = text(head, out)
  local hash = M.hash(body .. symbol)
  return body .. "\n" .. model_def(m, symbol, hash, d), hash
end

return M
