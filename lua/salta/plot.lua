-- salta.plot: figures through gnuplot (PNG with pngcairo, SVG). Data go in
-- as inline datablocks with 17 significant digits.
--
--   plot.trajectory(path, tr, { outputs = {"x"}, data = {t = ..., x = ...} })
--   plot.series(path, { {name = "loss", x = {...}, y = {...}} }, { logy = true })
--   plot.fit(path, fit [, opts])   -- model and data, residuals in a panel below, per output
--
-- A series' colour is its `color` (an index into COLORS); an output's data
-- points take its curve's colour, drawn under the curve.
--
-- Names, titles and labels come from models and users: every string enters
-- the script single-quoted (see text), data only as formatted numbers, and
-- no user text reaches a shell.

local options = require("salta.options")

local M = {}

-- Colours by index, distinct on white (gnuplot's default cycle, darker).
local COLORS = { "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2" }
M.COLORS = COLORS

local function color(i) return COLORS[(i - 1) % #COLORS + 1] end

local function fail(caller, fmt, ...) error((caller .. ": " .. fmt):format(...), 0) end

-- size = { w, h }: two positive integers, or the default.
local function dims(caller, size, default)
  size = size or default
  local w, h = math.tointeger(size[1]), math.tointeger(size[2])
  if #size ~= 2 or not (w and h and w > 0 and h > 0) then
    fail(caller, "option 'size' must be { width, height } in pixels (positive integers), got { %s, %s }",
      tostring(size[1]), tostring(size[2]))
  end
  return w, h
end

local function terminal(caller, path, w, h)
  if path:match("%.svg$") then return ("set terminal svg size %d,%d dynamic noenhanced\n"):format(w, h) end
  if path:match("%.png$") then return ("set terminal pngcairo size %d,%d noenhanced\n"):format(w, h) end
  fail(caller, "the file must end in .png or .svg: %s", path)
end

-- A gnuplot string literal. Single quotes: gnuplot substitutes nothing in
-- them (no backslash escapes, backquoted commands or macros) and '' is a
-- quote; a control character (a newline ends the command) becomes a space.
local function text(s)
  return "'" .. tostring(s):gsub("%c", " "):gsub("'", "''") .. "'"
end

-- The temporary file gnuplot writes (renamed over path when it succeeds),
-- as gnuplot is to open it: a relative path starts with "./", as gnuplot
-- reads an output starting with "|" as a command to pipe to and expands "~".
local function temporary(caller, path)
  if type(path) ~= "string" or path == "" then fail(caller, "the file must be a path, got %s", tostring(path)) end
  if path:find("%c") then
    fail(caller, "the file name '%s' holds a control character", (path:gsub("%c", function(c)
      return ("\\%03d"):format(c:byte()) end)))
  end
  local tmp = ("%s.tmp-%d"):format(path, math.random(1, 1 << 30))
  return tmp, "set output " .. text(path:sub(1, 1) == "/" and tmp or "./" .. tmp) .. "\n"
end

local function finite(v) return type(v) == "number" and v == v and v ~= math.huge and v ~= -math.huge end

-- A datablock of the finite points of x and y: numbers only.
local function datablock(name, xs, ys)
  local rows = { "$" .. name .. " << EOD" }
  for i = 1, #xs do
    local x, y = xs[i], ys[i]
    if finite(x) and finite(y) then rows[#rows + 1] = string.format("%.17g %.17g", x, y) end
  end
  rows[#rows + 1] = "EOD"
  return table.concat(rows, "\n") .. "\n"
end

-- Dashed vertical markers at the finite x values.
local function vlines(caller, xs)
  local out = {}
  for i, x in ipairs(xs) do
    if type(x) ~= "number" then fail(caller, "option 'vlines' holds %s at [%d], not a number", tostring(x), i) end
    if finite(x) then
      out[#out + 1] = ("set arrow %d from %.17g, graph 0 to %.17g, graph 1 nohead dt 2 lc rgb '#999999'\n")
        :format(#out + 1, x, x)
    end
  end
  return table.concat(out)
end

-- set yrange from { lo, hi }: two finite numbers, lo < hi.
local function yrange(caller, r)
  if not (finite(r[1]) and finite(r[2]) and r[1] < r[2]) then
    fail(caller, "option 'yrange' must be { lo, hi } with finite lo < hi, got { %s, %s }", tostring(r[1]),
      tostring(r[2]))
  end
  return ("set yrange [%.17g:%.17g]\n"):format(r[1], r[2])
end

-- A word for sh: single-quoted.
local function shell_word(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

-- Runs a gnuplot script that writes `tmp`, then renames it over path:
-- a failed plot leaves an existing file as it was. Errors carry gnuplot's
-- message. The script goes in a file, so that gnuplot stops at its first
-- error (from a pipe it would go on, and with no output file plot to
-- stdout); the shell sees only the names os.tmpname made.
local function run(caller, script, tmp, path)
  M.last_script = script   -- what the last plot asked gnuplot for (tests read it)
  local file, log = os.tmpname(), os.tmpname()
  local f = assert(io.open(file, "w"))
  f:write(script)
  f:close()
  local ok = os.execute(("gnuplot %s > /dev/null 2> %s"):format(shell_word(file), shell_word(log)))
  f = io.open(log)
  local msg = f and f:read("a") or ""
  if f then f:close() end
  os.remove(file)
  os.remove(log)
  if not ok then
    os.remove(tmp)
    if msg == "" then msg = "cannot run gnuplot (install gnuplot-nox)" end
    fail(caller, "gnuplot failed: %s", msg)
  end
  local renamed, err = os.rename(tmp, path)
  if not renamed then
    os.remove(tmp)
    fail(caller, "%s: cannot replace it: %s", path, tostring(err))
  end
end

-- The entries of a series list, checked: known keys, x and y arrays of
-- numbers of one length.
local function check_list(caller, list)
  if type(list) ~= "table" or #list == 0 then
    fail(caller, "expects a non-empty list of series { name =, x =, y = }, got %s", tostring(list))
  end
  for i, ser in ipairs(list) do
    options.check("series", ser, ("%s: series %d"):format(caller, i))
    local name = tostring(ser.name or ("series " .. i))
    if type(ser.x) ~= "table" or type(ser.y) ~= "table" then
      fail(caller, "series '%s' needs arrays x and y, got %s and %s", name, type(ser.x), type(ser.y))
    end
    if #ser.x ~= #ser.y then fail(caller, "series '%s' has %d x values and %d y values", name, #ser.x, #ser.y) end
    for k = 1, #ser.x do
      for _, c in ipairs({ "x", "y" }) do
        local v = ser[c][k]
        if type(v) ~= "number" then fail(caller, "series '%s': %s[%d] is %s, not a number", name, c, k, tostring(v)) end
      end
    end
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
      color(ser.color or i), text(ser.name or ("series " .. i)))
  end
  return table.concat(blocks) .. "plot " .. table.concat(plots, ", ") .. "\n"
end

-- A figure of the series in list (opts checked); errors start with caller.
local function draw(caller, path, list, opts)
  check_list(caller, list)
  local tmp, output = temporary(caller, path)
  local s = { terminal(caller, path, dims(caller, opts.size, { 900, 540 })), output,
    "set grid\nset key outside right\n" }
  if opts.title then s[#s + 1] = "set title " .. text(opts.title) .. "\n" end
  if opts.xlabel then s[#s + 1] = "set xlabel " .. text(opts.xlabel) .. "\n" end
  if opts.ylabel then s[#s + 1] = "set ylabel " .. text(opts.ylabel) .. "\n" end
  if opts.logy then s[#s + 1] = "set logscale y\nset format y '%.0e'\n" end
  if opts.yrange then s[#s + 1] = yrange(caller, opts.yrange) end
  s[#s + 1] = vlines(caller, opts.vlines or {})
  s[#s + 1] = plot_command(list, "D")
  s[#s + 1] = "set output\n"
  run(caller, table.concat(s), tmp, path)
  return path
end

-- series(path, list, opts): lines y(x) (a series with points = true as
-- points; color an index into COLORS); opts (topic plot_series): title,
-- xlabel, ylabel, logy, size {w, h}, vlines = {x...} (dashed markers, e.g.
-- event times).
function M.series(path, list, opts)
  return draw("salta.plot.series", path, list, options.check("plot_series", opts or {}, "salta.plot.series"))
end

-- The outputs drawn (opts.outputs, default all), each one of outputs.
local function drawn(caller, wanted, outputs)
  local known = {}
  for _, n in ipairs(outputs) do known[n] = true end
  for _, n in ipairs(wanted or outputs) do
    if not known[n] then
      fail(caller, "option 'outputs' names '%s', which is not an output (%s)", tostring(n), table.concat(outputs, ", "))
    end
  end
  return wanted or outputs
end

-- The panels of outputs: one per unit where units names them (outputs
-- of one unit share an axis), else one per output, in the outputs' order:
-- { label, outputs = {...} }. units: { output = "unit" } or nil.
local function panels(caller, outputs, units)
  if units ~= nil and type(units) ~= "table" then fail(caller, "option 'units' must be a table { output = unit }") end
  local out, by_unit = {}, {}
  for _, n in ipairs(outputs) do
    local u = units and units[n]
    if u ~= nil and type(u) ~= "string" then fail(caller, "option 'units' gives %s for '%s', not a string", tostring(u), n) end
    if u and by_unit[u] then
      local list = by_unit[u].outputs
      list[#list + 1] = n
    else
      out[#out + 1] = { label = u and ("%s [%s]"):format(n, u) or n, outputs = { n } }
      if u then by_unit[u] = out[#out] end
    end
  end
  for _, p in ipairs(out) do
    if #p.outputs > 1 then p.label = ("%s [%s]"):format(table.concat(p.outputs, ", "), units[p.outputs[1]]) end
  end
  return out
end

-- The gnuplot lines placing panel i of k in the band [y0, y0 + h] of the figure.
local function place(y0, h)
  return ("set origin 0,%.6f\nset size 1,%.6f\n"):format(y0, h)
end

-- trajectory(path, tr, opts): simulated outputs against data, event times
-- marked, one panel per output (or per unit: opts.units). opts (topic
-- plot): outputs (default all), data = {t = times, name = values}, units,
-- title, size.
function M.trajectory(path, tr, opts)
  local caller = "salta.plot.trajectory"
  opts = options.check("plot", opts or {}, caller)
  local outputs = drawn(caller, opts.outputs, tr.outputs)
  local data = opts.data
  if data then
    for k in pairs(data) do
      if k ~= "t" and not tr.y[k] then
        fail(caller, "option 'data' holds '%s', which is not an output (%s)", tostring(k),
          table.concat(tr.outputs, ", "))
      end
    end
    if type(data.t) ~= "table" then fail(caller, "option 'data' needs t, the data's times") end
  end
  local color = {}
  for k, n in ipairs(outputs) do color[n] = k end
  local groups = panels(caller, outputs, opts.units)
  local lists = {}
  for g, panel in ipairs(groups) do
    local list = {}
    for _, n in ipairs(panel.outputs) do
      list[#list + 1] = { name = n, x = tr.t, y = tr.y[n], color = color[n] }
      if data and data[n] then
        list[#list + 1] = { name = n .. " (data)", x = data.t, y = data[n], points = true, color = color[n] }
      end
    end
    check_list(caller, list)
    lists[g] = list
  end
  local ev = {}
  for _, e in ipairs(tr:events()) do ev[#ev + 1] = e.t end
  local title = opts.title or ("model '" .. tr.model .. "'")
  if #groups == 1 then
    return draw(caller, path, lists[1], { title = title, xlabel = "t", ylabel = groups[1].label, vlines = ev,
      size = opts.size })
  end
  local w, h = dims(caller, opts.size, { 900, 180 + 240 * #groups })
  local tmp, output = temporary(caller, path)
  local s = { terminal(caller, path, w, h), output, "set multiplot\n", "set grid\nset key outside right\n",
    "set lmargin 10\nset rmargin 24\n", vlines(caller, ev) }
  local band = 1 / #groups
  for g, panel in ipairs(groups) do
    s[#s + 1] = place(1 - g * band, band)
    s[#s + 1] = g == 1 and ("set title " .. text(title) .. "\n") or "unset title\n"
    s[#s + 1] = g == #groups and "set xlabel 't'\n" or "unset xlabel\n"
    s[#s + 1] = "set ylabel " .. text(panel.label) .. "\n"
    s[#s + 1] = plot_command(lists[g], "P" .. g .. "_")
  end
  s[#s + 1] = "unset multiplot\nset output\n"
  run(caller, table.concat(s), tmp, path)
  return path
end

-- fit(path, fit, opts): a fit of a salta.lsq loss: per output (or per
-- unit: opts.units), a panel of the model at the fitted parameters (a fine
-- grid) over its data in matching colours, event times marked, and below
-- it a panel of the residuals (model - data at the targets). opts (topic
-- plot_fit): outputs, units, title, size.
function M.fit(path, fit, opts)
  local caller = "fit:plot"
  opts = options.check("plot_fit", opts or {}, caller)
  local loss = fit.lsq
  if not (loss and loss.model and loss.predict) then
    fail(caller, "needs the fit of a salta.lsq loss (for several experiments, plot each loss's fit)")
  end
  local outputs = drawn(caller, opts.outputs, loss.outputs)
  local groups = panels(caller, outputs, opts.units)
  local w, h = dims(caller, opts.size, { 900, 360 + 360 * #groups })
  local tmp, output = temporary(caller, path)
  local head = terminal(caller, path, w, h)
  local P, X = loss:full(fit.x)
  local fine = {}
  local t0, tf = loss.t0, loss.times[#loss.times]
  for i = 0, 400 do fine[i + 1] = t0 + (tf - t0) * i / 400 end
  local tr = loss.model:simulate{ t0 = t0, tf = tf, times = fine, params = P, x0 = X }
  local pred = loss:predict(fit.x)
  local color = {}
  for k, n in ipairs(outputs) do color[n] = k end
  local ev = {}
  for _, e in ipairs(tr:events()) do ev[#ev + 1] = e.t end
  local s = { head, output, "set multiplot\n", "set grid\nset key outside right\n", vlines(caller, ev),
    "set lmargin 13\nset rmargin 24\n" }
  local band = 1 / #groups
  for g, panel in ipairs(groups) do
    local top, bottom = {}, {}
    for _, n in ipairs(panel.outputs) do
      local data, res = loss.columns[n], {}
      for i, d in ipairs(data) do res[i] = pred[n][i] - d end
      top[#top + 1] = { name = n .. " (data)", x = loss.times, y = data, points = true, color = color[n] }
      top[#top + 1] = { name = n, x = tr.t, y = tr.y[n], color = color[n] }
      bottom[#bottom + 1] = { name = n .. " residual", x = loss.times, y = res, points = true, color = color[n] }
    end
    check_list(caller, top)
    check_list(caller, bottom)
    local y0 = 1 - g * band
    s[#s + 1] = place(y0 + 0.32 * band, 0.68 * band)
    s[#s + 1] = g == 1 and ("set title " .. text(opts.title or ("fit of model '" .. loss.model.name .. "': loss " ..
      string.format("%.4g", fit.loss))) .. "\n") or "unset title\n"
    s[#s + 1] = "unset xlabel\nset ylabel " .. text(panel.label) .. "\n"
    s[#s + 1] = plot_command(top, "T" .. g .. "_")
    s[#s + 1] = place(y0, 0.32 * band) .. "unset title\n"
    s[#s + 1] = (g == #groups and "set xlabel 't'\n" or "unset xlabel\n") .. "set ylabel 'model - data'\n"
    s[#s + 1] = plot_command(bottom, "R" .. g .. "_")
  end
  s[#s + 1] = "unset multiplot\nset output\n"
  run(caller, table.concat(s), tmp, path)
  return path
end

return M
