-- salta.plot: figures through gnuplot (PNG with pngcairo, SVG). Data go in
-- as inline datablocks with 17 significant digits.
--
--   plot.trajectory(path, tr, { outputs = {"x"}, data = {t = ..., x = ...} })
--   plot.series(path, { {name = "loss", x = {...}, y = {...}} }, { logy = true })
--   plot.fit(path, fit [, opts])   -- model and data, residuals in a panel below
--
-- A series' colour is its `color` (an index into COLORS); an output's data
-- points take its curve's colour, drawn under the curve.

local options = require("salta.options")

local M = {}

-- Colours by index, distinct on white (gnuplot's default cycle, darker).
local COLORS = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2" }
M.COLORS = COLORS

local function color(i) return COLORS[(i - 1) % #COLORS + 1] end

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
  M.last_script = script   -- what the last plot asked gnuplot for (tests read it)
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

-- The datablocks and the plot command of a list of series (points first,
-- so that curves are drawn over their data).
local function plot_command(list, prefix)
  local blocks, plots = {}, {}
  local order = {}
  for i, ser in ipairs(list) do if ser.points then order[#order + 1] = i end end
  for i, ser in ipairs(list) do if not ser.points then order[#order + 1] = i end end
  for _, i in ipairs(order) do
    local ser = list[i]
    blocks[#blocks + 1] = datablock(prefix .. i, ser.x, ser.y)
    local style = ser.points and "points pt 7 ps 0.5" or "lines lw 2"
    plots[#plots + 1] = ("$%s%d using 1:2 with %s lc rgb '%s' title %s"):format(prefix, i, style,
      color(ser.color or i), quote(ser.name or ("series " .. i)))
  end
  return table.concat(blocks) .. "plot " .. table.concat(plots, ", ") .. "\n"
end

-- series(path, list, opts): lines y(x) (a series with points = true as
-- points; color an index into COLORS); opts: title, xlabel, ylabel, logy,
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
  s[#s + 1] = plot_command(list, "D")
  s[#s + 1] = "set output\n"
  run(table.concat(s), tmp, path)
  return path
end

-- trajectory(path, tr, opts): simulated outputs against data, event times
-- marked. opts.outputs (default all), opts.data = {t = times, name = values}.
function M.trajectory(path, tr, opts)
  opts = opts or {}
  options.check("plot", opts, "salta.plot.trajectory")
  local list = {}
  for k, n in ipairs(opts.outputs or tr.outputs) do
    list[#list + 1] = { name = n, x = tr.t, y = tr.y[n], color = k }
    if opts.data and opts.data[n] then
      list[#list + 1] = { name = n .. " (data)", x = opts.data.t, y = opts.data[n], points = true, color = k }
    end
  end
  local ev = {}
  for _, e in ipairs(tr:events()) do ev[#ev + 1] = e.t end
  return M.series(path, list, { title = opts.title or ("model '" .. tr.model .. "'"), xlabel = "t",
    vlines = ev, size = opts.size })
end

-- fit(path, fit, opts): a fit of a salta.lsq loss: the model at the
-- fitted parameters (a fine grid) over its data in matching colours, event
-- times marked, and the residuals (model - data at the targets) in a panel
-- below. opts: outputs, title, size.
function M.fit(path, fit, opts)
  opts = opts or {}
  options.check("plot", opts, "fit:plot")
  local loss = fit.lsq
  if not (loss and loss.model and loss.predict) then
    error("fit:plot: needs the fit of a salta.lsq loss (for several experiments, plot each loss's fit)", 2)
  end
  local P, X = loss:full(fit.x)
  local fine = {}
  local t0, tf = loss.t0, loss.times[#loss.times]
  for i = 0, 400 do fine[i + 1] = t0 + (tf - t0) * i / 400 end
  local tr = loss.model:simulate{ t0 = t0, tf = tf, times = fine, params = P, x0 = X }
  local pred = loss:predict(fit.x)
  local top, bottom = {}, {}
  for k, n in ipairs(opts.outputs or loss.outputs) do
    local data, res = loss.columns[n], {}
    for i, d in ipairs(data) do res[i] = pred[n][i] - d end
    top[#top + 1] = { name = n .. " (data)", x = loss.times, y = data, points = true, color = k }
    top[#top + 1] = { name = n, x = tr.t, y = tr.y[n], color = k }
    bottom[#bottom + 1] = { name = n .. " residual", x = loss.times, y = res, points = true, color = k }
  end
  local size = opts.size or { 900, 720 }
  local tmp = ("%s.tmp-%d"):format(path, math.random(1, 1 << 30))
  local s = { terminal(path, size), "set output " .. quote(tmp) .. "\n", "set multiplot\n",
    "set grid\nset key outside right\n" }
  for i, e in ipairs(tr:events()) do
    s[#s + 1] = ("set arrow %d from %.17g, graph 0 to %.17g, graph 1 nohead dt 2 lc rgb '#999999'\n"):format(i, e.t, e.t)
  end
  s[#s + 1] = "set origin 0,0.32\nset size 1,0.68\nset lmargin 10\nset rmargin 24\n"
  s[#s + 1] = "set title " .. quote(opts.title or ("fit of model '" .. loss.model.name .. "': loss " ..
    string.format("%.4g", fit.loss))) .. "\n"
  s[#s + 1] = "unset xlabel\n"
  s[#s + 1] = plot_command(top, "T")
  s[#s + 1] = "set origin 0,0\nset size 1,0.32\nunset title\nset xlabel 't'\nset ylabel 'model - data'\n"
  s[#s + 1] = plot_command(bottom, "R")
  s[#s + 1] = "unset multiplot\nset output\n"
  run(table.concat(s), tmp, path)
  return path
end

return M
