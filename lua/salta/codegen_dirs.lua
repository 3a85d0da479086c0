-- salta.codegen_dirs: the directional kernels of f and g (salta_kernel.h:
-- dirs_x, dirs_z, dirs_p), which salta.codegen emits beside their Jacobian
-- kernels, and those of the reduced right-hand side (reduced_dx,
-- reduced_dp): each Jacobian's sparse product with ns columns unrolled, its
-- entries computed once per call. A kernel of more than CHUNK rows is cut
-- into parts of CHUNK rows each, called in turn, as codegen cuts the
-- others.

local emit = require("salta.codegen_emit")

local M = {}

local DIRS_SIG = "(double t, const double *x, const double *z, const double *p, const double *restrict V, int ldv, "
  .. "int ns, double *restrict R, int ldr)"
local DIRS_P_SIG = "(double t, const double *x, const double *z, const double *p, const int *col, int ns, "
  .. "double *restrict R, int ldr)"
local SHARED_SIG = "(double t, const double *x, const double *z, const double *p, double *sh)"

-- The entries computed once, then for each column row i's products in
-- increasing column: the sums of the sparse product, in its order.
local function dirs_part(T, out, cname, jac)
  local em, terms, rows, used, cols = emit.new_emitter("  ", out.derived), {}, {}, {}, {}
  for _, ent in ipairs(jac) do
    if not terms[ent.row] then terms[ent.row] = {}; rows[#rows + 1] = ent.row end
    if not used[ent.col] then used[ent.col] = true; cols[#cols + 1] = ent.col end
    local list = terms[ent.row]
    list[#list + 1] = ("%s * v%d"):format(em:emit(ent.expr), ent.col - 1)
  end
  table.sort(rows)
  table.sort(cols)
  local parts = { "  (void)t; (void)x; (void)z; (void)p;" }
  for _, l in ipairs(em.scopes[1].lines) do parts[#parts + 1] = l end
  parts[#parts + 1] = "  for (int k = 0; k < ns; ++k) {"
  parts[#parts + 1] = "    const double *v = V + (long)k * ldv;"
  parts[#parts + 1] = "    double *r = R + (long)k * ldr;"
  -- every load before the first store: the compiler's alias walks stay short
  for _, j in ipairs(cols) do parts[#parts + 1] = ("    const double v%d = v[%d];"):format(j - 1, j - 1) end
  for _, i in ipairs(rows) do
    parts[#parts + 1] = ("    const double r%d = r[%d] + %s;"):format(i - 1, i - 1, table.concat(terms[i], " + "))
  end
  for _, i in ipairs(rows) do parts[#parts + 1] = ("    r[%d] = r%d;"):format(i - 1, i - 1) end
  parts[#parts + 1] = "  }"
  T.add_fn(out, "void", cname, DIRS_SIG, table.concat(parts, "\n"))
end

-- The nodes (other than leaves, and those skip(n) rules out) that the
-- entries of two or more columns of jac (sorted by column) read, those of
-- them a column reads other than through another (the list), and per
-- column whether it reads one.
local function shared_nodes(jac, skip)
  local count, columns = {}, {}
  local function walk(n, seen)
    if n.op == "var" or n.op == "const" or seen[n] or skip(n) then return end
    seen[n] = true
    count[n] = (count[n] or 0) + 1
    for i = 1, #n do
      if type(n[i]) == "table" then walk(n[i], seen) end
    end
  end
  local q = 1
  while q <= #jac do
    local c = { col = jac[q].col, exprs = {} }
    while q <= #jac and jac[q].col == c.col do
      c.exprs[#c.exprs + 1] = jac[q].expr
      q = q + 1
    end
    local seen = {}
    for _, e in ipairs(c.exprs) do walk(e, seen) end
    columns[#columns + 1] = c
  end
  local list, listed, reads = {}, {}, {}
  local function mark(n, seen, col)
    if n.op == "var" or n.op == "const" or seen[n] or skip(n) then return end
    seen[n] = true
    if count[n] > 1 then
      reads[col] = true
      if not listed[n] then listed[n] = true; list[#list + 1] = n end
      return
    end
    for i = 1, #n do
      if type(n[i]) == "table" then mark(n[i], seen, col) end
    end
  end
  for _, c in ipairs(columns) do
    local seen = {}
    for _, e in ipairs(c.exprs) do mark(e, seen, c.col) end
  end
  return list, reads
end

-- A case per column of jac (sorted by column), each computing its entries.
-- What two or more columns read is computed once per call, by the first
-- case that reads it (an input's tanh of t in the derivative by each
-- capacitance it scales), into sh by the function cname_shared.
local function dirs_p_part(T, out, cname, jac)
  -- the parameters' subexpressions are derived values already
  local list, reads = shared_nodes(jac, function(n) return out.derived ~= nil and emit.params_only(n) end)
  local parts, known = { "  (void)t; (void)x; (void)z; (void)p;" }, nil
  if #list > 0 then
    local em, sets = emit.new_emitter("  ", out.derived), {}
    known = {}
    for i, n in ipairs(list) do
      sets[i] = ("  sh[%d] = %s;"):format(i - 1, em:emit(n))
      known[n] = ("sh[%d]"):format(i - 1)
    end
    for _, l in ipairs(sets) do em.scopes[1].lines[#em.scopes[1].lines + 1] = l end
    T.add_fn(out, "void", cname .. "_shared", SHARED_SIG, table.concat(em.scopes[1].lines, "\n"))
    parts[#parts + 1] = ("  double sh[%d];"):format(#list)
    parts[#parts + 1] = "  int have_sh = 0;"
  end
  for _, l in ipairs({ "  for (int k = 0; k < ns; ++k) {", "    double *r = R + (long)k * ldr;", "    switch (col[k]) {" }) do
    parts[#parts + 1] = l
  end
  local q = 1
  while q <= #jac do
    local j, em, sums = jac[q].col, emit.new_emitter("      ", out.derived, known), {}
    while q <= #jac and jac[q].col == j do
      sums[#sums + 1] = ("      r[%d] = r[%d] + %s;"):format(jac[q].row - 1, jac[q].row - 1, em:emit(jac[q].expr))
      q = q + 1
    end
    parts[#parts + 1] = ("    case %d: {"):format(j - 1)
    if reads[j] then
      parts[#parts + 1] = ("      if (!have_sh) %s_shared(t, x, z, p, sh), have_sh = 1;"):format(cname)
    end
    for _, l in ipairs(em.scopes[1].lines) do parts[#parts + 1] = l end
    for _, l in ipairs(sums) do parts[#parts + 1] = l end
    parts[#parts + 1] = "      break;"
    parts[#parts + 1] = "    }"
  end
  parts[#parts + 1] = "    default: break;"
  parts[#parts + 1] = "    }"
  parts[#parts + 1] = "  }"
  T.add_fn(out, "void", cname, DIRS_P_SIG, table.concat(parts, "\n"))
end

-- The kernel name of jac's entries (column-major) by emit_part, in parts
-- of T.CHUNK rows when it has more; each part keeps jac's order.
local function dirs_kernel(T, out, cname, jac, emit_part, sig, args)
  local chunks, order = {}, {}
  for _, ent in ipairs(jac) do
    local c = (ent.row - 1) // T.CHUNK + 1
    if not chunks[c] then chunks[c] = {}; order[#order + 1] = c end
    chunks[c][#chunks[c] + 1] = ent
  end
  if #order == 1 then return emit_part(T, out, cname, jac) end
  table.sort(order)
  local calls = {}
  for _, c in ipairs(order) do
    emit_part(T, out, cname .. "_part" .. c, chunks[c])
    calls[#calls + 1] = ("  %s_part%d%s;"):format(cname, c, args)
  end
  out.main[#out.main + 1] = "static void " .. cname .. sig .. " {\n" .. table.concat(calls, "\n") .. "\n}"
end

-- Directional kernels are generated for f and g up to this many entries
-- of the Jacobians they multiply by: their gain is a call's overhead per
-- stage, large against a small model's products, while cc's time grows
-- with their length (the Cauer ladder of 1,500 equations: 1.7 s without
-- them, 4.5 s with them up to 4,096 entries). A spec sets 0 to compare
-- with the sparse products.
M.MAX_ENTRIES = 256

-- emit(out, prefix, pat, blocks, T): the directional kernels by the
-- arguments blocks ("x", "z", "p") of the function prefix with Jacobian
-- patterns pat, into out (salta.codegen's text being generated, T its
-- add_fn and CHUNK), or nil when too large or implicit (its Newton could
-- fail): the salta_function_def initialiser's fields.
function M.emit(out, prefix, pat, blocks, T)
  local fields, entries = {}, 0
  for _, w in ipairs(blocks) do entries = entries + #pat[w] end
  if entries > M.MAX_ENTRIES then return nil end
  for _, w in ipairs(blocks) do
    for _, ent in ipairs(pat[w]) do if emit.contains_implicit(ent.expr) then return nil end end
  end
  for _, w in ipairs(blocks) do
    if #pat[w] > 0 then
      if w == "p" then
        dirs_kernel(T, out, prefix .. "_dp", pat.p, dirs_p_part, DIRS_P_SIG, "(t, x, z, p, col, ns, R, ldr)")
      else
        dirs_kernel(T, out, prefix .. "_d" .. w, pat[w], dirs_part, DIRS_SIG, "(t, x, z, p, V, ldv, ns, R, ldr)")
      end
      fields[#fields + 1] = (".dirs_%s = %s_d%s"):format(w, prefix, w)
    end
  end
  return #fields > 0 and table.concat(fields, ", ") or nil
end

-- emit_reduced(out, jac, T): the reduced right-hand side's directional
-- kernels (salta_kernel.h: reduced_dx, reduced_dp; both, even empty) by its
-- Jacobians jac = {x, p} (salta.codegen's), into out: the def's fields
-- {name, value}.
function M.emit_reduced(out, jac, T)
  dirs_kernel(T, out, "k_F_dx", jac.x, dirs_part, DIRS_SIG, "(t, x, z, p, V, ldv, ns, R, ldr)")
  dirs_kernel(T, out, "k_F_dp", jac.p, dirs_p_part, DIRS_P_SIG, "(t, x, z, p, col, ns, R, ldr)")
  return { { "reduced_dx", "k_F_dx" }, { "reduced_dp", "k_F_dp" } }
end

return M
