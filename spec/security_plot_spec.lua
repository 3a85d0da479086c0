-- Plots: no title, label, series or output name, nor the file's path, runs
-- a command through gnuplot (newlines, quotes, backslashes, backquotes,
-- system(), a piped output) or reaches a shell.
local salta = require("salta")
local plot = require("salta.plot")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

-- A fresh folder holding nothing; removed by the caller.
local function temp_dir()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  return dir
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function head(path, n)
  local f = assert(io.open(path, "rb"))
  local s = f:read(n)
  f:close()
  return s
end

-- Strings that would each run `touch <canary>` if they left their string.
local function payloads(canary)
  local cmd = "touch '" .. canary .. "'"
  return {
    'a"\n!' .. cmd .. "\n#",
    "x'\nsystem('" .. cmd:gsub("'", "") .. "')\n",
    "y' . system(\"" .. cmd .. "\") . '",
    "z \"`" .. cmd .. "`\" `" .. cmd .. "`",
    "w\r!" .. cmd .. "\r",
    "ends in a backslash\\",
    "\\\n!" .. cmd,
  }
end

describe("a plot with hostile names", function()
  local dir, canary
  before_each(function()
    dir = temp_dir()
    canary = dir .. "/CANARY"
  end)
  after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

  it("quotes every title, label and series name: the figure is drawn and nothing runs", function()
    for k, p in ipairs(payloads(canary)) do
      for _, ext in ipairs({ "png", "svg" }) do
        local path = ("%s/s%d.%s"):format(dir, k, ext)
        local series = { { name = p, x = { 0, 1, 2 }, y = { 1, 0, 1 } },
          { name = p .. "2", x = { 0, 2 }, y = { 0.5, 0.5 }, points = true } }
        assert.are.equal(path, plot.series(path, series, { title = p, xlabel = p, ylabel = p, vlines = { 1 } }))
        local h = head(path, 8)
        if ext == "png" then assert.are.equal("\137PNG", h:sub(1, 4)) else assert.is_truthy(h:find("<", 1, true)) end
        assert.is_false(exists(canary), ("payload %d ran: %q"):format(k, p))
      end
    end
  end)

  it("writes each payload as one single-quoted string on its command's line", function()
    for k, p in ipairs(payloads(canary)) do
      plot.series(("%s/q%d.svg"):format(dir, k), { { name = "s", x = { 0, 1 }, y = { 0, 1 } } }, { title = p })
      local line = plot.last_script:match("\nset title ([^\n]*)\n")
      assert.are.equal("'" .. p:gsub("%c", " "):gsub("'", "''") .. "'", line)
      -- no lone quote closes it early
      assert.is_nil(line:sub(2, -2):gsub("''", ""):find("'", 1, true))
    end
  end)

  it("draws the SVG text as given, quotes and backslashes included", function()
    local path = dir .. "/text.svg"
    plot.series(path, { { name = "it's a \\ b", x = { 0, 1 }, y = { 0, 1 } } }, { title = "say \"hi\"\\" })
    local svg = H.read_file(path)
    assert.is_truthy(svg:find("it&apos;s a \\ b", 1, true) or svg:find("it's a \\ b", 1, true))
    assert.is_truthy(svg:find("say &quot;hi&quot;\\", 1, true) or svg:find('say "hi"\\', 1, true))
  end)

  it("writes an output whose name holds quotes, backquotes and a pipe where it says", function()
    -- (no "/" in a name: gnuplot runs in this folder, so these canaries
    -- would land here; removed below)
    local here = "SALTA_SECURITY_CANARY"
    for k, name in ipairs({ "o'ne\".png", "`touch " .. here .. "`.svg", "|touch " .. here .. " #.png",
      "x'; !touch " .. here .. "; '.png", "y'.system('touch " .. here .. "').'.svg", "z\\" .. "'.png" }) do
      local path = dir .. "/" .. name
      plot.series(path, { { name = "s", x = { 0, 1 }, y = { 0, 1 } } })
      local ran = exists(here)
      os.remove(here)
      assert.is_true(exists(path), name)
      assert.is_false(ran, ("output name %d ran"):format(k))
    end
    -- a relative path starting with "|" is a file (here in a folder that
    -- does not exist: gnuplot cannot open it), not a pipe to a command
    local rel = "|touch '" .. canary .. "' #.png"
    has(err_of(plot.series, rel, { { name = "s", x = { 0, 1 }, y = { 0, 1 } } }), "salta.plot.series: gnuplot failed")
    assert.is_truthy(plot.last_script:find("set output './|touch", 1, true))
    assert.is_false(exists(canary))
  end)

  it("refuses a file name with a newline, naming it", function()
    local path = dir .. "/a\n!touch " .. canary .. "\n.png"
    has(err_of(plot.series, path, { { name = "s", x = { 0, 1 }, y = { 0, 1 } } }), "salta.plot.series",
      "holds a control character", "a\\010!touch")
    assert.is_false(exists(canary))
  end)

  it("writes only numbers into its data blocks", function()
    has(err_of(plot.series, dir .. "/n.png", { { name = "s", x = { 0, "1\nEOD\n!touch " .. canary }, y = { 0, 1 } } }),
      "salta.plot.series: series 's': x[2] is 1", "not a number")
    has(err_of(plot.series, dir .. "/n.png", { { name = "s", x = { 0, 1 }, y = { 0 } } }),
      "series 's' has 2 x values and 1 y values")
    has(err_of(plot.series, dir .. "/n.png", { { name = "s", x = { 0 }, y = { 0 } } }, { vlines = { "1\n!ls" } }),
      "option 'vlines' holds 1")
    assert.is_false(exists(canary))
    plot.series(dir .. "/n.png", { { name = "s", x = { 0, 1, 2, 0 / 0 }, y = { 0, 1 / 0, 1, 2 } } })
    local block = plot.last_script:match("%$D1 << EOD\n(.-)EOD\n")
    for row in block:gmatch("[^\n]+") do assert.is_truthy(row:match("^%S+ %S+$") and tonumber(row:match("^%S+"))) end
    assert.are.equal("0 0\n2 1\n", block)
  end)

  it("quotes a model's and its outputs' names in trajectory and fit plots", function()
    local p = "h'\n!touch " .. canary .. "\n`touch " .. canary .. "`\\"
    local m = salta.dae{ name = "m", states = { { "x", 1 } }, params = { { "k", 0.5 } },
      f = function(t, x, z, p_) return { -p_.k * x.x } end }
    local tr = m:simulate{ tf = 1, times = { 0, 0.25, 0.5, 0.75, 1 } }
    tr.model = p
    local path = dir .. "/tr.png"
    plot.trajectory(path, tr, { title = p, data = { t = { 0, 1 }, x = { 1, 0.6 } } })
    assert.are.equal("\137PNG", head(path, 4))
    local L = salta.lsq{ model = m, times = tr.t, data = { x = tr.y.x }, free = { "k" } }
    local r = salta.fit{ loss = L, start = { 0.4 }, print_every = 0 }
    r:plot(dir .. "/fit.svg", { title = p })
    assert.is_truthy(head(dir .. "/fit.svg", 200):find("<", 1, true))
    assert.is_false(exists(canary))
  end)
end)
