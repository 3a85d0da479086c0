-- An independent simulation of models/dcmotor.lua, in plain Lua: no salta
-- engine, no model compiler. Classical Runge-Kutta (fixed step, landing on
-- every target time and every breakpoint of the input tables), the
-- current from its implicit equation by Newton at every stage, and each
-- relay switching located by bisection on the step's length. It is what
-- the measured data of examples/dcmotor_fit.lua come from.
--
--   local ref = dofile("examples/dcmotor_reference.lua")
--   local y = ref.simulate(params, times)          -- y.w, y.i, y.events
--   local data = ref.measure(seed, times)          -- noisy w and i (sigma ref.SIGMA)

local M = {}

M.TRUTH = { K = 0.05, R = 1.0, J = 0.02, b = 2e-4, dlt = 5.0, w0 = 150.0, V = 24.0, Vb = 0.5, i0 = 0.2 }
M.SIGMA = { w = 0.5, i = 0.2 }

-- Columns t and v of a two-column CSV file.
local function read_table(path)
  local t, v = {}, {}
  local f = assert(io.open(path, "r"))
  f:read("l")   -- the header
  for line in f:lines() do
    local a, b = line:match("^%s*([^,]+),([^,]+)")
    if a then t[#t + 1], v[#v + 1] = tonumber(a), tonumber(b) end
  end
  f:close()
  return t, v
end

local function resource(path) return require("salta").resource(path) end

local SET_T, SET_V = read_table(resource("examples/data/dcmotor_setpoint.csv"))
local LOAD_T, LOAD_V = read_table(resource("examples/data/dcmotor_load.csv"))

-- The setpoint: a step table, the last point at or before t.
local function setpoint(t)
  local v = SET_V[1]
  for k = 1, #SET_T do if SET_T[k] <= t then v = SET_V[k] end end
  return v
end

-- The current i solving 0 = u V - R i - K w - Vb tanh(i / i0) (decreasing
-- in i: one root), by Newton from i.
local function current(p, w, on, i)
  local u = on and 1 or 0
  for _ = 1, 60 do
    local th = math.tanh(i / p.i0)
    local g = u * p.V - p.R * i - p.K * w - p.Vb * th
    local dg = -p.R - p.Vb * (1 - th * th) / p.i0
    local step = g / dg
    i = i - step
    if math.abs(step) <= 1e-15 * math.max(1, math.abs(i)) then break end
  end
  return i
end

-- One classical Runge-Kutta step of length h from (t, w); the load is
-- read as the piece holding the step's middle (steps never cross a
-- breakpoint).
local function rk4(p, t, w, on, h)
  local mid = t + 0.5 * h
  local function f(s, x)
    local i = current(p, x, on, 0)
    local k = 1
    while k < #LOAD_T - 1 and LOAD_T[k + 1] <= mid do k = k + 1 end
    local tl = LOAD_V[k] + (LOAD_V[k + 1] - LOAD_V[k]) * (s - LOAD_T[k]) / (LOAD_T[k + 1] - LOAD_T[k])
    return (p.K * i - p.b * x - tl) / p.J
  end
  local k1 = f(t, w)
  local k2 = f(t + h / 2, w + h / 2 * k1)
  local k3 = f(t + h / 2, w + h / 2 * k2)
  local k4 = f(t + h, w + h * k3)
  return w + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
end

-- The relay's guards: off when w rises through w_set + dlt, on when it
-- falls through w_set - dlt.
local function guards(p, t, w)
  local s = setpoint(t)
  return w - (s + p.dlt), w - (s - p.dlt)
end

-- simulate(params, times [, dt]): w and i at the times (right-continuous)
-- and the relay's switchings { t, name }; params by name over M.TRUTH.
function M.simulate(params, times, dt)
  local p = {}
  for k, v in pairs(M.TRUTH) do p[k] = v end
  for k, v in pairs(params or {}) do p[k] = v end
  dt = dt or 2e-4
  local stops, is_step, t_last = {}, {}, times[#times]
  for _, t in ipairs(times) do stops[#stops + 1] = t end
  for _, t in ipairs(SET_T) do stops[#stops + 1], is_step[t] = t, true end
  for _, t in ipairs(LOAD_T) do stops[#stops + 1] = t end
  table.sort(stops)
  local distinct = {}
  for _, t in ipairs(stops) do
    if t > 0 and t <= t_last and t ~= distinct[#distinct] then distinct[#distinct + 1] = t end
  end
  stops = distinct
  local t, w, on = 0.0, p.w0, true
  local out = { w = {}, i = {}, events = {} }
  local k = 1
  local function record()
    while k <= #times and times[k] <= t do
      out.w[k], out.i[k] = w, current(p, w, on, 0)
      k = k + 1
    end
  end
  -- fires a guard that a setpoint step moved across zero
  local function breakpoint_switch(g_off_before, g_on_before)
    local g_off, g_on = guards(p, t, w)
    if g_off_before < 0 and g_off >= 0 then on = false; out.events[#out.events + 1] = { t = t, name = "off" } end
    if g_on_before > 0 and g_on <= 0 then on = true; out.events[#out.events + 1] = { t = t, name = "on" } end
  end
  record()
  for _, stop in ipairs(stops) do
    while t < stop do
      local h = math.min(dt, stop - t)
      if stop - (t + h) < 1e-12 then h = stop - t end
      local g_off0, g_on0 = guards(p, t, w)
      local w1 = rk4(p, t, w, on, h)
      local g_off1, g_on1 = guards(p, t + h * 0.5, w1)   -- the setpoint of the piece stepped over
      local up = g_off0 < 0 and g_off1 >= 0
      local down = g_on0 > 0 and g_on1 <= 0
      if up or down then   -- the crossing's time by bisection on the step's length
        local lo, hi = 0, h
        for _ = 1, 200 do
          local mid = 0.5 * (lo + hi)
          local wm = rk4(p, t, w, on, mid)
          local a, b = guards(p, t + 0.5 * mid, wm)
          local crossed = (up and a >= 0) or (down and b <= 0)
          if crossed then hi = mid else lo = mid end
          if hi - lo <= 1e-15 * math.max(1, t) then break end
        end
        w = rk4(p, t, w, on, hi)
        t = t + hi
        on = not up
        out.events[#out.events + 1] = { t = t, name = up and "off" or "on" }
      else
        w, t = w1, t + h
      end
      if t >= stop then t = stop end
      if t < stop then record() end
    end
    -- at a stop: a setpoint step may move a guard across zero
    if is_step[t] then
      local s_before = SET_V[1]
      for q = 1, #SET_T do if SET_T[q] < t then s_before = SET_V[q] end end
      breakpoint_switch(w - (s_before + p.dlt), w - (s_before - p.dlt))
    end
    record()
  end
  return out
end

-- measure(seed, times): the truth simulated independently, plus Gaussian
-- noise of M.SIGMA from salta.gaussian(seed).
function M.measure(seed, times)
  local y = M.simulate(M.TRUTH, times)
  local gauss = require("salta").gaussian(seed)
  local data = { w = {}, i = {} }
  for k = 1, #times do
    data.w[k] = y.w[k] + M.SIGMA.w * gauss()
    data.i[k] = y.i[k] + M.SIGMA.i * gauss()
  end
  return data, y
end

return M
