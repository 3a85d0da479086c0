-- An independent closed-form simulator of the bouncing balls (N balls in
-- the box [x_min, x_max] x [y_min, y_max], walls with restitution e_g,
-- pairs with e_b colliding at squared distance d_sq): between events every
-- ball flies on a parabola, so wall guards are quadratic or linear in time
-- and pair guards are quadratic (gravity cancels in relative motion). Next events come from the roots of those
-- polynomials; no integrator is involved.
local M = {}

-- Smallest root tau > tmin of a t^2 + b t + c = 0 where the polynomial
-- falls through zero (derivative 2 a tau + b < 0), or nil.
local function falling_root(a, b, c, tmin)
  local roots = {}
  if math.abs(a) < 1e-300 then
    if b ~= 0 then roots[1] = -c / b end
  else
    local disc = b * b - 4 * a * c
    if disc < 0 then return nil end
    local q = -0.5 * (b + (b >= 0 and 1 or -1) * math.sqrt(disc))
    roots[1] = q / a
    if q ~= 0 then roots[2] = c / q end
  end
  table.sort(roots)
  for _, r in ipairs(roots) do
    if r > tmin and 2 * a * r + b < 0 then return r end
  end
  return nil
end

-- simulate(N, x0, p, tf) -> events {t, index (0-based), group}, state(t)
-- x0: flat start vector (x, y, vx, vy per ball); p: {g, e_g, e_b, d_sq,
-- y_max, y_min, x_max, x_min}.
function M.simulate(N, x0, p, tf)
  local s = { table.unpack(x0) }
  local t = 0.0
  local segments = { { t = 0.0, s = { table.unpack(s) } } }
  local events = {}
  local function guard_polys(j)       -- clause j (0-based): {a, b, c} in tau
    if j < 4 * N then
      local i, kind = j // 4, j % 4
      local x, y, vx, vy = s[4 * i + 1], s[4 * i + 2], s[4 * i + 3], s[4 * i + 4]
      if kind == 0 then return -p.g / 2, vy, y - p.y_min end
      if kind == 1 then return p.g / 2, -vy, p.y_max - y end
      if kind == 2 then return 0, vx, x - p.x_min end
      return 0, -vx, p.x_max - x
    end
    local k, i = j - 4 * N, 0
    while k >= N - 1 - i do k = k - (N - 1 - i); i = i + 1 end
    local jj = i + 1 + k
    local dx, dy = s[4 * i + 1] - s[4 * jj + 1], s[4 * i + 2] - s[4 * jj + 2]
    local dvx, dvy = s[4 * i + 3] - s[4 * jj + 3], s[4 * i + 4] - s[4 * jj + 4]
    return dvx * dvx + dvy * dvy, 2 * (dx * dvx + dy * dvy), dx * dx + dy * dy - p.d_sq
  end
  local nclauses = 4 * N + N * (N - 1) // 2
  while true do
    local best, fire = math.huge, {}
    for j = 0, nclauses - 1 do
      local a, b, c = guard_polys(j)
      local r = falling_root(a, b, c, 1e-12)
      if r then
        if r < best - 1e-12 then best, fire = r, { j }
        elseif math.abs(r - best) <= 1e-12 then fire[#fire + 1] = j end
      end
    end
    if t + best > tf then break end
    -- advance every ball to the event
    for i = 0, N - 1 do
      local vx, vy = s[4 * i + 3], s[4 * i + 4]
      s[4 * i + 1] = s[4 * i + 1] + vx * best
      s[4 * i + 2] = s[4 * i + 2] + vy * best - p.g / 2 * best * best
      s[4 * i + 4] = vy - p.g * best
    end
    t = t + best
    table.sort(fire)
    local pre = { table.unpack(s) }
    for _, j in ipairs(fire) do
      events[#events + 1] = { t = t, index = j, group_size = #fire }
      if j < 4 * N then
        local i, kind = j // 4, j % 4
        if kind < 2 then
          s[4 * i + 4] = -p.e_g * pre[4 * i + 4]
          s[4 * i + 2] = kind == 0 and p.y_min or p.y_max
        else
          s[4 * i + 3] = -p.e_g * pre[4 * i + 3]
          s[4 * i + 1] = kind == 2 and p.x_min or p.x_max
        end
      else
        local k, i = j - 4 * N, 0
        while k >= N - 1 - i do k = k - (N - 1 - i); i = i + 1 end
        for _, b in ipairs({ i, i + 1 + k }) do
          s[4 * b + 3] = -p.e_b * pre[4 * b + 3]
          s[4 * b + 4] = -p.e_b * pre[4 * b + 4]
        end
      end
    end
    segments[#segments + 1] = { t = t, s = { table.unpack(s) } }
  end
  -- state at time tt (right-continuous)
  local function state(tt)
    local seg = segments[1]
    for _, sg in ipairs(segments) do if sg.t <= tt then seg = sg end end
    local out, h = {}, tt - seg.t
    for i = 0, N - 1 do
      local q = seg.s
      out[4 * i + 1] = q[4 * i + 1] + q[4 * i + 3] * h
      out[4 * i + 2] = q[4 * i + 2] + q[4 * i + 4] * h - p.g / 2 * h * h
      out[4 * i + 3] = q[4 * i + 3]
      out[4 * i + 4] = q[4 * i + 4] - p.g * h
    end
    return out
  end
  return events, state
end

return M
