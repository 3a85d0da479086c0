-- make bench: timings of the model compiler (and, as they land, the
-- simulation and gradient routes). Prints medians with min and max of
-- repeated runs. Run with the salta host so both JIT backends are there.
local jit = require("salta.jit")

local common = dofile("examples/bench/common.lua")
local stats, uniform = common.stats, common.uniform

local function row(label, xs, unit, scale)
  scale = scale or 1
  local med, lo, hi = stats(xs)
  print(("  %-46s %10.3f %-3s (min %.3f, max %.3f, n = %d)"):format(label, med * scale, unit,
    lo * scale, hi * scale, #xs))
end

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(os.execute("mkdir -p " .. p))
  return p
end

local balls = dofile("models/bouncing_balls.lua")
local cauer = dofile("models/cauer.lua")

print("== model compiler: bouncing balls N = 15 (60 states, 165 events) ==")
local m15 = balls{ N = 15 }
local desc = m15.symbolic
local gen = {}
for _ = 1, 3 do gen[#gen + 1] = balls{ N = 15 }.compile_info.codegen_seconds end
row("differentiate + emit C (Lua)", gen, "s")
local available = jit.available()
for _, b in ipairs({ "tcc", "cc" }) do
  if available[b] then
    local times = {}
    for _ = 1, 3 do
      local dir = tmpdir()
      local _, info = jit.compile(desc, { backend = b, cache_dir = dir })
      assert(info.backend == b, "backend " .. b .. " fell back to " .. info.backend)
      times[#times + 1] = info.seconds
      os.execute("rm -rf " .. dir)
    end
    row("compile C, " .. b .. " backend (cold cache)", times, "s")
  else
    print(("  %-46s not available in this interpreter"):format("compile C, " .. b .. " backend"))
  end
end
do
  local dir = tmpdir()
  jit.compile(desc, { backend = "cc", cache_dir = dir })
  local times = {}
  for _ = 1, 5 do
    local _, info = jit.compile(desc, { backend = "cc", cache_dir = dir })
    times[#times + 1] = info.seconds
  end
  row("load C, cc backend (warm cache)", times, "ms", 1e3)
  os.execute("rm -rf " .. dir)
end
if available.cc then
  dofile("examples/bench/cold_compile.lua")(row, tonumber(os.getenv("SALTA_BENCH_COMPILE_ROUNDS")) or 3)
end

print("== one evaluation of f, and of f, g, h, guards with all their Jacobians ==")
local function kernel_rows(label, models)
  for _, entry in ipairs(models) do
    local tf, tall = {}, {}
    for _ = 1, 7 do
      local a, b = entry.m.core:bench(20000)
      tf[#tf + 1], tall[#tall + 1] = a, b
    end
    row(label .. " " .. entry.name .. ": f", tf, "ns", 1e9)
    row(label .. " " .. entry.name .. ": f g h e + all Jacobians", tall, "ns", 1e9)
  end
end
for _, b in ipairs({ "tcc", "cc" }) do
  if available[b] then
    kernel_rows(b, {
      { name = "cauer", m = cauer{ backend = b } },
      { name = "balls N15", m = balls{ N = 15, backend = b } },
    })
  end
end

print("== simulation (rtol 1e-6, atol 1e-8 as in the reference's IDA runs; 500 output times) ==")
local latch = dofile("models/spring_latch.lua")
local sim_cases = {
  { "cauer", cauer{ backend = "cc" }, 20.0 },
  { "spring latch", latch{ backend = "cc" }, 10.0 },
  { "balls N3", balls{ N = 3, backend = "cc" }, 1.9 },
  { "balls N7", balls{ N = 7, backend = "cc" }, 1.9 },
  { "balls N15", balls{ N = 15, backend = "cc" }, 1.9 },
}
local clock = require("salta.core").clock
local guard_summary = {}
for _, c in ipairs(sim_cases) do
  local name, m, tf = c[1], c[2], c[3]
  local times = uniform(tf, 500)
  for _, v in ipairs({ { "bdf", "dense" }, { "bdf", "klu" }, { "erk" } }) do
    local xs, tr = {}, nil
    for _ = 1, 21 do
      local t0 = clock()
      tr = m:simulate{ tf = tf, times = times, rtol = 1e-6, atol = 1e-8, method = v[1], linear_solver = v[2] }
      xs[#xs + 1] = clock() - t0
    end
    row(("%s (%s)"):format(name, table.concat(v, ", ")), xs, "ms", 1e3)
    local st = tr:stats()
    print(("      %d events, %d guard evaluations (%.1f per event), %d steps, %d residual/RHS, %d Jacobian, %d Newton iterations, %d convergence failures, %d error-test failures"):format(
      st.events, st.guard_evals, st.guard_evals / math.max(1, st.events), st.steps, st.residual_evals, st.jacobian_evals,
      st.newton_iters, st.newton_conv_fails, st.error_test_fails))
    guard_summary[#guard_summary + 1] = { ("%s (%s)"):format(name, table.concat(v, ", ")), st.events, st.guard_evals }
  end
end

print("== loss and gradient by forward sensitivities (rtol = atol = 1e-6, the JAX-AD route's tolerances) ==")
print("   reference per iteration (the seed paper's runs): JAX-AD 28.4 ms Cauer; 74 / 71 / 110 ms balls N = 3 / 7 / 15;")
print("   PyTorch 554 / 1740 / 6652 ms balls")
local salta = require("salta")
local summary = {}
local function grad_case(name, m, tf, outputs, free, p, ref_ms, method, ls, atol, adjoint)
  local times = {}
  for i = 0, 500 do times[i + 1] = tf * i / 500 end
  local tr = m:simulate{ tf = tf, times = times, rtol = 1e-10, atol = 1e-12 }
  local data = {}
  for _, o in ipairs(outputs) do data[o] = tr.y[o] end
  local L = salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-6, atol = atol or 1e-6,
    method = method, linear_solver = ls }
  local xs = {}
  for _ = 1, 25 do
    local t0 = clock()
    if adjoint then L:grad(p, adjoint) else L:value_and_grad(p) end
    xs[#xs + 1] = clock() - t0
  end
  local med, lo, hi = stats({ table.unpack(xs) })
  local label = adjoint and ("%s [adjoint, mesh %s%s]"):format(name, tostring(adjoint.mesh), ls and (", " .. ls) or "")
    or ("%s [%s%s%s]"):format(name, method, ls and (", " .. ls) or "", atol and (", atol " .. atol) or "")
  row(label, xs, "ms", 1e3)
  print(("      JAX-AD %.1f ms: %.0fx faster"):format(ref_ms, ref_ms / (med * 1e3)))
  summary[#summary + 1] = { label, med * 1e3, lo * 1e3, hi * 1e3, ref_ms }
end
local cauer_p = { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 }
local cauer_cc = cauer{ backend = "cc" }
for _, v in ipairs({ { "bdf" }, { "erk" }, { "erk", 1e-8 } }) do
  grad_case("Cauer, 501 x 5 states, 7 params", cauer_cc, 20.0,
    { "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" }, { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" },
    cauer_p, 28.4, v[1], nil, v[2])
end
grad_case("Cauer, 501 x 5 states, 7 params", cauer_cc, 20.0,
  { "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" }, { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" },
  cauer_p, 28.4, "bdf", nil, nil, { method = "adjoint", mesh = "steps" })
for _, c in ipairs({ { 3, 74 }, { 7, 71 }, { 15, 110 } }) do
  local N = c[1]
  local pos = {}
  for i = 1, N do pos[#pos + 1] = "x" .. i; pos[#pos + 1] = "y" .. i end
  local m = balls{ N = N, backend = "cc" }
  grad_case(("balls N%d, 501 x %d positions, 3 params"):format(N, 2 * N), m, 1.9, pos,
    { "g", "e_g", "e_b" }, { 8.81, 0.6, 0.7 }, c[2], "bdf", "klu")
  grad_case(("balls N%d, 501 x %d positions, 3 params"):format(N, 2 * N), m, 1.9, pos,
    { "g", "e_g", "e_b" }, { 8.81, 0.6, 0.7 }, c[2], "erk")
  grad_case(("balls N%d, 501 x %d positions, 3 params"):format(N, 2 * N), m, 1.9, pos,
    { "g", "e_g", "e_b" }, { 8.81, 0.6, 0.7 }, c[2], "bdf", "klu", nil, { method = "adjoint", mesh = 5 })
end

print("\n== adjoint against forward sensitivities: cost in the number of free parameters ==")
do
  -- a damped chain of 10 masses with 50 parameters (couplings and forcing
  -- weights), and a latch event on the first mass; forcing up to 50 rad/s
  -- needs 200 trapezoid nodes per segment for the adjoint's discrete loss
  -- to stay within 10 % of the integrator's (50 are too few)
  local NP = 50
  local params, states = {}, {}
  for k = 1, NP do params[k] = { "k" .. k, 0.05 + 0.01 * (k % 7) } end
  for i = 1, 10 do states[#states + 1] = { "x" .. i, 0.1 * i }; states[#states + 1] = { "v" .. i, 0 } end
  local chain = salta.dae{ name = "chain50", states = states, params = params, backend = "cc",
    f = function(t, x, z, p)
      local d = {}
      for i = 1, 10 do
        local force = -x["x" .. i] - 0.1 * x["v" .. i]
        for k = i, NP, 10 do force = force + p["k" .. k] * salta.sin(x["x" .. (i % 10) + 1] + k * t) end
        d[#d + 1] = x["v" .. i]
        d[#d + 1] = force
      end
      return d
    end,
    events = { { name = "latch", direction = "down", guard = function(t, x) return x.x1 - 0.05 end,
      reset = function(t, x) return { v1 = -0.8 * x.v1 } end } } }
  local times = {}
  for i = 1, 200 do times[i] = 10 * i / 200 end
  local tr = chain:simulate{ tf = 10, times = times, rtol = 1e-10, atol = 1e-12 }
  local data = {}
  for i = 1, 10 do data["x" .. i] = tr.y["x" .. i] end
  local p0 = {}
  for k = 1, NP do p0[k] = chain.p0["k" .. k] * 1.05 end
  print(("  chain50: %d events on [0, 10], 200 times x 10 outputs"):format(#tr:events()))
  for _, nfree in ipairs({ 5, 25, 50 }) do
    local free, p = {}, {}
    for k = 1, nfree do free[k], p[k] = "k" .. k, p0[k] end
    local L = salta.lsq{ model = chain, times = times, data = data, free = free, rtol = 1e-6, atol = 1e-8 }
    for _, route in ipairs({ { "sens", {} }, { "adjoint, mesh 200", { method = "adjoint", mesh = 200 } } }) do
      local xs = {}
      for _ = 1, 7 do
        local t0 = clock()
        L:grad(p, route[2])
        xs[#xs + 1] = clock() - t0
      end
      row(("%d free parameters, %s"):format(nfree, route[1]), xs, "ms", 1e3)
    end
  end
end

-- Interleaved rounds of a floor program (the shell command cmd) and
-- salta's L:value_and_grad(p): per round, the floor's median and the
-- median of reps salta evaluations, in us; and the floor's last output.
local function floor_rounds(cmd, rounds, L, p, reps)
  local fl, sl, out = {}, {}, ""
  for _ = 1, rounds do
    local f = io.popen(cmd)
    out = f:read("a")
    f:close()
    fl[#fl + 1] = tonumber(out:match("median_us ([%d%.]+)"))
    local xs = {}
    for k = 1, reps do
      local t0 = clock()
      L:value_and_grad(p)
      xs[k] = clock() - t0
    end
    sl[#sl + 1] = stats(xs) * 1e6
  end
  assert(#fl == rounds and fl[1], "the floor program did not run: " .. out)
  return fl, sl, out
end

print("\n== the IDAS floor: salta against IDAS called directly (loss + gradient, rtol = atol = 1e-6) ==")
print("   floor: examples/bench/floor_idas_<case>.c (residual, Jacobian and sensitivity residuals by hand, IDAS's")
print("   staggered sensitivities and root finding); the Cauer is the workload of the Cauer row below; the stiff")
print("   relay (models/stiff_relay.lua) is a stiff hybrid DAE whose default route is auto (ERK detects the")
print("   stiffness, BDF integrates); 7 interleaved rounds, salta's figure per round the median of 9 evaluations")
do
  local floor_dir = os.getenv("SALTA_FLOOR_DIR") or "build/bench"
  local fin = dofile("examples/bench/floor_input.lua")
  local input_dir = tmpdir()
  local cases = {
    { "cauer", fin.write_cauer, "bdf", "Cauer, 501 x 5 states, 7 params, method bdf" },
    { "stiff", fin.write_stiff, nil, "stiff relay, 501 x 2 outputs, 6 params, default" },
    { "stiff", fin.write_stiff, "bdf", "stiff relay, 501 x 2 outputs, 6 params, bdf" },
  }
  for _, c in ipairs(cases) do
    local path = input_dir .. "/" .. c[1] .. ".txt"
    local L0, p = c[2](path, { default = true })
    local spec = {}
    for k, v in pairs(L0.spec) do spec[k] = v end
    spec.method = c[3]
    local L = require("salta.lsq").new(spec)
    local fl, sl, out = floor_rounds(("FLOOR_STATS=1 %s/floor_idas_%s %s 10 2>&1"):format(floor_dir, c[1], path), 7,
      L, p, 9)
    local fmed, fmin, fmax = stats(fl)
    local smed, smin, smax = stats(sl)
    local st = L:stats()
    local _, g = L:value_and_grad(p)
    local fg, agree, big = {}, 0, 0
    for v in (out:match("grad([^\n]*)") or ""):gmatch("%S+") do fg[#fg + 1] = tonumber(v) end
    for k = 1, #g do big = math.max(big, math.abs(g[k])) end
    for k = 1, #g do agree = math.max(agree, math.abs(g[k] - (fg[k] or math.huge)) / big) end
    print(("  %-50s IDAS  %9.1f us (min %.1f, max %.1f); %s"):format(c[4], fmed, fmin, fmax,
      out:match("per evaluation: ([^\n]+)") or "?"))
    print(("  %-50s salta %9.1f us (min %.1f, max %.1f): %.2fx the IDAS floor; steps %d, residuals %d, "
      .. "Jacobians %d, guard evaluations %d; gradients agree to %.1e of the largest"):format("", smed, smin, smax,
      smed / fmed, st.steps, st.residual_evals, st.jacobian_evals, st.guard_evals, agree))
  end
  os.execute("rm -rf " .. input_dir)
end

print("\n== the floor: salta's default route against hand-written C (loss + gradient, rtol = atol = 1e-6) ==")
print("   default route: salta.lsq with no method, backend or solver (auto: ERK here; cc kernels once built);")
print("   floor: examples/bench/floor_balls.c (closed-form flight and event times, derivatives through them),")
print("   floor_cauer.c (fused Dormand-Prince with sensitivities on salta's steps), gcc -O2; interleaved rounds")
local floor_rows = {}
do
  local floor_dir = os.getenv("SALTA_FLOOR_DIR") or "build/bench"
  local fin = dofile("examples/bench/floor_input.lua")
  local input_dir = tmpdir()
  for _, c in ipairs({ { "balls", "balls N15, 501 x 30 positions, 3 params", 110.0, function(path)
    return fin.write_balls(path, 15, { default = true }) end },
    { "cauer", "Cauer, 501 x 5 states, 7 params", 28.4, function(path) return fin.write_cauer(path, { default = true }) end } }) do
    local path = input_dir .. "/" .. c[1] .. ".txt"
    local L, p = c[4](path)
    local v, g = L:value_and_grad(p)
    local fl, sl, out = floor_rounds(("%s/floor_%s %s 200"):format(floor_dir, c[1], path), 9, L, p, 41)
    -- agreement: the floor's loss and gradient against salta's
    local dev = math.abs(tonumber(out:match("loss (%S+)")) - v) / math.abs(v)
    local k = 0
    for x in out:match("grad ([^\n]+)"):gmatch("%S+") do
      k = k + 1
      dev = math.max(dev, math.abs(tonumber(x) - g[k]) / math.max(math.abs(g[k]), 1e-300))
    end
    local fmed, fmin, fmax = stats(fl)
    local smed, smin, smax = stats(sl)
    local st = L:stats()
    print(("  %-44s floor %8.1f us (min %.1f, max %.1f)"):format(c[2], fmed, fmin, fmax))
    print(("  %-44s salta %8.1f us (min %.1f, max %.1f): %.1fx the floor [%s, %s kernels]; loss and gradient agree to %.1e"):format(
      "", smed, smin, smax, smed / fmed, st.method, L.model.compile_info.backend, dev))
    floor_rows[#floor_rows + 1] = { c[2] .. " [default route]", smed / 1e3, smin / 1e3, smax / 1e3, c[3], smed / fmed }
  end
  os.execute("rm -rf " .. input_dir)
end

print("\n== MPI: 8 Cauer experiments (salta.experiments), loss + gradient, alone and on 2 ranks ==")
do
  local script = "examples/bench/mpi_experiments.lua"
  local bin = arg and arg[-1] or "build/salta"
  local function run(cmd)
    local f = io.popen(cmd .. " 2>&1")
    local out = f:read("a")
    f:close()
    return out
  end
  local have = os.execute("command -v mpirun > /dev/null 2>&1") and io.open("build/lua/salta/mpi_core.so")
  if not have then
    print("  skipped: no mpirun or no MPI binding (make deps installs OpenMPI, make builds the binding)")
  else
    have:close()
    local t1, t2, ar = {}, {}, {}
    for _ = 1, 3 do   -- interleaved rounds
      local a = run(("%s %s 41"):format(bin, script))
      local b = run(("mpirun --allow-run-as-root --oversubscribe -n 2 %s %s 41"):format(bin, script))
      t1[#t1 + 1] = tonumber(a:match("median_us ([%d%.]+)"))
      t2[#t2 + 1] = tonumber(b:match("median_us ([%d%.]+)"))
      ar[#ar + 1] = tonumber(b:match("allreduce_us ([%d%.]+)"))
      assert(t1[#t1] and t2[#t2] and ar[#ar], "the MPI bench did not run:\n" .. a .. "\n" .. b)
    end
    local m1, lo1, hi1 = stats(t1)
    local m2, lo2, hi2 = stats(t2)
    local mar = stats(ar)
    print(("  1 process                                  %9.1f us (min %.1f, max %.1f)"):format(m1, lo1, hi1))
    print(("  2 ranks                                    %9.1f us (min %.1f, max %.1f)"):format(m2, lo2, hi2))
    print(("  parallel efficiency T1 / (2 T2)            %9.2f"):format(m1 / (2 * m2)))
    -- the scaling model (README, "Many experiments on MPI"): T(K) =
    -- ceil(E/K) t_e + ceil(log2 K) t_ar
    local te = m1 / 8
    local function eff(E, K)
      local T = math.ceil(E / K) * te + math.ceil(math.log(K, 2)) * mar
      return E * te / (K * T)
    end
    print(("  per experiment t_e %.1f us; allreduce t_ar %.2f us (2 ranks, one node)"):format(te, mar))
    print(("  model at 64 ranks: E = 8: %.3f (at most 8 of 64 busy); E = 512: %.3f; E = 512 with t_ar x 100: %.3f"):format(
      eff(8, 64), eff(512, 64), (function() local s = mar; mar = 100 * mar; local v = eff(512, 64); mar = s; return v end)()))
  end
end

-- Scaling: model families from 10 to 10,000 equations, compiled with tcc
-- (the default route for a large model; cc builds it in the background).
-- Times are medians of 3 runs (the adjoint at 10,000 equations: one).
local function structure_text(m)
  local st = m.structure
  local b = #st.blocks == 0 and "no Newton" or ("Newton blocks " .. table.concat(st.blocks, ","))
  return ("%d expl, %d alias; %s"):format(st.explicit, #st.aliases, b)
end

local function scaling_row(family, N, make, tf, outputs, free, p)
  local t0 = clock()
  local m = make(N)
  local build = clock() - t0
  local times = uniform(tf, 50)
  local sims, tr = {}, nil
  for k = 1, 3 do
    t0 = clock()
    tr = m:simulate{ tf = tf, times = times, rtol = 1e-6, atol = 1e-8 }
    sims[k] = clock() - t0
  end
  local data = {}
  for _, o in ipairs(outputs) do data[o] = tr.y[o] end
  local L = salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-6, atol = 1e-8 }
  local sens, adj, cont, adj_err, cont_err, gs, gc = {}, {}, {}, nil, nil, nil, nil
  local neq = #m.states + #m.algebraics + #m.structure.aliases
  for k = 1, neq > 5000 and 1 or 3 do
    t0 = clock(); gs = L:grad(p, { method = "sens" }); sens[k] = clock() - t0
    t0 = clock()
    local ok, err = pcall(L.grad, L, p, { method = "adjoint" })
    adj[k], adj_err = clock() - t0, not ok and tostring(err) or adj_err
    t0 = clock()
    ok, err = pcall(L.grad, L, p, { method = "adjoint_cont" })
    cont[k], cont_err, gc = clock() - t0, not ok and tostring(err) or cont_err, ok and err or gc
  end
  local info = m.compile_info
  local diff = 0   -- the continuous adjoint against sens, relative to the largest component
  if gc then
    local big = 0
    for k = 1, #gs do big = math.max(big, math.abs(gs[k])) end
    for k = 1, #gs do diff = math.max(diff, math.abs(gc[k] - gs[k]) / big) end
  end
  print(("  %-12s %6d %7d %8.2f %8.2f %8d %-34s %9.1f %7d %10.1f %11s %11s %8s"):format(family, N, neq,
    info.codegen_seconds, build - info.codegen_seconds, #info.source // 1024, structure_text(m),
    stats(sims) * 1e3, #tr:events(), stats(sens) * 1e3, adj_err and "failed" or ("%.1f"):format(stats(adj) * 1e3),
    cont_err and "failed" or ("%.1f"):format(stats(cont) * 1e3), cont_err and "" or ("%.1e"):format(diff)))
  if adj_err then print("    adjoint: " .. adj_err:gsub("\n.*", "")) end
  if cont_err then print("    adjoint_cont: " .. cont_err:gsub("\n.*", "")) end
  return neq, stats(sims), stats(sens)
end

print("\n== scaling: model families, tcc (build = trace + structure + compile after codegen) ==")
print("   (adj_cont: the continuous adjoint; vs sens: its largest difference from sens, relative to the largest")
print("   component, both at rtol 1e-6; large where the two routes' runs take different sides of a near-grazing")
print("   crossing: on the network of 200 buses, buses 98 and 99 near their threshold, one or the other turns on)")
print(("  %-12s %6s %7s %8s %8s %8s %-34s %9s %7s %10s %11s %11s %8s"):format("family", "N", "eqs", "codegen", "build",
  "C KB", "after BLT and tearing", "sim ms", "events", "sens ms", "adjoint ms", "adj_cont ms", "vs sens"))
do
  local ladder = dofile("models/cauer_ladder.lua")
  local fit = {}
  for _, N in ipairs({ 3, 33, 333, 3334 }) do
    local neq, sim, sens = scaling_row("cauer ladder", N, function(n) return ladder{ N = n, backend = "tcc" } end,
      20, { "vN", "v1" }, { "L", "C" }, { 0.52, 0.49 })
    fit[#fit + 1] = { neq, sim, sens }
  end
  local rc = dofile("models/rc_network.lua")
  for _, N in ipairs({ 2, 20, 200 }) do
    scaling_row("rc network", N, function(n) return rc{ N = n, backend = "tcc" } end, 10, { "vN", "v1" },
      { "C", "Rl" }, { 0.21, 0.051 })
  end
  for _, N in ipairs({ 3, 7, 15 }) do
    scaling_row("balls", N, function(n) return balls{ N = n, backend = "tcc" } end, 1.9, { "y1", "x1" },
      { "g", "e_g" }, { 9.7, 0.78 })
  end
  -- cost ~ N^a from 99 to 10,002 equations (the ladder)
  local a, b = fit[2], fit[#fit]
  local span = math.log(b[1] / a[1])
  print(("  ladder, %d -> %d equations: simulation ~ N^%.2f, sens ~ N^%.2f (N log N is ~N^%.2f over this span)"):format(
    a[1], b[1], math.log(b[2] / a[2]) / span, math.log(b[3] / a[3]) / span,
    math.log(b[1] * math.log(b[1]) / (a[1] * math.log(a[1]))) / span))
end

dofile("examples/bench/routes.lua")

print("\n== event location: guard evaluations per event (plain simulation, rtol 1e-6) ==")
print(("%-40s %8s %12s %10s"):format("model (integrator)", "events", "guard evals", "per event"))
for _, r in ipairs(guard_summary) do
  print(("%-40s %8d %12d %10.1f"):format(r[1], r[2], r[3], r[3] / math.max(1, r[2])))
end

print("\n== summary: ms per loss-and-gradient evaluation (25 runs, single thread) ==")
print(("%-64s %9s %9s %9s %9s %8s %8s"):format("model [integrator]", "median", "min", "max", "JAX-AD", "speedup",
  "/floor"))
for _, r in ipairs(floor_rows) do
  print(("%-64s %9.3f %9.3f %9.3f %9.1f %7.0fx %7.1fx"):format(r[1], r[2], r[3], r[4], r[5], r[5] / r[2], r[6]))
end
for _, r in ipairs(summary) do
  print(("%-64s %9.3f %9.3f %9.3f %9.1f %7.0fx"):format(r[1], r[2], r[3], r[4], r[5], r[5] / r[2]))
end

