-- salta.data: CSV files of columns (a header row of names, then numbers).
-- Numbers are written with 17 significant digits so they round-trip.

local M = {}

local function split(line)
  local out = {}
  for field in (line .. ","):gmatch("([^,]*),") do
    out[#out + 1] = field:match("^%s*(.-)%s*$")
  end
  return out
end

-- read_csv(path) -> { names = {...}, columns = { name = {...} }, n = rows }
-- Empty fields and "nan" are NaN (missing); anything else that is not a
-- number is an error naming the file, line and column.
function M.read_csv(path)
  local f, err = io.open(path, "r")
  if not f then error(("salta.read_csv: %s"):format(err), 2) end
  local header = f:read("l")
  if not header then f:close(); error(("salta.read_csv: %s: empty file"):format(path), 2) end
  local names = split(header:gsub("\r$", ""))
  local columns, seen = {}, {}
  for i, n in ipairs(names) do
    if n == "" then f:close(); error(("salta.read_csv: %s:1: column %d has no name"):format(path, i), 2) end
    if seen[n] then f:close(); error(("salta.read_csv: %s:1: column '%s' appears twice"):format(path, n), 2) end
    seen[n], columns[n] = true, {}
  end
  local lineno, rows = 1, 0
  for line in f:lines() do
    lineno = lineno + 1
    line = line:gsub("\r$", "")
    if line:match("%S") and not line:match("^%s*#") then
      local fields = split(line)
      if #fields ~= #names then
        f:close()
        error(("salta.read_csv: %s:%d: %d fields, expected %d (%s)"):format(path, lineno, #fields, #names,
          table.concat(names, ",")), 2)
      end
      rows = rows + 1
      for i, s in ipairs(fields) do
        local v = tonumber(s)
        if v == nil then
          if s == "" or s:lower() == "nan" then v = 0 / 0
          else
            f:close()
            error(("salta.read_csv: %s:%d: column '%s' holds '%s', not a number"):format(path, lineno, names[i], s), 2)
          end
        end
        columns[names[i]][rows] = v
      end
    end
  end
  f:close()
  return { names = names, columns = columns, n = rows }
end

-- write_csv(path, names, columns): columns[name] arrays of equal length;
-- the whole file or nothing (salta.files).
function M.write_csv(path, names, columns)
  if type(names) ~= "table" or #names == 0 or type(columns) ~= "table" then
    error("salta.write_csv: needs a path, a list of column names and a table of columns", 0)
  end
  for _, name in ipairs(names) do
    if type(columns[name]) ~= "table" then error(("salta.write_csv: no column '%s'"):format(tostring(name)), 0) end
  end
  local n = #columns[names[1]]
  local lines = { table.concat(names, ",") }
  for _, name in ipairs(names) do
    if #columns[name] ~= n then
      error(("salta.write_csv: column '%s' has %d rows, expected %d"):format(name, #columns[name], n), 0)
    end
  end
  for k = 1, n do
    local row = {}
    for i, name in ipairs(names) do
      local v = columns[name][k]
      if type(v) ~= "number" then
        error(("salta.write_csv: column '%s' row %d holds %s, not a number"):format(name, k, tostring(v)), 0)
      end
      row[i] = string.format("%.17g", v)
    end
    lines[#lines + 1] = table.concat(row, ",")
  end
  return require("salta.files").write(path, table.concat(lines, "\n") .. "\n", "salta.write_csv")
end

-- uniform(seed): a function drawing numbers in (0, 1) from a linear
-- congruential sequence: the same on every platform and MPI rank, so that
-- synthetic data and sampled starts are reproducible.
function M.uniform(seed)
  seed = math.tointeger(seed) or 1
  return function()
    seed = (1103515245 * seed + 12345) % 2147483648
    return (seed + 0.5) / 2147483648
  end
end

-- gaussian(seed): standard normal numbers (Box-Muller on uniform(seed)).
function M.gaussian(seed)
  local uniform = M.uniform(seed)
  return function() return math.sqrt(-2 * math.log(uniform())) * math.cos(2 * math.pi * uniform()) end
end

return M
