-- The host and its REPL, driven through a pseudo-terminal (script(1)).
local H = require("spec.helpers")
local has = H.has
local BIN = os.getenv("SALTA_BIN") or "build/salta"
local ABS = BIN:sub(1, 1) == "/" and BIN or (os.getenv("PWD") .. "/" .. BIN)

local function run(cmd)
  local f = assert(io.popen(cmd .. " 2>&1"))
  local out = f:read("a")
  f:close()
  return (out:gsub("\r", ""))
end

-- The REPL's output for typed input (printf escapes: \t is Tab), in a
-- fresh HOME, from /tmp (no repository files at hand).
local function repl(input)
  local home = os.tmpname()
  os.remove(home)
  assert(os.execute("mkdir -p " .. home))
  local out = run(("cd /tmp && (printf '%s'; sleep 2) | HOME=%s timeout 20 script -qfec %s /dev/null"):format(
    input, home, ABS))
  os.execute("rm -rf " .. home)
  return out
end

describe("the salta host", function()
  it("says its version and its usage", function()
    local v = run(ABS .. " --version")
    has(v, "salta " .. require("salta").version)
    assert.are.equal(v, run(ABS .. " -v"))
    local u = run(ABS .. " --help")
    has(u, "usage: salta", "salta compile", "-e code", "-l name", "-i ", "--version", "Tab completes")
    has(run(ABS .. " --bogus"), "unrecognized option '--bogus'", "usage: salta")
  end)

  it("gives -e code the library as the global salta, and -l a module as a global", function()
    has(run(ABS .. [[ -e 'print(salta.version, type(help))']]), require("salta").version, "function")
    has(run(ABS .. [[ -l js=salta.json -e 'print(js.encode({ 1, 2 }))']]), "[1, 2]")
  end)

  it("completes names with Tab in the REPL: globals, fields and methods", function()
    local out = repl([[x = salta.ver\t\nprint("V=" .. x)\nt = salta.table{ t = { 0, 1 }, v = { 1, 2 } }\nprint(t:pie\t(1)[1])\n]])
    has(out, "V=" .. require("salta").version, "\n1.0\n")
  end)

  it("drops the line being typed on Ctrl-C and goes on", function()
    local home = os.tmpname()
    os.remove(home)
    assert(os.execute("mkdir -p " .. home))
    local out = run(("cd /tmp && (printf 'x = 41\\n'; sleep 0.5; printf 'y = garbage'; sleep 0.3; printf '\\003'; "
      .. "sleep 0.5; printf 'print(x + 1, y)\\n'; sleep 1) | HOME=%s timeout 20 script -qfec %s /dev/null"):format(home, ABS))
    os.execute("rm -rf " .. home)
    has(out, "\n42\tnil\n")
  end)

  it("explains topics and objects with help, and prints =expr", function()
    local out = repl([[help("fit")\nhelp(salta.table{ t = { 0, 1 }, v = { 1, 2 } })\n=1 + 2\n]])
    has(out, "fit: salta.fit{...}", "max_iter", "salta.table", "methods: at", "\n3\n")
  end)
end)
