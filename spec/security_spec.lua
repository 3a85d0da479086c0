-- Security: no name, spec or file can run code or read files outside the
-- spec's folder. Hostile names in every name array of a spec and of a
-- salta.dae table load with the name intact (trajectories, JSON, CSV,
-- plots, `salta compile` and a strict C compile of its output) or are
-- refused with a clear message; no payload ever creates its canary file.
-- A spec's CSV outside its folder (absolute, .., a symlink out, a device)
-- is refused, naming the field.
local salta = require("salta")
local json = require("salta.json")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

local BIN = os.getenv("SALTA_BIN") or "build/salta"

local function tmpdir()
  local f = assert(io.popen("mktemp -d"))
  local d = f:read("l")
  f:close()
  return d
end

local function exists(path)
  local f = io.open(path)
  if f then f:close() end
  return f ~= nil
end

local dir = tmpdir()
local CANARY = dir .. "/CANARY"

-- One payload per class; each would create CANARY if it escaped its string.
local PAYLOADS = {
  'q"uote',
  "back\\slash\\",
  'tri??/"); __attribute__((constructor)) static void pwn(void) { system("touch ' .. CANARY .. '"); } static int q[] = {("',
  "end*/ int pwn_c; /*",
  "**//x",
  '!touch ' .. CANARY,
  "system('touch " .. CANARY .. "')",
  "x\"; system(\"touch " .. CANARY .. "\") #",
  "$(touch " .. CANARY .. ")",
  "`touch " .. CANARY .. "`",
  "ünïcödé €",
  "%s%n%d",
  "com,ma",
  ' lead and trail ',
  "x'); os.execute('touch " .. CANARY .. "') --",
}
local REFUSED = { "new\nline", "nul\0byte", "bell\7", "not utf8 \255" }

