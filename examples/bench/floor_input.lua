-- floor_input.lua: the input files of the hand-written C "floor" programs
-- (floor_balls.c, floor_cauer.c), built from the same workloads as
-- examples/bench.lua's grad_case, so the bench can compare salta's loss
-- and gradient with what hand-written C achieves. Run from the repository
-- root with package.path covering ./lua.
--
--   local fi = dofile("examples/bench/floor_input.lua")
--   local L, p = fi.write_cauer("/tmp/cauer.txt")   -- L:value_and_grad(p)
--   local L, p = fi.write_balls("/tmp/balls.txt")
--   local L, p = fi.write_stiff("/tmp/stiff.txt")    -- models/stiff_relay.lua
--   fi.write_balls(path, N, { default = true })      -- salta's default route:
--     no backend, method or solver given (the model from a warm cc cache)
--
-- As a script: build/salta examples/bench/floor_input.lua DIR [REPEATS]
-- writes DIR/balls.txt, DIR/cauer.txt and DIR/stiff.txt and prints salta's loss, gradient
-- and median time per evaluation (REPEATS runs, default 25) for each.
local salta = require("salta")
local common = dofile("examples/bench/common.lua")

local M = {}

local function fmt(v) return ("%.17g"):format(v) end

local function line(f, values)
  local s = {}
  for k, v in ipairs(values) do s[k] = fmt(v) end
  f:write(table.concat(s, " "), "\n")
end

-- The workload of grad_case: 501 uniform times on [0, tf], data from an
-- rtol 1e-10 / atol 1e-12 simulation at nominal parameters, and the loss
-- at rtol = atol = 1e-6: erk, or (default) whatever salta picks.
local function workload(m, tf, outputs, free, default)
  local times = {}
  for i = 0, 500 do times[i + 1] = tf * i / 500 end
  local tr = m:simulate{ tf = tf, times = times, rtol = 1e-10, atol = 1e-12 }
  local data = {}
  for _, o in ipairs(outputs) do data[o] = tr.y[o] end
  local L = salta.lsq{ model = m, times = times, data = data, free = free, rtol = 1e-6, atol = 1e-6,
    method = not default and "erk" or nil }
  return L, times, data
end

-- A model file's model: cc, or (default) the default backend once a
-- background cc build it started has landed in it (up to a minute).
local function build(file, opts, default)
  local make = dofile(file)
  if not default then
    opts.backend = "cc"
    return make(opts)
  end
  return common.wait_for_cc(make(opts))
end

-- The parameter values the loss evaluates at p, by name.
local function params_at(L, p)
  local P, by = L:full(p), {}
  for i, n in ipairs(L.model.params) do by[n] = P[i] end
  return by
end

-- Target times and data rows: "t y_1 ... y_m" per time.
-- The first line is "t0 tf", then the extra values (tolerances).
local function write_data(f, L, times, data, outputs, extra)
  local head = { L.t0, L.tf }
  for _, v in ipairs(extra or {}) do head[#head + 1] = v end
  line(f, head)
  f:write(#times, "\n")
  for k, t in ipairs(times) do
    local row = { t }
    for j, o in ipairs(outputs) do row[j + 1] = data[o][k] end
    line(f, row)
  end
end

-- Layout: see the comment at the top of floor_balls.c.
function M.write_balls(path, N, opts)
  N = N or 15
  local default = opts and opts.default
  local m = build("models/bouncing_balls.lua", { N = N }, default)
  local outputs, free, p = {}, { "g", "e_g", "e_b" }, { 8.81, 0.6, 0.7 }
  for i = 1, N do outputs[#outputs + 1] = "x" .. i; outputs[#outputs + 1] = "y" .. i end
  local L, times, data = workload(m, 1.9, outputs, free, default)
  local P = params_at(L, p)
  local f = assert(io.open(path, "w"))
  f:write(N, "\n")
  line(f, { P.d_sq, P.y_max, P.y_min, P.x_max, P.x_min })
  line(f, { P.g, P.e_g, P.e_b })
  local x0 = {}
  for i, n in ipairs(m.states) do x0[i] = m.x0[n] end
  line(f, x0)
  write_data(f, L, times, data, outputs)
  f:close()
  return L, p
end

-- Layout: see the comment at the top of floor_cauer.c.
function M.write_cauer(path, opts)
  local default = opts and opts.default
  local m = build("models/cauer.lua", {}, default)
  local outputs = { "L2_i", "L1_i", "C5_v", "C3_v", "C1_v" }
  local free = { "C1_C", "C2_C", "C3_C", "C4_C", "C5_C", "L1_L", "L2_L" }
  local p = { 1.10177047, 0.25193102, 1.53445960, 0.75943693, 0.77315497, 1.41621466, 0.87710816 }
  local L, times, data = workload(m, 20.0, outputs, free, default)
  local P = params_at(L, p)
  local f = assert(io.open(path, "w"))
  line(f, { P.V_signalSource_offset, P.V_signalSource_height, P.V_signalSource_startTime,
    P.R1_R_actual, P.R2_R_actual })
  local pv = {}
  for k, n in ipairs(free) do pv[k] = P[n] end
  line(f, pv)
  local x0 = {}
  for i, n in ipairs(outputs) do x0[i] = m.x0[n] end
  line(f, x0)
  write_data(f, L, times, data, outputs, { L.options.rtol, L.options.atol })
  f:close()
  return L, p
end

-- Layout: see the comment at the top of floor_idas_stiff.c. The loss takes
-- salta's default route (auto), which detects the stiffness.
function M.write_stiff(path, opts)
  local m = build("models/stiff_relay.lua", {}, opts and opts.default)
  local outputs, free = { "v", "i" }, { "Vs", "R", "C", "Rl", "v_lo", "v_hi" }
  local p = { 10.4, 1.05, 0.95, 9.6, 4.1, 5.9 }
  local L, times, data = workload(m, 10.0, outputs, free, true)
  local P = params_at(L, p)
  local f = assert(io.open(path, "w"))
  local pv = {}
  for k, n in ipairs(free) do pv[k] = P[n] end
  line(f, pv)
  line(f, { P.tau_s })
  line(f, { m.x0.w, m.x0.v, m.x0.on and 1 or 0 })
  write_data(f, L, times, data, outputs, { L.options.rtol, L.options.atol })
  f:close()
  return L, p
end

-- The script: the inputs, and salta's figures to compare with.
if arg and arg[0] and arg[0]:match("floor_input%.lua$") then
  local dir, reps = arg[1] or "/tmp", tonumber(arg[2]) or 25
  local clock = require("salta.core").clock
  for _, c in ipairs({ { "balls", M.write_balls }, { "cauer", M.write_cauer },
    { "stiff", M.write_stiff } }) do
    local path = dir .. "/" .. c[1] .. ".txt"
    local L, p = c[2](path)
    local v, g = L:value_and_grad(p)
    local xs = {}
    for k = 1, reps do
      local t0 = clock()
      L:value_and_grad(p)
      xs[k] = clock() - t0
    end
    table.sort(xs)
    local n = #xs
    local med = n % 2 == 1 and xs[(n + 1) // 2] or (xs[n // 2] + xs[n // 2 + 1]) / 2
    local gs = {}
    for k = 1, #g do gs[k] = fmt(g[k]) end
    print(("%s: %s"):format(c[1], path))
    print("loss " .. fmt(v))
    print("grad " .. table.concat(gs, " "))
    print(("median_us %.3f min_us %.3f max_us %.3f"):format(med * 1e6, xs[1] * 1e6, xs[n] * 1e6))
  end
end

return M
