-- make bench (examples/bench.lua runs it; alone: build/salta
-- examples/bench/routes.lua): loss + gradient time against the number of
-- free parameters by each route, and the crossover of sens and adjoint_cont.
-- SALTA_BENCH_ROUNDS sets the interleaved rounds (3).
local salta = require("salta")
local clock = require("salta.core").clock

local common = dofile("examples/bench/common.lua")
local stats, uniform = common.stats, common.uniform

-- Loss + gradient against the number of free parameters, by each route:
-- forward sensitivities, the discrete adjoint and the continuous adjoint.
-- Rounds interleave the routes; the crossover is where the sensitivities'
-- line (through the two sizes that bracket it) meets the continuous
-- adjoint's, the rule salta_route_for follows (core.route_crossover).
local function route_rows(title, m, times, data, first_free, sizes, p_of, rounds, method)
  print(("\n== loss + gradient against free parameters: %s, runs by %s =="):format(title, method or "auto"))
  print(("  %6s %-14s %10s %10s %10s"):format("free", "route", "median ms", "min", "max"))
  local routes = { "sens", "adjoint", "adjoint_cont" }
  local med = {}
  for _, np in ipairs(sizes) do
    local free, p = {}, {}
    for k = 1, np do free[k] = m.params[first_free - 1 + k]; p[k] = p_of(k) end
    local L = salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-6, atol = 1e-8, method = method }
    local t, err = {}, {}
    for _, r in ipairs(routes) do t[r] = {} end
    for _ = 1, rounds do
      for _, r in ipairs(routes) do
        local t0 = clock()
        local ok, e = pcall(L.value_and_grad, L, p, { method = r })
        t[r][#t[r] + 1] = clock() - t0
        if not ok then err[r] = tostring(e):gsub("\n.*", "") end
      end
    end
    med[np] = {}
    for _, r in ipairs(routes) do
      local md, lo, hi = stats(t[r])
      med[np][r] = md
      if err[r] then print(("  %6d %-14s failed: %s"):format(np, r, err[r]))
      else print(("  %6d %-14s %10.1f %10.1f %10.1f"):format(np, r, md * 1e3, lo * 1e3, hi * 1e3)) end
    end
  end
  local cross
  for i = 2, #sizes do
    local a, b = sizes[i - 1], sizes[i]
    local da = med[a].sens - med[a].adjoint_cont
    local db = med[b].sens - med[b].adjoint_cont
    if not cross and da <= 0 and db > 0 then cross = a + (b - a) * (-da) / (db - da) end
  end
  if not cross and med[sizes[1]].sens > med[sizes[1]].adjoint_cont then cross = sizes[1] end
  print(("  crossover (sens = adjoint_cont): %s free parameters; the route chooser's rule: adjoint_cont from %d"):format(
    cross and ("%.0f"):format(cross) or ("beyond " .. sizes[#sizes]), require("salta.core").route_crossover))
end

-- the Cauer ladder with each section its own L and C, N sections (2N + 3
-- parameters), free the first of them in each size
local function ladder_rows(N, sizes, method)
  local m = dofile("models/cauer_ladder.lua"){ N = N, local_params = true, backend = "tcc" }
  local times = uniform(10, 40)
  local tr = m:simulate{ tf = 10, times = times, rtol = 1e-6, atol = 1e-8 }
  route_rows(("Cauer ladder N = %d, each section its own L and C (%d parameters)"):format(N, #m.params), m, times,
    { vN = tr.y.vN, v1 = tr.y.v1 }, 4, sizes, function(k) return 0.5 * (1 + 0.01 * (k % 7)) end,
    tonumber(os.getenv("SALTA_BENCH_ROUNDS")) or 3, method)
end

ladder_rows(5, { 1, 3, 10 })
ladder_rows(50, { 1, 3, 10, 30, 100 })
ladder_rows(500, { 1, 3, 10, 100, 1000 })
ladder_rows(5, { 1, 3, 10 }, "bdf")
ladder_rows(50, { 1, 3, 10, 30 }, "bdf")
ladder_rows(500, { 1, 3, 10, 30 }, "bdf")
