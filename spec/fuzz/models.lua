-- spec/fuzz/models.lua: a seeded generator of small random hybrid models
-- (salta.dae tables) and a run description, for the truth fuzzer
-- (spec/fuzz/truth.lua). Deterministic per seed (the LCG of case.lua, no
-- math.random), so a seed replays its model.
--
--   local gen = require("spec.fuzz.models")   -- or dofile
--   local d = gen.generate(seed)
--   d.spec        the salta.dae table
--   d.tf, d.times the horizon and output times (t0 = 0)
--   d.free        candidates to free in a loss: { name, value, scale }
--                 (parameters, and x0.<state> when every start is a number)
--   d.outputs     continuous outputs a loss may fit
--   d.constructs  what the model holds, for the report line
--   d.rnd         the generator, to draw the case's own choices after it
--
-- A model is one to three blocks, each small, combinable and chosen at
-- random: bouncing masses (identical, nearly identical or coupled: events in
-- groups), oscillators against a stop (the stop sometimes where the swing
-- only grazes it), RC stages switched by a relay with hysteresis (copies
-- switch in exact groups; sometimes behind a fast filter: stiff), two capacitors in parallel (index 2), a torn
-- algebraic loop whose guard reads an algebraic, an alias read by a guard,
-- if-expressions (mode events), a relay without hysteresis (a sliding
-- mode: salta must refuse it), lags driven by input tables read at t or
-- t - d, a 1 Hz schedule of kicks on slow dynamics (time events), a reset
-- cascade (one reset pushes another guard across zero, sometimes exactly
-- onto it), terminal events (sometimes in a cascade round).
local salta = require("salta")

local M = {}

