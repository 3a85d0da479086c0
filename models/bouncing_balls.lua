-- N planar balls in a box (the seed paper's second experiment, as its
-- exported specs models/specs/*balls*.yaml): free flight under gravity,
-- four walls with restitution e_g, pairwise collisions with restitution
-- e_b that reverse both balls' velocities. Events are declared in the
-- order of the exported specs: per ball [floor, ceiling, left, right], then
-- the pairs (i < j) lexicographically.
--
--   local balls = dofile("models/bouncing_balls.lua")
--   local m = balls{ N = 3 }      -- N, eps (start jitter), backend
--
-- Start values follow the specs' generator: a grid in the upper half of the
-- box plus uniform jitter from Python's random.Random(0) (Mersenne Twister,
-- reproduced here), eps = 0.1 (N < 15) or 0.001 (N >= 15, as in the N = 15
-- spec), so the model and the exported specs start from the same state.
local salta = require("salta")

-- MT19937 seeded like Python's random.seed(0) (init_by_array with key {0}).
local function python_random(seed)
  local mt, idx = {}, 625
  local M32 = 0xffffffff
  local function mul32(a, b) return (a * b) & M32 end
  mt[0] = 19650218
  for i = 1, 623 do
    mt[i] = (mul32(1812433253, mt[i - 1] ~ (mt[i - 1] >> 30)) + i) & M32
  end
  local key = { seed }
  local i, j = 1, 0
  for _ = 1, 624 do
    mt[i] = ((mt[i] ~ mul32(mt[i - 1] ~ (mt[i - 1] >> 30), 1664525)) + key[j + 1] + j) & M32
    i, j = i + 1, (j + 1) % #key
    if i >= 624 then mt[0] = mt[623]; i = 1 end
  end
  for _ = 1, 623 do
    mt[i] = ((mt[i] ~ mul32(mt[i - 1] ~ (mt[i - 1] >> 30), 1566083941)) - i) & M32
    i = i + 1
    if i >= 624 then mt[0] = mt[623]; i = 1 end
  end
  mt[0] = 0x80000000
  local function genrand()
    if idx >= 624 then
      for k = 0, 623 do
        local y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7fffffff)
        mt[k] = mt[(k + 397) % 624] ~ (y >> 1) ~ ((y & 1) * 0x9908b0df)
      end
      idx = 0
    end
    local y = mt[idx]
    idx = idx + 1
    y = y ~ (y >> 11)
    y = y ~ ((y << 7) & 0x9d2c5680)
    y = y ~ ((y << 15) & 0xefc60000)
    return y ~ (y >> 18)
  end
  return function()   -- random.random(): 53-bit float in [0, 1)
    local a, b = genrand() >> 5, genrand() >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)
  end
end

local P = { g = 9.81, e_g = 0.5, e_b = 0.6, d_sq = 0.05, y_max = 10.0, y_min = 0.0, x_max = 10.0, x_min = 0.0 }
local P_ORDER = { "g", "e_g", "e_b", "d_sq", "y_max", "y_min", "x_max", "x_min" }

local function start_values(N, eps)
  local cols = 1
  while cols * cols < N do cols = cols + 1 end
  local rows = math.ceil(N / cols)
  local y_mid = (P.y_min + P.y_max) / 2
  local x0, y0, vx0, vy0 = {}, {}, {}, {}
  for i = 1, N do
    local col, row = (i - 1) % cols + 1, (i - 1) // cols + 1
    x0[i] = P.x_min + (col - 0.5) * (P.x_max - P.x_min) / cols
    y0[i] = y_mid + (row - 0.5) * (P.y_max - y_mid) / rows
    vx0[i] = cols == 1 and 0.0 or -0.6 + 1.2 * (col - 1) / (cols - 1)
    vy0[i] = rows == 1 and -0.55 or -0.55 + 1.1 * (row - 1) / (rows - 1)
  end
  local rnd = python_random(0)
  for _, v in ipairs({ x0, y0, vx0, vy0 }) do
    for i = 1, N do v[i] = v[i] + (-eps + 2 * eps * rnd()) end
  end
  return x0, y0, vx0, vy0
end

return function(opts)
  opts = opts or {}
  local N = opts.N or 3
  local eps = opts.eps or (N >= 15 and 0.001 or 0.1)
  local x0, y0, vx0, vy0 = start_values(N, eps)
  local states, params = {}, {}
  for i = 1, N do
    states[#states + 1] = { "x" .. i, x0[i] }
    states[#states + 1] = { "y" .. i, y0[i] }
    states[#states + 1] = { "vx" .. i, vx0[i] }
    states[#states + 1] = { "vy" .. i, vy0[i] }
  end
  for k, n in ipairs(P_ORDER) do params[k] = { n, P[n] } end

  local events = {}
  local function add(name, guard, reset)
    events[#events + 1] = { name = name, direction = "down", guard = guard, reset = reset }
  end
  for i = 1, N do
    local x, y, vx, vy = "x" .. i, "y" .. i, "vx" .. i, "vy" .. i
    add("Floor B" .. i, function(t, s, z, p) return s[y] - p.y_min end,
      function(t, s, z, p) return { [vy] = -p.e_g * s[vy], [y] = p.y_min } end)
    add("Ceiling B" .. i, function(t, s, z, p) return p.y_max - s[y] end,
      function(t, s, z, p) return { [vy] = -p.e_g * s[vy], [y] = p.y_max } end)
    add("Left Wall B" .. i, function(t, s, z, p) return s[x] - p.x_min end,
      function(t, s, z, p) return { [vx] = -p.e_g * s[vx], [x] = p.x_min } end)
    add("Right Wall B" .. i, function(t, s, z, p) return p.x_max - s[x] end,
      function(t, s, z, p) return { [vx] = -p.e_g * s[vx], [x] = p.x_max } end)
  end
  for i = 1, N - 1 do
    for j = i + 1, N do
      add(("Collision B%d-B%d"):format(i, j),
        function(t, s, z, p)
          return (s["x" .. i] - s["x" .. j]) ^ 2 + (s["y" .. i] - s["y" .. j]) ^ 2 - p.d_sq
        end,
        function(t, s, z, p)
          local r = {}
          for _, b in ipairs({ i, j }) do
            r["vx" .. b] = -p.e_b * s["vx" .. b]
            r["vy" .. b] = -p.e_b * s["vy" .. b]
          end
          return r
        end)
    end
  end

  return salta.dae{
    name = "bouncing_balls_N" .. N, backend = opts.backend,
    states = states, params = params,
    f = function(t, s, z, p)
      local d = {}
      for i = 1, N do
        d[#d + 1] = s["vx" .. i]
        d[#d + 1] = s["vy" .. i]
        d[#d + 1] = 0
        d[#d + 1] = -p.g
      end
      return d
    end,
    events = events,
  }
end
