-- The simulation's options are declared once, in the engine
-- (engine/src/options.c); salta.h's struct, the bindings' reader and the
-- Lua option topics (checker, help, doc/options.md) must all agree with
-- that declaration. Each test fails when one of them disagrees.
local core = require("salta.core")
local options = require("salta.options")
local H = require("spec.helpers")

local DECLARED = core.sim_options()

local function names(list)
  local out = {}
  for _, o in ipairs(list) do out[#out + 1] = o.name or o end
  table.sort(out)
  return out
end

-- The fields of salta.h's salta_sim_options, in order.
local function struct_fields()
  local header = H.read_file("engine/include/salta.h")
  local body = assert(header:match("typedef struct salta_sim_options {(.-)} salta_sim_options;"))
  body = body:gsub("/%*.-%*/", "")
  local fields = {}
  for decl in body:gmatch("([^;]+);") do
    for piece in decl:gmatch("[^,]+") do fields[#fields + 1] = piece:match("([%a_][%w_]*)%s*$") end
  end
  return fields
end

-- A valid value of option o other than its default.
local function other_value(o)
  if o.type == "boolean" then return not o.default end
  if o.type == "choice" then return o.choices[1] ~= o.default and o.choices[1] or o.choices[2] end
  if o.interval then return o.name == "t0" and -2.5 or 7.5 end
  local lo, hi = o.range[1], o.range[2]
  if o.type == "integer" then return hi < math.huge and (o.default == hi and lo or hi) or o.default + 3 end
  return lo > 0 and lo * 10 or (o.default or 0) + 0.125
end

describe("the simulation's options, declared in the engine", function()
  it("are salta_sim_options' fields (atol_vec is atol's per-unknown form), each once", function()
    local expected = {}
    for _, o in ipairs(DECLARED) do
      expected[#expected + 1] = o.name
      if o.per_unknown then expected[#expected + 1] = o.name .. "_vec" end
    end
    assert.are.same(names(expected), names(struct_fields()))
    assert.are.equal(#DECLARED, #names(DECLARED))
  end)

  it("are read by the bindings by name, for a simulation and a loss (but those that mean nothing to one)", function()
    for _, o in ipairs(DECLARED) do
      local v = other_value(o)
      local opts = { [o.name] = v }
      if o.name == "t0" then opts.tf = 10 end
      local as_sim = core.sim_options_resolve(opts)[o.name]
      if o.loss_only then assert.are.equal(o.default, as_sim, o.name) else assert.are.equal(v, as_sim, o.name) end
      local as_loss = core.sim_options_resolve(opts, "loss")[o.name]
      if o.sim_only then assert.are.equal(o.default, as_loss, o.name) else assert.are.equal(v, as_loss, o.name) end
    end
  end)

  it("have the engine's defaults when left out", function()
    local resolved = core.sim_options_resolve({ t0 = 0, tf = 2 })
    for _, o in ipairs(DECLARED) do
      if not o.interval then
        assert.are.equal(o.span and o.default * 2 or o.default, resolved[o.name], o.name)
      end
    end
  end)

  it("are the options of model:simulate and salta.lsq (but those that mean nothing to one), with the engine's "
    .. "types and ranges", function()
    local TYPES = { number = "number", integer = "integer", boolean = "boolean", choice = "string" }
    for _, topic in ipairs({ "simulate", "lsq" }) do
      local types, ranges = options.TABLES[topic], options.RANGES[topic]
      for _, o in ipairs(DECLARED) do
        if topic == "lsq" and o.sim_only or topic == "simulate" and o.loss_only then
          assert.is_nil(types[o.name], o.name)
        else
          local want = TYPES[o.type] .. (o.per_unknown and topic == "simulate" and "|table" or "")
          assert.are.equal(want, types[o.name], topic .. " " .. o.name)
          assert.are.same(o.range, ranges[o.name], topic .. " " .. o.name)
        end
      end
    end
  end)

  it("reach the engine from model:simulate and salta.lsq under their own names", function()
    for _, o in ipairs(DECLARED) do
      if not o.interval then
        local v = other_value(o)
        assert.are.equal(v, options.engine_values({ [o.name] = v, times = {}, free = {} })[o.name], o.name)
      end
    end
    local given = options.engine_values({ times = {}, params = {}, x0 = {}, model = {}, data = {}, free = {} })
    assert.are.same({}, given)
  end)

  it("are documented with the engine's defaults and help", function()
    local doc = H.read_file("doc/options.md")
    for _, o in ipairs(DECLARED) do
      assert.truthy(doc:find("| `" .. o.name .. "` |", 1, true), o.name)
      assert.truthy(doc:find(o.help, 1, true), o.name)
      if o.default_text then assert.truthy(doc:find(o.default_text, 1, true), o.name) end
    end
  end)
end)
