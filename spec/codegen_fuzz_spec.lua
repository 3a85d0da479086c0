-- Generated code always compiles: random spec equations (every operator
-- and function of the grammar, parameters in every position, resets
-- nonlinear in their own state, solved by Newton in the kernel) go through
-- the code generator and a C compiler, and the kernels agree with the
-- expression evaluator, values and Jacobians against differences.
local H = require("helpers")
local spec = require("salta.spec")
local model = require("salta.model")
local expr = require("salta.expr")

local FUNCS = { "sin", "cos", "tanh", "exp", "atan" }
local LEAVES = { "x1", "x2", "z1", "k1", "k2", "time" }

-- A random expression string of depth d (values stay moderate: exp and
-- powers act on bounded arguments).
local function gen(rnd, d)
  local r = rnd()
  if d == 0 or r < 0.25 then
    if rnd() < 0.3 then return ("%.3g"):format(0.5 + 2 * rnd()) end
    return LEAVES[1 + math.floor(rnd() * #LEAVES)]
  end
  if r < 0.45 then return ("%s(%s)"):format(FUNCS[1 + math.floor(rnd() * #FUNCS)], gen(rnd, d - 1)) end
  if r < 0.55 then return ("(%s)^2"):format(gen(rnd, d - 1)) end
  if r < 0.62 then return ("sqrt(1 + (%s)^2)"):format(gen(rnd, d - 1)) end
  if r < 0.7 then return ("(%s)/(2 + tanh(%s))"):format(gen(rnd, d - 1), gen(rnd, d - 1)) end
  local ops = { "+", "-", "*" }
  return ("(%s %s %s)"):format(gen(rnd, d - 1), ops[1 + math.floor(rnd() * 3)], gen(rnd, d - 1))
end

-- A reset of x2 nonlinear in its post-event value, with parameters inside
-- (x2 + k1 x2^3 + ... = rhs has one root; the pre-event value starts Newton).
local function reset_text(rnd)
  local forms = {
    "x2 + k1*x2^3 = %s",
    "x2 + k2*tanh(x2) + k1*x2^3 = %s",
    "x2^3 + k2*x2 = %s",
    "exp(x2) + k1*x2 = 2 + tanh(%s)",
  }
  local rhs = gen(rnd, 2):gsub("%f[%w_](%a%d)%f[^%w_]", function(v)
    return (v == "x1" or v == "x2" or v == "z1") and "prev(" .. v .. ")" or v
  end)
  return forms[1 + math.floor(rnd() * #forms)]:format(rhs)
end

local function random_spec(rnd, i)
  return {
    states = { { name = "x1", start = 0.3 }, { name = "x2", start = -0.2 } },
    alg_vars = { { name = "z1", start = 0 } },
    parameters = { { name = "k1", value = 0.5 + rnd() }, { name = "k2", value = 0.5 + rnd() } },
    f = { ("der(x1) = %s"):format(gen(rnd, 3)), ("der(x2) = %s"):format(gen(rnd, 3)) },
    g = { ("z1 = %s"):format(gen(rnd, 3):gsub("z1", "x1")) },
    h = { ("y = %s"):format(gen(rnd, 2)) },
    when = { { condition = ("x1 > %s"):format(gen(rnd, 1)), reinit = reset_text(rnd) } },
  }, "fuzz" .. i
end

local function env_of(d, t, x, z, p)
  local env = { [d.vars.t] = t }
  for i, v in ipairs(d.vars.x) do env[v] = x[i] end
  for i, v in ipairs(d.vars.z) do env[v] = z[i] end
  for i, v in ipairs(d.vars.p) do env[v] = p[i] end
  return env
end

local function close(a, b, tol)
  return math.abs(a - b) <= tol * (1 + math.abs(b)) or (a ~= a and b ~= b)
end

describe("the code generator on random equations", function()
  it("always produces C that compiles and agrees with the evaluator", function()
    local rnd = H.rng(20261203)
    local compiled, resets = 0, 0
    for i = 1, 24 do
      local tbl, name = random_spec(rnd, i)
      local d = spec.describe_spec(tbl, name)
      local m = model.build(d, { structural = false })   -- the kernels of d's own equations; a compile error raises here
      compiled = compiled + 1
      for _ = 1, 3 do
        local t, x, z, p = rnd(), { rnd() - 0.5, rnd() - 0.5 }, { rnd() }, { d.p_nominal[1], d.p_nominal[2] }
        local env = env_of(d, t, x, z, p)
        for _, fn in ipairs({ { "f", d.f }, { "g", d.g }, { "h", d.h }, { "guard", d.e } }) do
          local got = m:eval(fn[1], t, x, z, p)
          for k, e in ipairs(fn[2]) do
            local want = expr.eval(e, env)
            assert(close(got[k], want, 1e-12), ("%s %s[%d]: %.17g, evaluator %.17g\n%s"):format(name, fn[1], k,
              got[k], want, require("pl.pretty").write(tbl)))
          end
        end
        local ok, r = pcall(m.eval, m, "reset", t, x, z, p, 1)
        if ok then   -- a Newton that fails from this start is an error, not a wrong value
          resets = resets + 1
          local want = expr.eval(d.r[1][2], env)
          assert(close(r[2], want, 1e-10), ("%s reset: %.17g, evaluator %.17g"):format(name, r[2], want))
          -- the reset's Jacobian by p (through the implicit function) against differences
          local J = m:jacobian("reset", "p", t, x, z, p, 1)
          for j = 1, 2 do
            local h = 1e-6
            local pp, pm = { p[1], p[2] }, { p[1], p[2] }
            pp[j], pm[j] = p[j] + h, p[j] - h
            local okp, rp = pcall(m.eval, m, "reset", t, x, z, pp, 1)
            local okm, rm = pcall(m.eval, m, "reset", t, x, z, pm, 1)
            if okp and okm then
              local fd = (rp[2] - rm[2]) / (2 * h)
              assert(math.abs(J[2][j] - fd) <= 1e-5 * (1 + math.abs(fd)),
                ("%s d reset/d k%d: %.12g, differences %.12g"):format(name, j, J[2][j], fd))
            end
          end
        end
      end
    end
    assert.are.equal(24, compiled)
    assert(resets >= 36, ("only %d of 72 implicit resets evaluated"):format(resets))
  end)
end)