-- The LCG of case.lua: uniform in [0, 1), 53 bits.
function M.rng(seed)
  local state = seed * 2654435761 % 4294967296 + 1
  local r = {}
  function r.uniform()
    state = (state * 6364136223846793005 + 1442695040888963407)
    return ((state >> 11) & ((1 << 53) - 1)) / 2 ^ 53
  end
  function r.pick(list) return list[1 + math.floor(r.uniform() * #list)] end
  function r.chance(p) return r.uniform() < p end
  function r.range(a, b) return a + (b - a) * r.uniform() end
  function r.int(a, b) return a + math.floor(r.uniform() * (b - a + 1)) end
  return r
end

-- The model under construction: blocks add declarations, flows (keyed
-- derivatives), algebraic equations and events.
local function builder()
  local b = { states = {}, discrete = {}, algebraics = {}, params = {}, inputs = {}, events = {}, flows = {},
    eqs = {}, free = {}, outputs = {}, constructs = {}, tf_max = 4, start_fn = false, n_states = 0, terminal = false }
  function b.param(name, value, scale, free)
    b.params[#b.params + 1] = { name, value }
    if free ~= false then b.free[#b.free + 1] = { name = name, value = value, scale = scale or math.max(1, math.abs(value)) } end
  end
  -- a continuous state; start a number or a function of the parameters
  function b.state(name, start, scale, output)
    b.states[#b.states + 1] = { name, start }
    b.n_states = b.n_states + 1
    if type(start) == "function" then b.start_fn = true
    else b.x0_free = b.x0_free or {}; b.x0_free[#b.x0_free + 1] = { name = "x0." .. name, value = start, scale = scale or 1 } end
    if output ~= false then b.outputs[#b.outputs + 1] = name end
  end
  function b.disc(name, start)
    b.discrete[#b.discrete + 1] = { name, start }
    b.n_states = b.n_states + 1
  end
  function b.alg(name, start, output)
    b.algebraics[#b.algebraics + 1] = { name, start or 0 }
    if output ~= false then b.outputs[#b.outputs + 1] = name end
  end
  function b.flow(fn) b.flows[#b.flows + 1] = fn end
  function b.eq(fn) b.eqs[#b.eqs + 1] = fn end
  function b.event(ev) b.events[#b.events + 1] = ev end
  function b.note(s) b.constructs[#b.constructs + 1] = s end
  return b
end

-- Offsets between copies of a subsystem: exactly simultaneous events,
-- events a rounding error apart, nearly coincident, or clearly apart.
local OFFSETS = { 0, 0, 1e-12, 1e-9, 1e-6, 1e-3, 0.07 }

-- Bouncing masses: h' = v, v' = -g, a floor resetting v = -e v. Copies
-- with equal starts bounce in exact groups; a coupled variant's resets
-- read the other masses' velocities (groups that must not split).
local function balls(b, r, id)
  local n = r.pick({ 1, 2, 2, 3 })
  local off = r.pick(OFFSETS)
  local coupled = n > 1 and r.chance(0.3)
  local shared_e = r.chance(0.5)
  local pre = "b" .. id
  b.param(pre .. "g", r.pick({ 9.81, 9.81, 4 }), 10)
  if shared_e then b.param(pre .. "e", r.range(0.7, 0.85), 1) end
  local H = r.range(0.8, 1.2)
  local from_p = r.chance(0.25)
  if from_p then b.param(pre .. "H", H, 1) end
  if coupled then b.param(pre .. "eta", 0.05, 0.1) end
  local hold_h = r.chance(0.3)
  local e0 = r.range(0.7, 0.85)
  for i = 1, n do
    local h, v, e = pre .. "h" .. i, pre .. "v" .. i, shared_e and pre .. "e" or pre .. "e" .. i
    if not shared_e then b.param(e, e0, 1) end
    local d = (i - 1) * off
    b.state(h, from_p and function(p) return p[pre .. "H"] + d end or H + d, 1)
    b.state(v, 0.0, 1)
    b.flow(function(t, x, z, p, u, out) out[h], out[v] = x[v], -p[pre .. "g"] end)
    b.event{ name = pre .. "floor" .. i, direction = "down", guard = function(t, x) return x[h] end,
      reset = function(t, x, z, p)
        local nv = -p[e] * x[v]
        if coupled then   -- reads every mass's left limit
          local s = 0
          for k = 1, n do s = s + x[pre .. "v" .. k] end
          nv = nv + p[pre .. "eta"] * s
        end
        if hold_h then return { [v] = nv, [h] = 0 } end
        return { [v] = nv }
      end }
  end
  b.tf_max = math.min(b.tf_max, 1.8)
  b.note(("balls(n=%d, offset=%g%s%s%s)"):format(n, off, coupled and ", coupled" or "", from_p and ", start(p)" or "",
    hold_h and ", h=0" or ""))
end

-- Oscillators against a stop: x'' = -w^2 x - c x' (+ an input), from x =
-- -A at rest; the stop at s = A (1 - eps) resets v = -e v. eps near 0
-- makes the swing graze the stop (eps < 0: it just misses).
local function stops(b, r, id)
  local n = r.pick({ 1, 1, 2 })
  local pre = "o" .. id
  local eps = r.pick({ 0.3, 0.1, 1e-3, 1e-6, 1e-9, 0, -1e-6, -1e-3 })
  local off = r.pick(OFFSETS)
  local A = r.range(0.5, 1.5)
  b.param(pre .. "w", 2 * math.pi * r.range(0.6, 1.2), 6)
  b.param(pre .. "c", r.pick({ 0, 0, 0.05 }), 0.1)
  b.param(pre .. "e", r.range(0.6, 0.95), 1)
  b.param(pre .. "s", A * (1 - eps), 1)
  local from_p = r.chance(0.2)
  if from_p then b.param(pre .. "A", A, 1) end
  for i = 1, n do
    local x, v = pre .. "x" .. i, pre .. "v" .. i
    local d = (i - 1) * off
    b.state(x, from_p and function(p) return -p[pre .. "A"] - d end or -A - d, 1)
    b.state(v, 0.0, 5)
    b.flow(function(t, X, z, p, u, out)
      out[x] = X[v]
      out[v] = -p[pre .. "w"] ^ 2 * X[x] - p[pre .. "c"] * X[v] + (b.forcing and b.forcing(t, X, z, p, u) or 0)
    end)
    b.event{ name = pre .. "stop" .. i, direction = "down", guard = function(t, X, z, p) return p[pre .. "s"] - X[x] end,
      reset = function(t, X, z, p) return { [v] = -p[pre .. "e"] * X[v] } end }
  end
  b.has_stops = true
  b.note(("stops(n=%d, eps=%g, offset=%g%s)"):format(n, eps, off, from_p and ", start(p)" or ""))
end

-- RC stages: v1' = (src - v1) / tau, vk' = (v(k-1) - vk) / tau, src =
-- V while the relay is on; the relay turns off when the last stage rises
-- through hi and on when it falls through lo (hysteresis). Copies of the
-- chain switch in exact groups. Sometimes the source reaches v1 through a
-- filter w' = (src - w) / tau_f, tau_f 1 to 3 ms: a stiff relay.
local function rc(b, r, id)
  local stages, copies = r.pick({ 1, 2, 3 }), r.pick({ 1, 1, 2 })
  local pre = "r" .. id
  b.param(pre .. "tau", r.range(0.15, 0.4), 1)
  b.param(pre .. "V", 1.0, 1)
  b.param(pre .. "hi", r.range(0.6, 0.75), 1)
  b.param(pre .. "lo", r.range(0.25, 0.4), 1)
  local use_if = r.chance(0.5)   -- the source as an if-expression of the discrete, or on * V
  -- sometimes behind a filter two orders of magnitude faster: stiff
  local fast = r.chance(0.15) and r.range(1e-3, 3e-3) or nil
  if fast then b.param(pre .. "tau_f", fast, fast, false) end
  for c = 1, copies do
    local on, w = pre .. "on" .. c, pre .. "w" .. c
    b.disc(on, true)
    local function relay(x, p) return use_if and salta.ifelse(x[on], p[pre .. "V"], 0) or x[on] * p[pre .. "V"] end
    if fast then
      b.state(w, 0.0, 1, false)
      b.flow(function(t, x, z, p, u, out) out[w] = (relay(x, p) - x[w]) / p[pre .. "tau_f"] end)
    end
    for k = 1, stages do
      local v, prev = pre .. "v" .. c .. k, pre .. "v" .. c .. (k - 1)
      b.state(v, 0.0, 1)
      b.flow(function(t, x, z, p, u, out)
        local src = k > 1 and x[prev] or fast and x[w] or relay(x, p)
        out[v] = (src - x[v]) / p[pre .. "tau"]
      end)
    end
    local last = pre .. "v" .. c .. stages
    b.event{ name = pre .. "off" .. c, direction = "up", guard = function(t, x, z, p) return x[last] - p[pre .. "hi"] end,
      reset = function() return { [on] = false } end }
    b.event{ name = pre .. "on" .. c, direction = "down", guard = function(t, x, z, p) return x[last] - p[pre .. "lo"] end,
      reset = function() return { [on] = true } end }
  end
  b.note(("rc(stages=%d, copies=%d%s%s)"):format(stages, copies, use_if and ", ifelse" or "",
    fast and (", stiff filter %.2g"):format(fast) or ""))
end

-- Two capacitors in parallel behind a resistor (index 2: v1 = v2), the
-- source switched by a relay with hysteresis on v2.
local function caps(b, r, id)
  local pre = "c" .. id
  b.param(pre .. "R", r.range(0.5, 1.5), 1)
  b.param(pre .. "C1", r.range(0.1, 0.3), 1)
  b.param(pre .. "C2", r.range(0.1, 0.3), 1)
  b.param(pre .. "V", 1.0, 1, false)
  local on, v1, v2 = pre .. "on", pre .. "v1", pre .. "v2"
  b.disc(on, true)
  b.state(v1, 0.0, 1, false)
  b.state(v2, 0.0, 1)
  b.x0_free = nil   -- x0 of a pair the constraint ties: not free
  local i, i1, i2 = pre .. "i", pre .. "i1", pre .. "i2"
  b.alg(i)
  b.alg(i1, 0, false)
  b.alg(i2, 0, false)
  b.flow(function(t, x, z, p, u, out) out[v1], out[v2] = z[i1] / p[pre .. "C1"], z[i2] / p[pre .. "C2"] end)
  b.eq(function(t, x, z, p)
    return { z[i] - (x[on] * p[pre .. "V"] - x[v1]) / p[pre .. "R"], z[i] - z[i1] - z[i2], x[v1] - x[v2] }
  end)
  b.event{ name = pre .. "full", direction = "up", guard = function(t, x) return x[v2] - 0.6 end,
    reset = function() return { [on] = false } end }
  b.event{ name = pre .. "empty", direction = "down", guard = function(t, x) return x[v2] - 0.3 end,
    reset = function() return { [on] = true } end }
  b.note("caps(index 2)")
end

-- The torn loop of spec/structure_spec.lua (a, b, c: one Newton in a),
-- with a guard on the algebraic a whose reset moves x (z re-solved).
local function torn(b, r, id)
  local pre = "t" .. id
  local x, a, bb, c = pre .. "x", pre .. "a", pre .. "b", pre .. "c"
  b.param(pre .. "q", r.range(0.6, 0.8), 1)
  b.param(pre .. "r", r.range(0.8, 1.5), 1)
  b.param(pre .. "th", r.range(0.55, 0.65), 1)
  b.state(x, 0.5, 1)
  b.alg(a, 0.5)
  b.alg(bb, 0.1)
  b.alg(c, 0.7)
  b.flow(function(t, X, z, p, u, out) out[x] = p[pre .. "r"] * (z[bb] - X[x]) + 0.6 * salta.sin(3 * t) end)
  b.eq(function(t, X, z, p)
    return { z[a] - 0.5 * z[c] - X[x], z[bb] - 0.3 * z[a] * z[a], z[c] + 0.2 * z[bb] * z[bb] * z[bb] - p[pre .. "q"] }
  end)
  b.event{ name = pre .. "high", direction = "up", guard = function(t, X, z, p) return z[a] - p[pre .. "th"] end,
    reset = function(t, X) return { [x] = X[x] - 0.15 } end }
  b.note("torn")
end

-- A lag y' = (k u - y) / tau whose u is an input table (step or linear,
-- read at t or t - d), or an if-expression of a sine oscillator (mode
-- events), or of the lag itself with no hysteresis (a sliding mode); an
-- alias ya = y is what its guard reads.
local function lag(b, r, id)
  local pre = "l" .. id
  local y, ya, cnt = pre .. "y", pre .. "ya", pre .. "n"
  -- a sliding mode ends the case as a refusal: rare
  local kind = r.chance(0.12) and r.pick({ "sliding", "hand_sliding" }) or r.pick({ "step", "linear", "mode" })
  b.param(pre .. "tau", r.range(0.1, 0.5), 1)
  b.param(pre .. "k", r.range(0.8, 1.5), 1)
  local alias = r.chance(0.5)
  b.state(y, 0.0, 1)
  b.disc(cnt, 0)
  if alias then b.alg(ya, 0, false) end
  local function yv(x, z) return alias and z[ya] or x[y] end
  if alias then b.eq(function(t, x, z) return { z[ya] - x[y] } end) end
  local u
  if kind == "step" or kind == "linear" then
    local ts, vs = { -1 }, { r.range(-1, 1) }
    local tk = 0
    while tk < 10 do
      tk = tk + r.range(0.2, 0.9)
      ts[#ts + 1], vs[#vs + 1] = tk, r.range(-1, 1)
    end
    ts[#ts + 1], vs[#vs + 1] = 20, 0
    b.inputs[pre .. "u"] = salta.table{ t = ts, v = vs, interp = kind }
    local delayed = r.chance(0.5)
    if delayed then b.param(pre .. "d", r.range(0.05, 0.3), 1) end
    u = function(t, x, z, p, uu) return uu[pre .. "u"](delayed and t - p[pre .. "d"] or t) end
    b.note(("lag(%s%s%s)"):format(kind, delayed and ", u(t - d)" or "", alias and ", alias" or ""))
  elseif kind == "mode" then
    local s, c = pre .. "s", pre .. "c"
    b.param(pre .. "w", 2 * math.pi * r.range(0.5, 1.5), 6)
    b.state(s, 0.0, 1, false)
    b.state(c, 1.0, 1, false)
    b.flow(function(t, x, z, p, uu, out) out[s], out[c] = p[pre .. "w"] * x[c], -p[pre .. "w"] * x[s] end)
    local th = r.pick({ 0.3, 0, -0.5 })
    u = function(t, x) return salta.ifelse(salta.gt(x[s], th), 1, -1) end
    b.note(("lag(mode on a sine > %g%s)"):format(th, alias and ", alias" or ""))
  elseif kind == "sliding" then   -- u pushes y back across the level from either side
    u = function(t, x, z) return salta.ifelse(salta.gt(yv(x, z), 0.4), -1, 1) end
    b.note("lag(if-expression relay, no hysteresis: sliding)")
  else   -- the same relay by hand: a discrete set by two events on one level
    local on = pre .. "on"
    b.disc(on, true)
    u = function(t, x) return salta.ifelse(x[on], 1, -1) end
    b.event{ name = pre .. "relay_off", direction = "up", guard = function(t, x, z) return yv(x, z) - 0.4 end,
      reset = function() return { [on] = false } end }
    b.event{ name = pre .. "relay_on", direction = "down", guard = function(t, x, z) return yv(x, z) - 0.4 end,
      reset = function() return { [on] = true } end }
    b.note("lag(hand relay, no hysteresis: sliding)")
  end
  b.flow(function(t, x, z, p, uu, out) out[y] = (p[pre .. "k"] * u(t, x, z, p, uu) - x[y]) / p[pre .. "tau"] end)
  b.event{ name = pre .. "cross", direction = r.pick({ "up", "down", "both" }),
    guard = function(t, x, z) return yv(x, z) - 0.25 end,
    reset = function(t, x) return { [cnt] = x[cnt] + 1 } end }
end

-- A 1 Hz (or 2 Hz) schedule of kicks on a room whose temperature barely
-- moves: time events far faster than the steps.
local function schedule(b, r, id)
  local pre = "s" .. id
  local T, n = pre .. "T", pre .. "n"
  local period = r.pick({ 1, 0.5, 0.37 })
  b.param(pre .. "a", r.range(0.005, 0.05), 0.01)
  b.param(pre .. "kick", r.range(0.05, 0.2), 0.1)
  local from_p = r.chance(0.3)
  if from_p then b.param(pre .. "T0", 20, 20) end
  b.state(T, from_p and function(p) return p[pre .. "T0"] end or 20, 20)
  b.disc(n, 0)
  b.flow(function(t, x, z, p, u, out) out[T] = -p[pre .. "a"] * (x[T] - 10) end)
  b.event{ name = pre .. "tick", direction = "up", guard = function(t) return salta.sin(2 * math.pi * t / period) end,
    reset = function(t, x, z, p) return { [T] = x[T] + p[pre .. "kick"], [n] = x[n] + 1 } end }
  b.note(("schedule(period=%g%s)"):format(period, from_p and ", start(p)" or ""))
end

-- A cascade: A (x reaching 1) resets x = 0 and drops y by 0.5 across B's
-- level; B then fires in the same instant and lifts y by 1. Variants: the
-- drop lands exactly on B's level (not armed there), a terminal event on
-- B's counter (ending the run in a cascade round), B's guard a staircase
-- of y - th (read through floor only: its Jacobian row is empty; it
-- reaches zero where y does th + 1/8, a time as generic as th).
local function cascade(b, r, id)
  local pre = "k" .. id
  local x, y, nb = pre .. "x", pre .. "y", pre .. "nb"
  local exact = r.chance(0.25)
  local stair = not exact and r.chance(0.2)
  b.param(pre .. "rate", r.range(0.8, 2.5), 1)
  b.param(pre .. "th", exact and 0.7 or r.range(0.8, 0.95), 1, not exact)
  b.state(x, r.range(0, 0.5), 1)
  b.state(y, 1.2, 1)
  b.disc(nb, 0)
  b.flow(function(t, X, z, p, u, out) out[x], out[y] = p[pre .. "rate"], -0.05 end)
  b.event{ name = pre .. "A", direction = "up", guard = function(t, X) return X[x] - 1 end,
    reset = function(t, X) return { [x] = 0, [y] = X[y] - 0.5 } end }
  b.event{ name = pre .. "B", direction = "down", guard = stair
      and function(t, X, z, p) return salta.floor(8 * (X[y] - p[pre .. "th"])) / 8 end
      or function(t, X, z, p) return X[y] - p[pre .. "th"] end,
    reset = function(t, X) return { [y] = X[y] + 1, [nb] = X[nb] + 1 } end }
  local term = not b.terminal and r.chance(0.25)
  if term then
    b.terminal = true
    b.event{ name = pre .. "enough", direction = "up", terminal = true, guard = function(t, X) return X[nb] - 1.5 end }
  end
  b.note(("cascade(%s%s%s)"):format(exact and "onto the level" or "across", term and ", terminal on its count" or "",
    stair and ", B a staircase" or ""))
end

local BLOCKS = { balls = balls, stops = stops, rc = rc, caps = caps, torn = torn, lag = lag, schedule = schedule,
  cascade = cascade }
local KINDS = { "balls", "balls", "stops", "stops", "rc", "rc", "caps", "torn", "lag", "lag", "lag", "schedule",
  "cascade", "cascade" }

-- The salta.dae table of a builder.
local function dae_table(b, name)
  local cont = {}
  for _, s in ipairs(b.states) do cont[#cont + 1] = s[1] end
  local spec = { name = name, states = b.states, params = b.params, events = b.events,
    discrete = #b.discrete > 0 and b.discrete or nil, algebraics = #b.algebraics > 0 and b.algebraics or nil,
    inputs = next(b.inputs) and b.inputs or nil }
  spec.f = function(t, x, z, p, u)
    local out = {}
    for _, fl in ipairs(b.flows) do fl(t, x, z, p, u, out) end
    return out
  end
  if #b.eqs > 0 then
    spec.g = function(t, x, z, p, u)
      local res = {}
      for _, eq in ipairs(b.eqs) do
        for _, v in ipairs(eq(t, x, z, p, u)) do res[#res + 1] = v end
      end
      return res
    end
  end
  return spec
end

function M.generate(seed)
  local r = M.rng(seed)
  local b = builder()
  local nblocks = r.pick({ 1, 2, 2, 3 })
  for id = 1, nblocks do
    if b.n_states >= 9 then break end
    local kind = r.pick(KINDS)
    local before = b.x0_free
    b.x0_free = nil
    BLOCKS[kind](b, r, id)
    -- x0 candidates of this block, unless it ruled them out
    local mine = b.x0_free
    b.x0_free = before or {}
    for _, c in ipairs(mine or {}) do b.x0_free[#b.x0_free + 1] = c end
  end
  -- a forcing of the oscillators by an input table, sometimes
  if b.has_stops and r.chance(0.3) then
    local ts, vs = { -1, 0.5, 1.3, 2.2, 3.1, 20 }, { 0, 2, -1, 1.5, 0, 0 }
    b.inputs.force = salta.table{ t = ts, v = vs, interp = r.pick({ "step", "linear" }) }
    b.forcing = function(t, x, z, p, u) return u.force(t) end
    b.note("forcing(input)")
  end
  local tf = math.min(b.tf_max, r.pick({ 1.5, 2, 3, 4 }))
  if r.chance(0.15) and not b.terminal then   -- a time terminal event
    local te = tf * r.range(0.5, 0.9)
    b.param("t_stop", te, 1, false)
    b.event{ name = "stop", direction = "up", terminal = true, guard = function(t, x, z, p) return t - p.t_stop end }
    b.terminal = true
    b.note("terminal(time)")
  end
  local times = {}
  local nt = r.pick({ 21, 41, 61 })
  for i = 0, nt - 1 do times[i + 1] = tf * i / (nt - 1) end
  local free = {}
  for _, c in ipairs(b.free) do free[#free + 1] = c end
  if not b.start_fn then
    for _, c in ipairs(b.x0_free or {}) do free[#free + 1] = c end
  end
  return { spec = dae_table(b, "truth" .. seed), tf = tf, times = times, free = free, outputs = b.outputs,
    constructs = b.constructs, terminal = b.terminal, rnd = r }
end

return M
