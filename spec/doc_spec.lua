-- The documents in doc/ that are generated (make doc) are current, every
-- README snippet runs from a directory other than the repository's, and
-- the input checks the documentation promises hold.
local salta = require("salta")
local H = require("spec.helpers")
local has, err_of = H.has, H.err_of

local read = H.read_file

describe("the generated documents", function()
  it("doc/options.md is the option declarations' (run make doc after changing them)", function()
    assert.are.equal(require("salta.docgen").options() .. "\n", read("doc/options.md"))
  end)
  it("doc/reference.md is the help topics' (run make doc after changing them)", function()
    assert.are.equal(require("salta.docgen").reference() .. "\n", read("doc/reference.md"))
  end)
  it("every fit, profile, confidence, report, JSON and compile option is reachable with help()", function()
    local printed = {}
    local old = _G.print   -- salta.help prints through the global print
    _G.print = function(s) printed[#printed + 1] = tostring(s) end
    for _, topic in ipairs({ "fit", "profile", "noise", "Fit", "Profile", "confidence", "correlation", "report",
      "json", "compile", "goodness", "status", "bounds" }) do
      local ok, err = pcall(salta.help, topic)
      if not ok then _G.print = old end
      assert(ok, err)
    end
    _G.print = old
    local text = table.concat(printed, "\n")
    has(text, "r:correlation()", "salta.json.write(path, value)", "key=value", "level", "misfit_level", "start_evals")
  end)
  it("doc/c_api.md is salta.h's (run make doc after changing it)", function()
    assert.are.equal(require("salta.docgen").c_api(read("engine/include/salta.h")) .. "\n", read("doc/c_api.md"))
  end)
  it("every option table a function checks is documented", function()
    local topics = {}
    for _, t in ipairs(require("salta.options").topics()) do topics[t] = true end
    for _, t in ipairs({ "dae", "event", "simulate", "lsq", "grad", "experiments", "fit", "plot", "load_spec" }) do
      assert.is_true(topics[t], t)
    end
  end)
end)

describe("the README's and the guide's snippets", function()
  -- every ```lua block of the README, then of doc/guide.md, run in order in
  -- one state from a temporary folder
  it("run from a directory other than the repository's", function()
    local text = read("README.md") .. "\n" .. read("doc/guide.md")
    local chunks = {}
    for code in text:gmatch("```lua\n(.-)```") do chunks[#chunks + 1] = code end
    assert.is_true(#chunks >= 6)
    local root = os.getenv("PWD")
    local script = os.tmpname() .. ".lua"
    local f = assert(io.open(script, "w"))
    f:write(("package.path = %q .. package.path\n"):format(root .. "/lua/?.lua;" .. root .. "/lua/?/init.lua;"))
    f:write(("SALTA_ROOT = %q\n"):format(root))
    f:write(table.concat(chunks, "\n-- next snippet\n"))
    f:close()
    local bin = os.getenv("SALTA_BIN") or "build/salta"
    if bin:sub(1, 1) ~= "/" then bin = root .. "/" .. bin end
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir -p " .. dir))
    local p = assert(io.popen(("cd %s && %s %s 2>&1"):format(dir, bin, script)))
    local out = p:read("a")
    local ok = p:close()
    os.execute("rm -rf " .. dir)
    os.remove(script)
    assert(ok, out)
  end)
end)

describe("input checks", function()
  it("times given with a CSV that has its own t column must agree", function()
    local m = salta.dae{ name = "d", states = { { "x", 1 } }, f = function(t, x) return { -x.x } end }
    local path = H.temp_file("t,x\n0.5,0.6\n1,0.37\n", ".csv")
    has(err_of(salta.lsq, { model = m, data = path, times = { 0.7, 1 } }), "times[1] = 0.7",
      "column 't' holds 0.5 at row 1 (line 2)", "give one of them")
    has(err_of(salta.lsq, { model = m, data = path, times = { 0.5 } }), "times has 1 values", "has 2 rows")
    assert.is_truthy(salta.lsq{ model = m, data = path, times = { 0.5, 1 } })
    os.remove(path)
  end)
end)
