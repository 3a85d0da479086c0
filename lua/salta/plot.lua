-- salta.plot: figures through gnuplot (PNG with pngcairo, SVG). Data go in
-- as inline datablocks with 17 significant digits.
--
--   plot.trajectory(path, tr, { outputs = {"x"}, data = {t = ..., x = ...} })
--   plot.series(path, { {name = "loss", x = {...}, y = {...}} }, { logy = true })

local M = {}

local function terminal(path, size)
  local w, h = (size or { 900, 540 })[1], (size or { 900, 540 })[2]
  if path:match("%.svg$") then return ("set terminal svg size %d,%d dynamic noenhanced\n"):format(w, h) end
  if path:match("%.png$") then return ("set terminal pngcairo size %d,%d noenhanced\n"):format(w, h) end
  error("salta.plot: the file must end in .png or .svg: " .. path, 3)
end

local function datablock(name, xs, ys)
  local rows = { "$" .. name .. " << EOD" }
  for i = 1, #xs do
    local y = ys[i]
    if y == y then rows[#rows + 1] = string.format("%.17g %.17g", xs[i], y) end
  end
  rows[#rows + 1] = "EOD"
  return table.concat(rows, "\n") .. "\n"
end

local function quote(s) return '"' .. tostring(s):gsub('"', "'") .. '"' end

-- Runs a gnuplot script that writes `tmp`, then renames it over path:
-- a failed plot leaves an existing file as it was. Errors carry gnuplot's
-- message.
local function run(script, tmp, path)
  local log = os.tmpname()
  local gp = io.popen("gnuplot 2> " .. log, "w")
  if not gp then error("salta.plot: cannot start gnuplot (install gnuplot-nox)", 3) end
  gp:write(script)
  local ok = gp:close()
  local f = io.open(log)
  local msg = f and f:read("a") or ""
  if f then f:close() end
  os.remove(log)
  if not ok then
    os.remove(tmp)
    error("salta.plot: gnuplot failed: " .. msg, 3)
  end
  local renamed, err = os.rename(tmp, path)
  if not renamed then
    os.remove(tmp)
    error(("salta.plot: %s: cannot replace it: %s"):format(path, tostring(err)), 3)
  end
end

-- series(path, list, opts): lines y(x); opts: title, xlabel, ylabel, logy,
-- size {w, h}, vlines = {x...} (dashed markers, e.g. event times).
function M.series(path, list, opts)
  opts = opts or {}
  local tmp = ("%s.tmp-%d"):format(path, math.random(1, 1 << 30))
  local s = { terminal(path, opts.size), "set output " .. quote(tmp) .. "\n",
    "set grid\nset key outside right\n" }
  if opts.title then s[#s + 1] = "set title " .. quote(opts.title) .. "\n" end
  if opts.xlabel then s[#s + 1] = "set xlabel " .. quote(opts.xlabel) .. "\n" end
  if opts.ylabel then s[#s + 1] = "set ylabel " .. quote(opts.ylabel) .. "\n" end
  if opts.logy then s[#s + 1] = "set logscale y\nset format y '%.0e'\n" end
  for i, x in ipairs(opts.vlines or {}) do
    s[#s + 1] = ("set arrow %d from %.17g, graph 0 to %.17g, graph 1 nohead dt 2 lc rgb '#999999'\n"):format(i, x, x)
  end
  local plots = {}
  for i, ser in ipairs(list) do
    s[#s + 1] = datablock("D" .. i, ser.x, ser.y)
    local style = ser.points and "points pt 7 ps 0.4" or "lines lw 2"
    plots[#plots + 1] = ("$D%d using 1:2 with %s title %s"):format(i, style, quote(ser.name or ("series " .. i)))
  end
  s[#s + 1] = "plot " .. table.concat(plots, ", ") .. "\nset output\n"
  run(table.concat(s), tmp, path)
  return path
end

-- trajectory(path, tr, opts): simulated outputs against data, event times
-- marked. opts.outputs (default all), opts.data = {t = times, name = values}.
function M.trajectory(path, tr, opts)
  opts = opts or {}
  local list = {}
  for _, n in ipairs(opts.outputs or tr.outputs) do
    list[#list + 1] = { name = n, x = tr.t, y = tr.y[n] }
    if opts.data and opts.data[n] then
      list[#list + 1] = { name = n .. " (data)", x = opts.data.t, y = opts.data[n], points = true }
    end
  end
  local ev = {}
  for _, e in ipairs(tr:events()) do ev[#ev + 1] = e.t end
  return M.series(path, list, { title = opts.title or ("model '" .. tr.model .. "'"), xlabel = "t",
    vlines = ev, size = opts.size })
end

return M
