-- make bench: the cold cc build of the 10,002-equation Cauer ladder (N =
-- 3334), in rounds that interleave its variants: the source as one unit
-- on one compiler (as before units), cut into units compiled at once
-- (SALTA_JOBS, else every processor), the units compiled one at a time
-- (SALTA_JOBS=1, in a child process), the units cached and only the
-- library gone (a relink), and the library cached (a load); then the
-- kernels of each build against tcc's, and how long the default route's
-- model runs on tcc before it takes the cc kernels.
--
--   dofile("examples/bench/cold_compile.lua")(row, rounds)
--   row(label, xs, unit, scale) prints median, min, max of xs
--
-- As a script (the child): salta cold_compile.lua SOURCE_FILE CACHE_DIR
-- prints the seconds of one cc build of the file's C.
local core = require("salta.core")

local SYMBOL = "salta_model"

local child_src, child_dir = ...
if child_src then
  local f = assert(io.open(child_src, "rb"))
  local src = f:read("a")
  f:close()
  local t0 = core.clock()
  local handle, msg = core.compile_cc(src, SYMBOL, "child", child_dir)
  assert(handle, tostring(msg))
  print(core.clock() - t0)
  return
end

local codegen = require("salta.codegen")

local function fresh_dir()
  local p = os.tmpname()
  os.remove(p)
  return p
end

local function median(xs)
  local s = { table.unpack(xs) }
  table.sort(s)
  return #s % 2 == 1 and s[(#s + 1) // 2] or (s[#s // 2] + s[#s // 2 + 1]) / 2
end

local function timed_compile(src, name, dir)
  local t0 = core.clock()
  local handle, cached = core.compile_cc(src, SYMBOL, name, dir)
  assert(handle, tostring(cached))
  return core.clock() - t0, handle, cached
end

-- one cold build of src by the salta host in a child process with SALTA_JOBS=1
local function one_job_compile(src, dir)
  local file = os.tmpname()
  local f = assert(io.open(file, "wb"))
  f:write(src)
  f:close()
  local p = assert(io.popen(("SALTA_JOBS=1 %s examples/bench/cold_compile.lua %s %s"):format(arg[-1], file, dir)))
  local out = p:read("a")
  p:close()
  os.remove(file)
  return assert(tonumber(out), out)
end

return function(row, rounds)
  rounds = rounds or 3
  local ladder = dofile("models/cauer_ladder.lua")
  local m = ladder{ N = 3334, backend = "tcc" }
  local src = m:c_source()
  local whole = src:gsub("\n" .. codegen.UNIT_MARK:gsub("%p", "%%%0") .. "\n", "\n")
  local nunits = select(2, src:gsub(codegen.UNIT_MARK:gsub("%p", "%%%0"), ""))
  local neq = #m.states + #m.algebraics + #m.structure.aliases
  print(("\n== cold cc build: Cauer ladder N = 3334 (%d equations, %d KB of C, %d units), %d interleaved rounds ==")
    :format(neq, #src // 1024, nunits, rounds))
  local t = { whole = {}, units = {}, one_job = {}, relink = {}, load = {} }
  local jit_whole, jit_units
  for _ = 1, rounds do
    local d1, d2, d3 = fresh_dir(), fresh_dir(), fresh_dir()
    t.whole[#t.whole + 1], jit_whole = timed_compile(whole, m.name, d1)
    t.units[#t.units + 1], jit_units = timed_compile(src, m.name, d2)
    t.one_job[#t.one_job + 1] = one_job_compile(src, d3)
    os.execute("rm -f " .. d2 .. "/*.so " .. d2 .. "/*.sum")
    t.relink[#t.relink + 1] = timed_compile(src, m.name, d2)
    local s, _, cached = timed_compile(src, m.name, d2)
    assert(cached)
    t.load[#t.load + 1] = s
    os.execute("rm -rf " .. d1 .. " " .. d2 .. " " .. d3)
  end
  row("before: one unit, one compiler", t.whole, "s")
  local jobs = os.getenv("SALTA_JOBS")
  row(jobs and "after: units, SALTA_JOBS=" .. jobs or "after: units on every processor", t.units, "s")
  row("units, one compiler at a time (SALTA_JOBS=1)", t.one_job, "s")
  row("warm units (library gone: relink)", t.relink, "s")
  row("warm library (load)", t.load, "ms", 1e3)
  print(("  %-46s %10.2f x (medians; min / min %.2f x)"):format("before / after", median(t.whole) / median(t.units),
    math.min(table.unpack(t.whole)) / math.min(table.unpack(t.units))))
  -- kernels: f, g, h, guards and all their Jacobians, one evaluation
  local kernels = { { "tcc", m.core }, { "cc, one unit", core.model(jit_whole) }, { "cc, units", core.model(jit_units) } }
  for _, k in ipairs(kernels) do
    local xs = {}
    for r = 1, 7 do xs[r] = select(2, k[2]:bench(20)) end
    row("kernels " .. k[1] .. ": f g h e + all Jacobians", xs, "us", 1e6)
  end
  -- the default route: tcc at once, then the cc kernels live
  local dir = fresh_dir()
  local t0 = core.clock()
  local live, info = require("salta.jit").compile(m.symbolic, { cache_dir = dir })
  local built = core.clock() - t0
  local function live_kernels()
    local xs, backend = {}, live:backend()
    for r = 1, 7 do xs[r] = select(2, live:bench(20)) end
    assert(live:backend() == backend, "the kernels changed while they were timed")
    row(("default route's model, %s kernels: f g h e + Jac"):format(backend), xs, "us", 1e6)
  end
  live_kernels()
  while live:backend() ~= "cc" and core.clock() - t0 < 900 do os.execute("sleep 0.1") end
  print(("  %-46s %.2f s to a %s model (C emitted, compiled), its cc kernels live %.1f s after the start")
    :format("default route (auto)", built, info.backend, core.clock() - t0))
  live_kernels()
  os.execute("rm -rf " .. dir)
end
