-- The compile time of salta.load_modelica on generated connector-level RC
-- ladders (OpenModelica's shape: pins, resistors, capacitors, connection
-- aliases, flow sums, one ground), from ~100 to ~10,000 equations; each
-- is checked against the ladder's first section at the start.
local salta = require("salta")
local H = require("helpers")

-- The .bmo text of an N-section ladder: a source V drives R1; section k
-- is Rk from node k-1 to node k and Ck from node k to ground. 12
-- equations a section.
local function ladder(N)
  local d, e = {}, {}
  local function decl(s) d[#d + 1] = "    " .. s .. ";" end
  local function eq(s) e[#e + 1] = "    " .. s .. ";" end
  decl("parameter Real 'V' = 1.0"); decl("parameter Real 'R' = 1.0"); decl("parameter Real 'C' = 0.1")
  decl("Real 'G.p.v'"); decl("Real 'G.p.i'"); decl("Real 'S.v'"); decl("Real 'S.i'")
  local ground = { "'G.p.i'", "'S.i'" }
  eq("'G.p.v' = 0.0"); eq("'S.v' = 'V'")
  for k = 1, N do
    local R, C = "R" .. k, "C" .. k
    for _, c in ipairs({ R, C }) do
      for _, v in ipairs({ "p.v", "p.i", "n.v", "n.i", "i" }) do decl(("Real '%s.%s'"):format(c, v)) end
    end
    decl(("Real '%s.v'"):format(R))
    decl(("Real '%s.v'(start = 0.0, fixed = true)"):format(C))
    eq(("'%s.v' = 'R' * '%s.i'"):format(R, R))
    for _, c in ipairs({ R, C }) do
      eq(("0.0 = '%s.p.i' + '%s.n.i'"):format(c, c)); eq(("'%s.i' = '%s.p.i'"):format(c, c))
      eq(("'%s.v' = '%s.p.v' - '%s.n.v'"):format(c, c, c))
    end
    eq(("'%s.i' = 'C' * der('%s.v')"):format(C, C))
    local left = k == 1 and "'S.v'" or ("'R%d.n.v'"):format(k - 1)
    eq(("%s = '%s.p.v'"):format(left, R))
    eq(("'%s.n.v' = '%s.p.v'"):format(R, C))
    eq(("'G.p.v' = '%s.n.v'"):format(C))
    local nxt = k < N and (" + 'R%d.p.i'"):format(k + 1) or ""
    eq(("'%s.n.i' + '%s.p.i'%s = 0.0"):format(R, C, nxt))
    ground[#ground + 1] = ("'%s.n.i'"):format(C)
  end
  eq(("'S.i' + 'R1.p.i' = 0.0"))
  eq(table.concat(ground, " + ") .. " = 0.0")
  return ("package 'Ladder'\n  model 'Ladder'\n%s\n  equation\n%s\n  end 'Ladder';\nend 'Ladder';\n"):format(
    table.concat(d, "\n"), table.concat(e, "\n")), #e
end

describe("load_modelica: compile time of connector-level models", function()
  local clock = require("salta.core").clock
  -- without the host's in-process tcc (plain lua5.4) a 10,000-equation
  -- model waits for cc -O2 (80 s): measured under the host only
  local tcc = pcall(require, "salta.tcc")
  for _, N in ipairs({ 8, 833 }) do
    local run = (N < 100 or tcc) and it or pending
    run(("an RC ladder of %d sections"):format(N), function()
      local text, neq = ladder(N)
      local path = H.temp_file(text, ".bmo")
      local t = clock()
      local m = salta.load_modelica(path)
      local took = clock() - t
      os.remove(path)
      print(("\n  RC ladder, %d equations (%d KB of Base Modelica): read and compiled in %.2f s (%s backend, "
        .. "%d states, %d algebraics, %d aliases)"):format(neq, #text // 1024, took, m.compile_info.backend,
        #m.states, #m.algebraics, #m.structure.aliases))
      assert.are.equal(N, #m.states)
      -- every capacitor starts empty: C1's voltage is 10 t - 100 t^2 + O(t^3) (R C = 0.1, C2 empty)
      local tr = m:simulate{ tf = 1e-3, times = { 0, 1e-3 }, rtol = 1e-10, atol = 1e-14 }
      assert.is_true(math.abs(tr.y["C1.v"][2] - (1e-2 - 1e-4)) < 1e-6, tr.y["C1.v"][2])
      assert.is_true(math.abs(tr.y["C" .. N .. ".v"][2]) < 1e-9)
    end)
  end
end)
