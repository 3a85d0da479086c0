-- salta.data: CSV files of columns (a header row of names, then numbers).
-- Numbers are written with 17 significant digits so they round-trip.

local M = {}

-- The fields of one CSV record, RFC 4180 quoting ("a, b", "say ""hi"""),
-- blanks around a field dropped; nil when a quoted field runs on past the
-- record's end (onto the next line); false, k when field k has text after
-- its closing quote.
local function fields_of(record)
  local out, pos = {}, 1
  while true do
    pos = record:find("[^ \t]", pos) or #record + 1
    local stop
    if record:sub(pos, pos) == '"' then
      local parts, i = {}, pos + 1
      while true do
        local q = record:find('"', i, true)
        if not q then return nil end
        parts[#parts + 1] = record:sub(i, q - 1)
        if record:sub(q + 1, q + 1) ~= '"' then i = q + 1; break end
        parts[#parts + 1], i = '"', q + 2
      end
      out[#out + 1] = table.concat(parts)
      stop = record:find("[^ \t]", i) or #record + 1
      if stop <= #record and record:sub(stop, stop) ~= "," then return false, #out end
    else
      stop = record:find(",", pos, true) or #record + 1
      out[#out + 1] = record:sub(pos, stop - 1):match("^(.-)%s*$")
    end
    if stop > #record then return out end
    pos = stop + 1
  end
end

-- Reads records from the file f: a record (quoted fields may span lines)
-- and the line it starts on, skipping blank and "#" lines; errors name
-- path and the line.
local function records(f, path)
  local lineno = 0
  local function fail(line, fmt, ...)
    f:close()
    error(("salta.read_csv: %s:%d: " .. fmt):format(path, line, ...), 0)
  end
  return function()
    while true do
      local line = f:read("l")
      if not line then return nil end
      lineno = lineno + 1
      local first, record = lineno, line:gsub("\r$", "")
      if lineno == 1 then record = record:gsub("^\239\187\191", "") end   -- a UTF-8 byte order mark
      if lineno == 1 or (record:match("%S") and not record:match("^%s*#")) then
        local fields, bad = fields_of(record)
        while fields == nil do
          local more = f:read("l")
          if not more then fail(first, "a quoted field is not closed") end
          lineno = lineno + 1
          record = record .. "\n" .. more:gsub("\r$", "")
          fields, bad = fields_of(record)
        end
        if not fields then fail(first, "field %d has text after its closing quote", bad) end
        return fields, first, fail
      end
    end
  end
end

-- A cell as a number: decimal (sign, digits, a point, an exponent), as
-- strtod reads it, finite; "" and "nan" are NaN (missing). Not hexadecimal
-- (which tonumber takes), inf or other spellings of numbers.
local function cell_value(s)
  s = s:match("^%s*(.-)%s*$")
  if s == "" or s:lower() == "nan" then return 0 / 0 end
  local mantissa = s:match("^[+-]?(.-)$"):gsub("[eE][+-]?%d+$", "", 1)
  if not (mantissa:match("^%d+%.?%d*$") or mantissa:match("^%.%d+$")) then return nil end
  local v = tonumber(s)
  if v == math.huge or v == -math.huge then return nil, "a number too large for a double" end
  return v
end

-- A cell quoted for a message: control characters shown as \ddd.
local function shown(s)
  return "'" .. s:gsub("%c", function(c) return ("\\%03d"):format(c:byte()) end) .. "'"
end

-- read_csv(path) -> { names = {...}, columns = { name = {...} }, n = rows }
-- A header row of names, then rows of numbers (cell_value), fields quoted
-- or not; blank lines and lines starting with # are skipped. Errors name
-- the file, the line and the column, and quote the cell.
function M.read_csv(path)
  local f, err = io.open(path, "r")
  if not f then error(("salta.read_csv: %s"):format(err), 2) end
  local next_record = records(f, path)
  local names, _, fail = next_record()
  if not names then f:close(); error(("salta.read_csv: %s: empty file"):format(path), 2) end
  local columns, seen = {}, {}
  for i, n in ipairs(names) do
    if n == "" then fail(1, "column %d has no name", i) end
    if seen[n] then fail(1, "column '%s' appears twice", n) end
    seen[n], columns[n] = true, {}
  end
  local rows = 0
  for fields, lineno in next_record do
    if #fields ~= #names then
      fail(lineno, "%d fields, expected %d (%s)", #fields, #names, table.concat(names, ","))
    end
    rows = rows + 1
    for i, s in ipairs(fields) do
      local v, why = cell_value(s)
      if v == nil then
        fail(lineno, "column '%s' holds %s, %s", names[i], shown(s), why or "not a decimal number")
      end
      columns[names[i]][rows] = v
    end
  end
  f:close()
  return { names = names, columns = columns, n = rows }
end

-- A name as a CSV field: quoted (RFC 4180) when it holds a comma, a quote,
-- a line break or blanks at an end, which read_csv would split or trim.
function M.field(name)
  name = tostring(name)
  if not (name:find('[,"\r\n]') or name:find("^%s") or name:find("%s$")) then return name end
  return '"' .. name:gsub('"', '""') .. '"'
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
  local header = {}
  for i, name in ipairs(names) do header[i] = M.field(name) end
  local lines = { table.concat(header, ",") }
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