-- A spec whose parameters, discrete variables and event names are hostile
-- (equations read only the plain state x: names with such bytes cannot be
-- written in an equation).
local function hostile_spec(names)
  local params, discrete, whens = {}, {}, {}
  for i, n in ipairs(names) do
    params[i] = { name = n, type = "float", value = i }
    discrete[i] = { name = n .. "#d", type = "float", start = 0 }
    whens[i] = { condition = ("x < %g"):format(1 - i / (#names + 1)), reinit = { "x = prev(x) - 0.001" }, comment = n .. "#e" }
  end
  return {
    states = { { name = "x", type = "float", start = 1 } },
    parameters = params, discrete = discrete, when = whens,
    f = { "der(x) = -x" },
  }
end

local function write_spec(tbl, file)
  local path = dir .. "/" .. file
  local f = assert(io.open(path, "w"))
  f:write(json.encode(tbl))
  f:close()
  return path
end

describe("hostile names", function()
  it("in a spec load, simulate, plot and compile with every name intact, and run nothing", function()
    local path = write_spec(hostile_spec(PAYLOADS), "hostile.json")
    local m = salta.load_spec(path)
    for i, n in ipairs(PAYLOADS) do
      assert.are.equal(n, m.params[i])
      assert.are.equal(i, m.p0[n])
    end
    local tr = m:simulate{ tf = 3, times = { 0, 1.5, 3 } }
    local ev = tr:events()
    assert.are.equal(#PAYLOADS, #ev)
    for k, e in ipairs(ev) do assert.are.equal(PAYLOADS[k] .. "#e", e.name) end
    for _, n in ipairs(PAYLOADS) do assert.is_not_nil(tr.y[n .. "#d"], n) end
    -- JSON and CSV give the names back
    local text = json.encode({ names = m.params })
    assert.are.same(m.params, require("cjson").decode(text).names)
    local csv = dir .. "/tr.csv"
    tr:to_csv(csv)
    local back = salta.read_csv(csv)
    for _, n in ipairs(PAYLOADS) do assert.is_not_nil(back.columns[n .. "#d"], n) end
    -- a plot with the names as series, title and labels
    local png = dir .. "/tr.png"
    salta.plot.trajectory(png, tr)
    salta.plot.series(png, { { name = PAYLOADS[6], x = { 0, 1 }, y = { 0, 1 } } },
      { title = PAYLOADS[7], xlabel = PAYLOADS[8], ylabel = PAYLOADS[3] })
    assert.is_true(exists(png))
    -- salta compile, then a C compile in a strict mode (trigraphs on)
    local c = dir .. "/hostile.c"
    assert.is_true(os.execute(("%s compile %s -o %s 2>/dev/null"):format(BIN, path, c)))
    assert.is_true(os.execute(("cc -std=c11 -trigraphs -Wall -Werror -c %s -o %s.o"):format(c, c)))
    assert.is_false(H.read_file(c):find("??", 1, true) ~= nil)
    assert.is_false(exists(CANARY))
  end)

  it("in a salta.dae table load with every name intact and run nothing", function()
    for _, n in ipairs(PAYLOADS) do
      local m = salta.dae{
        name = n,
        states = { { n, 1.0 } },
        algebraics = { { n .. "#z", 0.0 } },
        params = { { n .. "#p", 2.0 } },
        f = function(t, x, z, p) return { -p[n .. "#p"] * x[n] } end,
        g = function(t, x, z, p) return { z[n .. "#z"] - x[n] } end,
        events = { { name = n .. "#e", direction = "down", guard = function(t, x) return x[n] - 0.5 end } },
      }
      assert.are.equal(n, m.name)
      local tr = m:simulate{ tf = 1, times = { 0, 1 } }
      assert.is_near(math.exp(-2), tr.y[n][2], 1e-5)
      assert.is_near(math.exp(-2), tr.y[n .. "#z"][2], 1e-5)
      assert.are.equal(n .. "#e", tr:events()[1].name)
      assert.is_near(math.log(2) / 2, tr:events()[1].t, 1e-6)
    end
    assert.is_false(exists(CANARY))
  end)

  it("with control characters or bytes that are not UTF-8 are refused, naming the field", function()
    for _, n in ipairs(REFUSED) do
      local tbl = hostile_spec({ n })
      tbl.discrete, tbl.when = nil, nil
      local e = err_of(salta.load_spec, write_spec(tbl, "refused.json"))
      has(e, "parameter name")
      local e2 = err_of(salta.dae, { states = { { n, 1.0 } }, f = function(t, x) return { -x[n] } end })
      has(e2, "state name")
      assert.is_nil(e2:find("\n", 1, true), e2)
    end
    local e = err_of(salta.dae, { name = "a\nb", states = { { "x", 1 } }, f = function(t, x) return { -x.x } end })
    has(e, "model 'a\\nb': model name", "control character")
  end)
end)

describe("files a spec reads", function()
  local outside = tmpdir()
  local inner = dir .. "/specs"
  os.execute(("mkdir -p %s/sub && printf 'h,u\\n0,1\\n1,2\\n' > %s/u.csv && cp %s/u.csv %s/sub/u.csv")
    :format(inner, outside, outside, inner))
  os.execute(("ln -s %s/u.csv %s/out_link.csv && ln -s /dev/zero %s/zero.csv && ln -s sub/u.csv %s/in_link.csv")
    :format(outside, inner, inner, inner))

  local function with_csv(csv)
    local tbl = {
      states = { { name = "x", type = "float", start = 0 } },
      inputs = { { name = "u", csv = csv, t = "h", v = "u" } },
      f = { "der(x) = u(time)" },
    }
    return write_spec(tbl, "specs/input.json")
  end

  it("stay inside the spec's folder: relative paths and symlinks within it work", function()
    for _, csv in ipairs({ "sub/u.csv", "./sub/../sub/u.csv", "in_link.csv" }) do
      local tr = salta.load_spec(with_csv(csv)):simulate{ tf = 1, times = { 0, 1 } }
      assert.is_near(1.5, tr.y.x[2], 1e-8)
    end
  end)

  it("are refused outside it, as devices, or missing, naming the field and quoting no content", function()
    local cases = {
      { outside .. "/u.csv", "absolute path" },
      { "/etc/passwd", "absolute path" },
      { "../../.." .. outside .. "/u.csv", "leaves the spec's folder" },
      { "out_link.csv", "leaves the spec's folder" },
      { "zero.csv", "leaves the spec's folder" },
      { "/dev/zero", "absolute path" },
      { "missing.csv", "cannot open" },
    }
    for _, c in ipairs(cases) do
      local e = err_of(salta.load_spec, with_csv(c[1]))
      has(e, "inputs[1] ('u') csv", c[2])
      assert.is_nil(e:find("0,1", 1, true), e)
    end
  end)

  it("must be regular files: a spec named as a device, or a fifo inside the folder, is refused", function()
    has(err_of(salta.load_spec, "/dev/zero"), "not a regular file")
    os.execute(("mkfifo %s/sub/fifo.csv"):format(inner))
    has(err_of(salta.load_spec, with_csv("sub/fifo.csv")), "inputs[1] ('u') csv", "not a regular file")
  end)

  teardown(function()
    os.execute("rm -rf " .. outside)
    os.execute("rm -rf " .. dir)
  end)
end)
