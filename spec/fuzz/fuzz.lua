-- spec/fuzz/fuzz.lua [seconds [first_seed [workers]]]: runs the mutation
-- cases (spec/fuzz/case.lua, odd seeds) and the truth cases
-- (spec/fuzz/truth.lua, even seeds) on consecutive seeds, each in a process
-- of its own under a timeout, until the time is spent, and sorts the
-- outcomes:
--   ok              the case ran and every number was finite (and, for a
--                   truth case, every route agreed)
--   refused         salta raised a clear error
--   ill-conditioned a truth case's routes disagree where the problem
--                   explains it (near-grazing, events closer than their
--                   tolerance, unreliable differences)
--   inconclusive    a truth case's two references disagree
--   unclear         salta raised an error a user cannot act on (a Lua internal
--                   message, a traceback position, no model or function named)
--   silent-nan      a NaN or infinity came back without an error
--   names           a hostile name did not come back intact
--   payload         a hostile name's payload ran (its canary file appeared)
--   disagree        a simulation route disagrees with the reference, and salta
--                   said nothing
--   wrong-gradient  a gradient route disagrees with the differences, and salta
--                   said nothing
--   crash           a signal, a Lua panic, or output the case did not write
--   sanitizer       AddressSanitizer or UBSan reported
--   hang            the case outlived its timeout
-- Prints the figures and each failing seed with its script (rerun one with
-- `$SALTA_BIN spec/fuzz/<script> SEED`); exits 1 if any case is not ok,
-- refused, ill-conditioned or inconclusive.
-- Environment: SALTA_BIN (the host to run), FUZZ_TIMEOUT (seconds a case may
-- take, default 60), FUZZ_LOG (a file to receive every case's outcome).
local seconds = tonumber(arg[1]) or 300
local first = tonumber(arg[2]) or 1
local workers = tonumber(arg[3]) or 2
local bin = os.getenv("SALTA_BIN") or "build/salta"
local case_timeout = tonumber(os.getenv("FUZZ_TIMEOUT")) or 60
local BATCH = 4 * workers
local log = os.getenv("FUZZ_LOG") and assert(io.open(os.getenv("FUZZ_LOG"), "w"))

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs seeds [a, b] with `workers` processes; returns seed -> {rc, out}.
local function run_batch(a, b)
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p " .. shell_quote(dir)))
  local cmd = ("seq %d %d | xargs -P %d -I{} sh -c %s"):format(a, b, workers, shell_quote(
    ("timeout -k 5 %d %s spec/fuzz/$(if [ $(({} %% 2)) -eq 0 ]; then echo truth; else echo case; fi).lua {} "
      .. "> %s/{}.out 2>&1; echo $? > %s/{}.rc"):format(case_timeout, shell_quote(bin), dir, dir)))
  os.execute(cmd)
  local results = {}
  for seed = a, b do
    local f = io.open(dir .. "/" .. seed .. ".out")
    local out = f and f:read("a") or ""
    if f then f:close() end
    local r = io.open(dir .. "/" .. seed .. ".rc")
    local rc = r and tonumber(r:read("l")) or -1
    if r then r:close() end
    results[seed] = { rc = rc, out = out }
    os.remove(dir .. "/" .. seed .. ".out")
    os.remove(dir .. "/" .. seed .. ".rc")
  end
  os.remove(dir)
  return results
end

-- A refusal a user can act on names salta's function or the model, and
-- leaks no Lua internals.
local UNCLEAR = { "attempt to ", "bad argument", "stack traceback", "lua/salta/", "%(a nil value%)", "C stack overflow",
  "not enough memory", "assertion failed" }
local function unclear(msg)
  for _, pat in ipairs(UNCLEAR) do
    if msg:find(pat) then return true end
  end
  return not (msg:find("model '", 1, true) or msg:find("salta", 1, true))
end

-- What a truth case prints, by class.
local TRUTH = { ["DISAGREE"] = "disagree", ["WRONG%-GRADIENT"] = "wrong-gradient",
  ["ILL%-CONDITIONED"] = "ill-conditioned", ["INCONCLUSIVE"] = "inconclusive" }

local function classify(res)
  local out, rc = res.out, res.rc
  if out:find("AddressSanitizer", 1, true) or out:find("runtime error:", 1, true)
      or out:find("LeakSanitizer", 1, true) then return "sanitizer", out:match("[^\n]*Sanitizer[^\n]*")
      or out:match("[^\n]*runtime error:[^\n]*") end
  if rc == 124 or rc == 137 then return "hang", ("no result in %d s"):format(case_timeout) end
  local last = out:match("([^\n]*)\n?$") or ""
  if rc ~= 0 then return "crash", ("exit status %d: %s"):format(rc, last) end
  if last == "OK" then return "ok" end
  local nan = last:match("^SILENT%-NAN (.*)")
  if nan then return "silent-nan", nan end
  local names = last:match("^NAMES (.*)")
  if names then return "names", names end
  local payload = last:match("^PAYLOAD (.*)")
  if payload then return "payload", payload end
  for prefix, kind in pairs(TRUTH) do
    local what = last:match("^" .. prefix .. " (.*)")
    if what then return kind, what end
  end
  local msg = last:match("^ERROR (.*)")
  if msg then
    if unclear(msg) then return "unclear", msg end
    return "refused", msg
  end
  return "crash", "no result line: " .. last
end

local ORDER = { "ok", "refused", "ill-conditioned", "inconclusive", "unclear", "silent-nan", "names", "payload",
  "disagree", "wrong-gradient", "crash", "sanitizer", "hang" }
local PASSING = { ok = true, refused = true, ["ill-conditioned"] = true, inconclusive = true }
local counts, failures = {}, {}
for _, k in ipairs(ORDER) do counts[k] = 0 end
local clock0 = os.time()
local seed, cases = first, 0
while os.time() - clock0 < seconds do
  local results = run_batch(seed, seed + BATCH - 1)
  for s = seed, seed + BATCH - 1 do
    local kind, detail = classify(results[s])
    counts[kind] = counts[kind] + 1
    if log then log:write(("%s\t%d\t%s\n"):format(kind, s, detail or "")) end
    if not PASSING[kind] then
      failures[#failures + 1] = ("%-14s seed %d (%s): %s"):format(kind, s, s % 2 == 0 and "truth.lua" or "case.lua",
        detail)
    end
  end
  cases = cases + BATCH
  seed = seed + BATCH
end

if log then log:close() end
local elapsed = os.time() - clock0
local parts = {}
for _, k in ipairs(ORDER) do parts[#parts + 1] = ("%s %d"):format(k, counts[k]) end
print(("fuzz: %d cases (seeds %d..%d) in %d s with %d workers: %s"):format(cases, first, seed - 1, elapsed, workers,
  table.concat(parts, ", ")))
for _, line in ipairs(failures) do print(line) end
os.exit(#failures == 0 and 0 or 1)
