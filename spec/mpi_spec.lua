-- MPI: spec/mpi/check.lua alone and under mpirun -n 2 gives the same loss,
-- gradient, fit and multi-start fit; only rank 0 prints; a failure on one
-- rank is raised on every rank. Not under the sanitizer build (OpenMPI's
-- own allocations are reported as leaks there).
local BIN = os.getenv("SALTA_BIN") or "build/salta"

local function run(cmd)
  local f = assert(io.popen(cmd .. " 2>&1"))
  local out = f:read("a")
  local ok, _, code = f:close()
  return out, ok, code
end

local function numbers(out, key)
  local line = out:match("\n" .. key .. " ([^\n]+)") or out:match("^" .. key .. " ([^\n]+)")
  assert(line, ("no line '%s' in:\n%s"):format(key, out))
  local xs = {}
  for s in line:gmatch("%S+") do xs[#xs + 1] = tonumber(s) end
  return xs
end

local describe_or_skip = os.getenv("SALTA_SANITIZE") and pending or describe

describe_or_skip("salta under mpirun -n 2", function()
  local serial, ok1 = run(BIN .. " spec/mpi/check.lua")
  local mpirun = "mpirun --allow-run-as-root --oversubscribe -n 2 " .. BIN .. " spec/mpi/check.lua"
  local parallel, ok2 = run(mpirun)

  it("runs on two ranks", function()
    assert(ok1, serial)
    assert(ok2, parallel)
    assert.are.same({ 1 }, numbers(serial, "size"))
    assert.are.same({ 2 }, numbers(parallel, "size"))
  end)

  it("gives the single process's loss, gradient, fit and multi-start fit", function()
    local function same(key, rel)
      local a, b = numbers(serial, key), numbers(parallel, key)
      assert.are.equal(#a, #b)
      for k = 1, #a do
        assert(math.abs(a[k] - b[k]) <= rel * math.abs(a[k]) + 1e-300,
          ("%s[%d]: one process %.17g, two ranks %.17g"):format(key, k, a[k], b[k]))
      end
    end
    same("value", 1e-13)
    same("grad", 1e-13)
    same("fit", 1e-12)
    same("multistart", 1e-12)
  end)

  it("prints from rank 0 only, and raises a failure of rank 1 on both ranks", function()
    local _, sizes = parallel:gsub("size 2", "")
    assert.are.equal(1, sizes)
    local _, ends = parallel:gsub("   end  loss", "")
    assert.are.equal(1, ends)
    local m0 = parallel:match("rank 0 agree: ([^\n]+)")
    local m1 = parallel:match("rank 1 agree: ([^\n]+)")
    assert.are.equal(m1, m0)
    assert.is_truthy(m0:find("model 'bad'", 1, true))
  end)
end)
