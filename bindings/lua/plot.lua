-- lmkit.plot: figures through gnuplot (PNG or SVG, chosen by the output's extension). Each plot
-- writes its data (<out>.dat, without the extension) and script (<out>.gp) next to the output, so
-- a figure can be restyled by editing the script and running `gnuplot` on it from that folder.
-- See docs/reports-and-plots.md.
return function(lmkit)
  local plot = {}

  local COMMON = {out = true, title = true, xlabel = true, ylabel = true, width = true, height = true,
                  logx = true, logy = true, xrange = true, yrange = true, key = true, grid = true,
                  gnuplot = true, vlines = true, hlines = true, font = true, set = true}

  local function merge(...)
    local t = {}
    for _, s in ipairs({...}) do for k, v in pairs(s) do t[k] = v end end
    return t
  end

  -- An unknown key is blamed on the caller of the plot function that checks it.
  local function check_options(spec, allowed, fname)
    lmkit.check_options(spec, allowed, fname, 3)
  end

  -- A Lua array of numbers from an array or a 1-D tensor.
  local function numbers(v, what, fname)
    if lmkit.is_tensor(v) then
      if v:dim() ~= 1 then error(("%s: %s must be 1-D, got a tensor of size %s"):format(fname, what, table.concat(v:size(), "x")), 4) end
      v = v:double():totable()
    end
    if type(v) ~= "table" then error(("%s: %s must be an array of numbers or a 1-D tensor, got %s"):format(fname, what, type(v)), 4) end
    local out = {}
    for i = 1, #v do
      local x = v[i]
      if lmkit.is_tensor(x) then x = x:item() end
      if type(x) ~= "number" then error(("%s: %s: entry %d is not a number"):format(fname, what, i), 4) end
      out[i] = x
    end
    return out
  end

  -- Style options reach gnuplot's script: each is checked against what gnuplot takes there (words
  -- from a fixed set, numbers, dash patterns), never pasted raw: a newline and `system '...'` in a
  -- key or a style would otherwise run a shell command.
  local KEY_WORDS = {left = true, right = true, center = true, top = true, bottom = true, inside = true,
                     outside = true, below = true, above = true, horizontal = true, vertical = true, box = true,
                     nobox = true, opaque = true, noopaque = true, reverse = true, noreverse = true,
                     invert = true, noinvert = true, Left = true, Right = true}
  local STYLES = {lines = true, points = true, linespoints = true, steps = true, fsteps = true, histeps = true,
                  impulses = true, dots = true}
  local function style_error(what, value, allowed)
    error(("lmkit.plot: %s must be %s, got %q"):format(what, allowed, tostring(value)), 0)
  end
  local function checked_key(value)
    if type(value) ~= "string" then style_error("option 'key'", value, "false or a string of gnuplot key words") end
    local words = 0
    for word in value:gmatch("%S+") do
      if not KEY_WORDS[word] then
        local known = {}
        for k in pairs(KEY_WORDS) do known[#known + 1] = k end
        table.sort(known)
        style_error("option 'key'", value, "false or gnuplot key words (" .. table.concat(known, ", ") .. ")")
      end
      words = words + 1
    end
    if words == 0 or value:find("[^%w ]") then style_error("option 'key'", value, "gnuplot key words separated by spaces") end
    return value
  end
  local function checked_style(value)
    if not STYLES[value] then
      style_error("option 'with'", value, "one of lines, points, linespoints, steps, fsteps, histeps, impulses, dots")
    end
    return value
  end
  local function checked_dashtype(value)
    if math.type(value) == "integer" and value >= 0 and value <= 100 then return tostring(value) end
    if type(value) == "string" and #value > 0 and #value <= 20 and not value:find("[^%.%-_ ]") then return "'" .. value .. "'" end
    style_error("option 'dashtype'", value, "an integer 0..100 or a dash pattern of '.', '-', '_' and spaces")
  end
  local function checked_positive(value, what, default)
    if value == nil then return tostring(default) end
    if type(value) ~= "number" or value ~= value or value <= 0 or value > 1000 or value == math.huge then
      style_error("option '" .. what .. "'", value, "a number in (0, 1000]")
    end
    return tostring(value)
  end
  local function checked_pointtype(value)
    if value == nil then return "7" end
    if math.type(value) ~= "integer" or value < 0 or value > 100 then style_error("option 'pointtype'", value, "an integer 0..100") end
    return tostring(value)
  end

  local function range(n)
    local t = {}
    for i = 1, n do t[i] = i end
    return t
  end

  local function num(x)
    if x ~= x then return "NaN" end
    if x == math.huge then return "Inf" elseif x == -math.huge then return "-Inf" end
    if math.type(x) == "integer" then return ("%d"):format(x) end
    return ("%.17g"):format(x)
  end

  -- A gnuplot single-quoted string (no escapes; '' is a quote). A line break would end the string
  -- and the script line, making the rest of a label (a run's folder name, a title) a gnuplot
  -- command such as system("..."): every control character becomes a space.
  local function gq(s)
    local text = tostring(s):gsub("%c", " ")
    return "'" .. text:gsub("'", "''") .. "'"
  end

  local function sq(s)  -- a shell single-quoted word
    return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
  end

  local function dq_label(s)  -- a label in a data file: double-quoted, no double quotes inside
    return '"' .. tostring(s):gsub('"', "'"):gsub("%c", " ") .. '"'
  end

  local function split_path(path)
    local dir, name = path:match("^(.*)/([^/]*)$")
    if not dir then return ".", path end
    return dir == "" and "/" or dir, name
  end

  local function file_size(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local size = f:seek("end")
    f:close()
    return size
  end

  local function write_file(path, text, fname)
    local ok, err = pcall(lmkit.write_file, path, text)
    if not ok then error(("%s: %s"):format(fname, tostring(err)), 4) end
  end

  -- Where a figure goes: its output, data (.dat) and script (.gp) paths, folder and format. Errors
  -- are reported `level` frames up (the plot function's caller).
  local function figure_paths(out, fname, level)
    if type(out) ~= "string" then error(fname .. ": out = \"figure.png\" (or .svg) expected", level) end
    if out:find("%c") then
      error(("%s: out %q holds a control character (a line break?): give a plain file name"):format(fname, out), level)
    end
    local base, ext = out:match("^(.*)%.([%w]+)$")
    ext = ext and ext:lower()
    if ext ~= "png" and ext ~= "svg" then
      error(("%s: cannot tell the format of '%s' (use .png or .svg)"):format(fname, out), level)
    end
    local dir, out_name = split_path(out)
    local f = {out = out, out_name = out_name, dir = dir, ext = ext, data = base .. ".dat", script = base .. ".gp"}
    f.data_name = select(2, split_path(f.data))
    f.script_name = select(2, split_path(f.script))
    return f
  end

  -- The data file: one block per series, separated by two blank lines (gnuplot's `index`).
  local function data_text(series)
    local blocks = {}
    for i, s in ipairs(series) do
      local lines = {("# %d: %s"):format(i - 1, (tostring(s.title or s.kind):gsub("%c", " ")))}
      if s.kind == "bars" then
        lines[#lines + 1] = "# category " .. table.concat(s.names, " ")
        for r, category in ipairs(s.categories) do
          local row = {dq_label(category)}
          for c = 1, #s.columns do row[#row + 1] = num(s.columns[c][r]) end
          lines[#lines + 1] = table.concat(row, " ")
        end
      else
        for r = 1, #s.x do
          local line = num(s.x[r]) .. " " .. num(s.y[r])
          if s.labels then line = line .. " " .. dq_label(s.labels[r] or "") end
          lines[#lines + 1] = line
        end
      end
      blocks[i] = table.concat(lines, "\n") .. "\n"
    end
    return table.concat(blocks, "\n\n")
  end

  -- The terminal: pngcairo where gnuplot has it (antialiased, fonts), else png; or svg.
  local function terminal_lines(spec, f, w)
    local width, height = spec.width or 800, spec.height or 500
    local font = spec.font or "sans,11"
    if f.ext == "png" then
      w("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {")
      w(("  set terminal pngcairo size %d,%d noenhanced font %s background rgb 'white'"):format(width, height, gq(font)))
      w("} else {")
      w(("  set terminal png size %d,%d noenhanced background rgb 'white'"):format(width, height))
      w("}")
    else
      w(("set terminal svg size %d,%d noenhanced font %s background rgb 'white'"):format(width, height, gq(font)))
    end
    w("set output " .. gq(f.out_name))
  end

  -- Titles, labels, key, grid, scales, ranges and the marker lines of the spec.
  local function axes_lines(spec, w)
    if spec.title then w("set title " .. gq(spec.title)) end
    if spec.xlabel then w("set xlabel " .. gq(spec.xlabel)) end
    if spec.ylabel then w("set ylabel " .. gq(spec.ylabel)) end
    if spec.grid ~= false then w("set grid lc rgb '#dddddd'") end
    if spec.key == false then w("unset key")
    else w("set key " .. ((spec.key == nil or spec.key == true) and "top right" or checked_key(spec.key)) .. " noopaque") end
    if spec.logx then w("set logscale x") end
    if spec.logy then w("set logscale y") end
    local function range_of(r)
      local a, b = r[1], r[2]
      return "[" .. (a and num(a) or "*") .. ":" .. (b and num(b) or "*") .. "]"
    end
    if spec.xrange then w("set xrange " .. range_of(spec.xrange)) end
    if spec.yrange then w("set yrange " .. range_of(spec.yrange)) end
    for _, v in ipairs(spec.vlines or {}) do
      w(("set arrow from %s, graph 0 to %s, graph 1 nohead dashtype 2 linewidth 1.5 linecolor rgb '#555555'"):format(num(v.x), num(v.x)))
      if v.label then w(("set label %s at %s, graph 0.97 offset character 0.5, 0 left textcolor rgb '#555555'"):format(gq(v.label), num(v.x))) end
    end
    for _, h in ipairs(spec.hlines or {}) do
      w(("set arrow from graph 0, first %s to graph 1, first %s nohead dashtype 3 linecolor rgb '#555555'"):format(num(h.y), num(h.y)))
      if h.label then w(("set label %s at graph 0.01, first %s offset 0, character 0.6 left textcolor rgb '#555555'"):format(gq(h.label), num(h.y))) end
    end
  end

  -- The `plot` command: one term per series (per column for bars), reading the data file's blocks.
  local function plot_command(series, data_name)
    local terms = {}
    for i, s in ipairs(series) do
      local source = gq(data_name) .. " index " .. (i - 1)
      local title = s.title and ("title " .. gq(s.title)) or "notitle"
      if s.kind == "bars" then
        for c = 1, #s.columns do
          terms[#terms + 1] = ("%s using %d%s %s"):format(c == 1 and source or "''", c + 1,
            c == 1 and ":xtic(1)" or "", "title " .. gq(s.names[c]))
        end
      elseif s.kind == "labels" then
        terms[#terms + 1] = source .. " using 1:2:3 with labels offset character 0.7, 0.5 left font ',9' notitle"
      else
        local style = checked_style(s.with or "lines")
        local extras = ""
        if style == "points" or style == "linespoints" then
          extras = " pointtype " .. checked_pointtype(s.pointtype) .. " pointsize " .. checked_positive(s.pointsize, "pointsize", 1)
        end
        if style == "lines" or style == "linespoints" then extras = extras .. " linewidth " .. checked_positive(s.linewidth, "linewidth", 2) end
        if s.dashtype then extras = extras .. " dashtype " .. checked_dashtype(s.dashtype) end
        if s.color then extras = extras .. " linecolor rgb " .. gq(s.color) end
        terms[#terms + 1] = ("%s using 1:2 with %s%s %s"):format(source, style, extras, title)
      end
    end
    return "plot " .. table.concat(terms, ", \\\n     ")
  end

  -- The whole gnuplot script of a figure.
  local function script_text(spec, series, f, fname, extra_lines)
    local g = {
      "# Written by " .. fname .. "; run `gnuplot " .. f.script_name .. "` in this folder to redraw " .. f.out_name .. ".",
      "set encoding utf8",
    }
    local function w(line) g[#g + 1] = line end
    terminal_lines(spec, f, w)
    axes_lines(spec, w)
    local points, has_labels = false, false
    for _, s in ipairs(series) do
      if s.kind == "labels" or s.with == "points" then points = true end
      if s.kind == "labels" then has_labels = true end
    end
    -- Room around scattered points, so that none sits on the frame and labels fit.
    if points then w("set offsets graph 0.04, graph " .. (has_labels and 0.1 or 0.04) .. ", graph 0.06, graph 0.04") end
    for _, line in ipairs(extra_lines or {}) do w(line) end
    for _, line in ipairs(spec.set or {}) do w(line) end
    w(plot_command(series, f.data_name))
    return table.concat(g, "\n") .. "\n"
  end

  -- Runs gnuplot in the output's folder; a stale output must not pass for a new one. Errors are
  -- reported `level` frames up.
  local function run_gnuplot(spec, f, fname, level)
    local gnuplot = spec.gnuplot or os.getenv("LMKIT_GNUPLOT") or "gnuplot"
    os.remove(f.out)
    local command = ("cd %s && %s %s 2>&1"):format(sq(f.dir), sq(gnuplot), sq(f.script_name))
    local pipe = io.popen(command, "r")
    local output = pipe and pipe:read("a") or ""
    local ok, _, code = true, nil, 0
    if pipe then ok, _, code = pipe:close() end
    if not ok and (code == 127 or code == 126) then
      error(("%s: gnuplot not found ('%s'); wrote the data %s and the script %s: install gnuplot-nox " ..
             "(scripts/setup.sh does) or run gnuplot on %s (from its folder: cd %s && gnuplot %s)")
            :format(fname, gnuplot, f.data, f.script, f.script, f.dir, f.script_name), level)
    end
    if not ok then
      error(("%s: gnuplot failed (exit status %s) on %s (data %s):\n%s"):format(fname, tostring(code), f.script,
            f.data, output), level)
    end
    local size = file_size(f.out)
    if not size or size == 0 then
      error(("%s: gnuplot wrote no %s (script %s, data %s)%s"):format(fname, f.out, f.script, f.data,
            output ~= "" and (":\n" .. output) or ""), level)
    end
  end

  -- Draws series with gnuplot. series: {kind="xy"|"labels"|"bars", ...}; returns the result table.
  -- Errors name the plot function's caller (3 frames up from draw).
  local function draw(spec, series, fname, extra_lines)
    local f = figure_paths(spec.out, fname, 4)
    write_file(f.data, data_text(series), fname)
    write_file(f.script, script_text(spec, series, f, fname, extra_lines), fname)
    run_gnuplot(spec, f, fname, 4)
    return {out = f.out, script = f.script, data = f.data}
  end

  -- Series of a line/scatter spec: {x=, y=, label=} or series = {{x=, y=, label=, with=}, ...}.
  local SERIES_OPTIONS = {x = true, y = true, label = true, labels = true, with = true, color = true,
                          dashtype = true, linewidth = true, pointtype = true, pointsize = true}
  local function xy_series(spec, default_with, fname)
    local list = spec.series
    if list == nil then
      list = {{x = spec.x, y = spec.y, label = spec.label, labels = spec.labels, with = spec.with}}
    elseif spec.y ~= nil then
      error(fname .. ": give either y= or series=, not both", 3)
    end
    local series = {}
    for i, s in ipairs(list) do
      check_options(s, SERIES_OPTIONS, fname .. ": series " .. i)
      if s.y == nil then error(("%s: series %d needs y"):format(fname, i), 3) end
      local y = numbers(s.y, "y", fname)
      local x = s.x and numbers(s.x, "x", fname) or range(#y)
      if #x ~= #y then error(("%s: series %d: x has %d values but y has %d"):format(fname, i, #x, #y), 3) end
      series[#series + 1] = {kind = "xy", x = x, y = y, title = s.label, with = s.with or default_with,
                             color = s.color, dashtype = s.dashtype, linewidth = s.linewidth,
                             pointtype = s.pointtype, pointsize = s.pointsize}
      if s.labels then
        if #s.labels ~= #y then error(("%s: series %d: %d labels for %d points"):format(fname, i, #s.labels, #y), 3) end
        series[#series + 1] = {kind = "labels", x = x, y = y, labels = s.labels}
      end
    end
    if #series == 0 then error(fname .. ": nothing to plot", 3) end
    return series
  end

  local function common_only(spec)
    local t = {}
    for k, v in pairs(spec) do if COMMON[k] then t[k] = v end end
    return t
  end

  local XY_OPTIONS = merge(COMMON, {x = true, y = true, label = true, labels = true, with = true, series = true})

  function plot.line(spec)
    check_options(spec, XY_OPTIONS, "lmkit.plot.line")
    return draw(spec, xy_series(spec, "lines", "lmkit.plot.line"), "lmkit.plot.line")
  end

  function plot.scatter(spec)
    check_options(spec, XY_OPTIONS, "lmkit.plot.scatter")
    return draw(spec, xy_series(spec, "points", "lmkit.plot.scatter"), "lmkit.plot.scatter")
  end

  -- Least squares y = a + b·x in double precision, and Pearson's r (lmkit.stats.pearsonr).
  local function fit_line(x, y)
    local n = #x
    local mx, my = 0, 0
    for i = 1, n do mx, my = mx + x[i], my + y[i] end
    mx, my = mx / n, my / n
    local sxx, sxy = 0, 0
    for i = 1, n do
      local dx = x[i] - mx
      sxx, sxy = sxx + dx * dx, sxy + dx * (y[i] - my)
    end
    local slope = sxy / sxx
    return slope, my - slope * mx, (lmkit.stats.pearsonr(x, y))
  end
  plot.fit_line = fit_line

  -- Where each point's label goes so that no two labels overlap, none covers a point and none
  -- leaves the plot area: for each point, left to right, the first free one of eight places around
  -- it (right, left, above, below, then the diagonals), on rings ever further out (then with a
  -- leader line), else the one that overlaps least. It works
  -- in pixels of a figure whose plot area sits at fixed screen fractions (area), a label's size
  -- estimated from its length in the 9-point sans font the labels are drawn in.
  local CHAR_W, CHAR_H, POINT_R, GAP = 6.5, 13, 5, 3
  local function place_labels(o)
    local fname = "lmkit.plot.place_labels"
    check_options(o, {x = true, y = true, labels = true, xrange = true, yrange = true, width = true, height = true,
                      area = true, logx = true, logy = true, lines = true}, fname)
    local x, y = numbers(o.x, "x", fname), numbers(o.y, "y", fname)
    local labels = o.labels
    if type(labels) ~= "table" or #labels ~= #x or #y ~= #x then
      error(("%s: x, y and labels must have one entry per point (%d, %d, %s)"):format(fname, #x, #y,
            type(labels) == "table" and tostring(#labels) or type(labels)), 3)
    end
    local W, H = o.width or 800, o.height or 500
    local a = o.area or {left = 0.1, right = 0.95, bottom = 0.1, top = 0.9}
    local function axis(range, log, what)
      if type(range) ~= "table" or type(range[1]) ~= "number" or type(range[2]) ~= "number" or not (range[1] < range[2])
         or (log and range[1] <= 0) then
        error(("%s: %s must be {lo, hi} with lo < hi%s"):format(fname, what, log and " and lo > 0 (log scale)" or ""), 4)
      end
      -- to and from [0, 1] along the axis (log10 on a log axis)
      local f = log and math.log or function(v) return v end
      local lo, hi = f(range[1], 10), f(range[2], 10)
      return function(v) return (f(v, 10) - lo) / (hi - lo) end,
             function(t) local v = lo + t * (hi - lo); return log and 10 ^ v or v end
    end
    local xt, xv = axis(o.xrange, o.logx, "xrange")
    local yt, yv = axis(o.yrange, o.logy, "yrange")
    local left, right, bottom, top = a.left * W, a.right * W, a.bottom * H, a.top * H  -- y grows upwards
    local function to_px(px, py)
      return left + xt(px) * (right - left), bottom + yt(py) * (top - bottom)
    end
    local function to_data(px, py)
      return xv((px - left) / (right - left)), yv((py - bottom) / (top - bottom))
    end
    local function overlap(b, c)
      local w = math.min(b[3], c[3]) - math.max(b[1], c[1])
      local h = math.min(b[4], c[4]) - math.max(b[2], c[2])
      return (w > 0 and h > 0) and w * h or 0
    end
    local function outside(b)
      local area = (b[3] - b[1]) * (b[4] - b[2])
      return area - overlap(b, {left, bottom, right, top})
    end
    local obstacles, order = {}, {}
    for i = 1, #x do
      local cx, cy = to_px(x[i], y[i])
      obstacles[i] = {cx - POINT_R, cy - POINT_R, cx + POINT_R, cy + POINT_R}
      order[i] = i
    end
    -- Lines drawn in the plot ({x1, y1, x2, y2} in data coordinates, the fit's) are obstacles too:
    -- small boxes every few pixels along them.
    for _, l in ipairs(o.lines or {}) do
      local ax, ay = to_px(l[1], l[2])
      local bx, by = to_px(l[3], l[4])
      local steps = math.max(1, math.ceil(math.sqrt((bx - ax) ^ 2 + (by - ay) ^ 2) / 4))
      for k = 0, steps do
        local px, py = ax + (bx - ax) * k / steps, ay + (by - ay) * k / steps
        obstacles[#obstacles + 1] = {px - 1.5, py - 1.5, px + 1.5, py + 1.5}
      end
    end
    table.sort(order, function(i, j) if x[i] ~= x[j] then return x[i] < x[j] end return i < j end)
    local placed = {}
    for _, i in ipairs(order) do
      local text = tostring(labels[i]):gsub("[%c]", " ")
      local w, h = (utf8.len(text) or #text) * CHAR_W, CHAR_H
      local cx, cy = to_px(x[i], y[i])
      -- {box, anchor x, anchor y (the text's vertical middle), alignment} at distance d from the point
      local function around(d)
        local e = d * 0.7  -- the diagonals' offset per axis
        return {
          {{cx + d, cy - h / 2, cx + d + w, cy + h / 2}, cx + d, cy, "left"},
          {{cx - d - w, cy - h / 2, cx - d, cy + h / 2}, cx - d, cy, "right"},
          {{cx - w / 2, cy + d, cx + w / 2, cy + d + h}, cx, cy + d + h / 2, "center"},
          {{cx - w / 2, cy - d - h, cx + w / 2, cy - d}, cx, cy - d - h / 2, "center"},
          {{cx + e, cy + e, cx + e + w, cy + e + h}, cx + e, cy + e + h / 2, "left"},
          {{cx + e, cy - e - h, cx + e + w, cy - e}, cx + e, cy - e - h / 2, "left"},
          {{cx - e - w, cy + e, cx - e, cy + e + h}, cx - e, cy + e + h / 2, "right"},
          {{cx - e - w, cy - e - h, cx - e, cy - e}, cx - e, cy - e - h / 2, "right"},
        }
      end
      -- Rings ever further out; a label away from its point gets a leader line (lead = true).
      local best, best_cost
      for ring = 0, 6 do
        for _, c in ipairs(around(POINT_R + GAP + ring * CHAR_H)) do
          local cost = 10 * outside(c[1])
          for _, b in ipairs(obstacles) do cost = cost + overlap(c[1], b) end
          c.lead = ring > 0
          if not best or cost < best_cost then best, best_cost = c, cost end
          if cost == 0 then break end
        end
        if best_cost == 0 then break end
      end
      obstacles[#obstacles + 1] = best[1]
      local ax, ay = to_data(best[2], best[3])
      placed[i] = {text = text, x = ax, y = ay, align = best[4], box = best[1], overlap = best_cost, lead = best.lead}
    end
    return placed
  end
  plot.place_labels = place_labels

  -- The plot area of rank_ppl at fixed screen fractions (place_labels needs it): room for the
  -- title above, the y axis's tics and label on the left, and below the x axis's and the legend
  -- (one line per entry).
  local function rank_ppl_area(height, entries)
    return {left = 0.12, right = 0.97, top = 0.9, bottom = math.min(0.5, (62 + 17 * entries) / height)}
  end

  -- Whether one group of points drives a correlation: r over all points against r with each group
  -- left out (where ≥ 3 points of two groups or more remain, neither side constant). The group whose
  -- removal moves r most is named when it flips r's sign (|r| ≥ 0.3) or moves it by 0.5 or more: the
  -- line then describes the gap between that group and the rest, not a trend among the models.
  local function driving_group(x, y, groups, r)
    if r ~= r then return nil end  -- no correlation (NaN): nothing to drive
    local order, seen = {}, {}
    for _, g in ipairs(groups) do
      g = tostring(g)
      if not seen[g] then seen[g] = true; order[#order + 1] = g end
    end
    if #order < 3 then return nil end  -- two groups: leaving one out leaves one group's spread
    local function varies(values)
      for i = 2, #values do if values[i] ~= values[1] then return true end end
      return false
    end
    local worst, worst_r, worst_shift
    for _, g in ipairs(order) do
      local rx, ry = {}, {}
      for i = 1, #x do
        if tostring(groups[i]) ~= g then rx[#rx + 1], ry[#ry + 1] = x[i], y[i] end
      end
      if #rx >= 3 and varies(rx) and varies(ry) then
        local without = lmkit.stats.pearsonr(rx, ry)
        local shift = math.abs(r - without)
        if not worst_shift or shift > worst_shift then worst, worst_r, worst_shift = g, without, shift end
      end
    end
    if not worst then return nil end
    local flips = math.abs(r) >= 0.3 and r * worst_r < 0
    if not flips and worst_shift < 0.5 then return nil end
    return ("r = %.2f over all points is driven by the %s points: without them r = %.2f"):format(r, worst, worst_r), worst, worst_r
  end
  plot.driving_group = driving_group

  function plot.rank_ppl(spec)
    local fname = "lmkit.plot.rank_ppl"
    check_options(spec, merge(COMMON, {rank = true, ppl = true, labels = true, label = true, groups = true}), fname)
    local x = numbers(spec.rank, "rank", fname)
    local y = numbers(spec.ppl, "ppl", fname)
    if #x ~= #y then error(("%s: rank has %d values but ppl has %d"):format(fname, #x, #y), 2) end
    if #x < 3 then error(fname .. ": at least 3 points are needed for a fit and its r", 2) end
    if spec.labels ~= nil and (type(spec.labels) ~= "table" or #spec.labels ~= #x) then
      error(("%s: labels must be one string per point (%d)"):format(fname, #x), 2)
    end
    if spec.groups ~= nil and (type(spec.groups) ~= "table" or #spec.groups ~= #x) then
      error(("%s: groups must be one name per point (%d), e.g. the head of each model"):format(fname, #x), 2)
    end
    local slope, intercept, r = fit_line(x, y)
    local _, p = lmkit.stats.pearsonr(x, y)
    local lo, hi = math.huge, -math.huge
    for i = 1, #x do lo, hi = math.min(lo, x[i]), math.max(hi, x[i]) end
    local series = {}
    if spec.groups then
      -- A colour and a point shape per group (gnuplot's line types in order), one legend entry each.
      local order, members = {}, {}
      for i, g in ipairs(spec.groups) do
        g = tostring(g)
        if not members[g] then members[g] = {}; order[#order + 1] = g end
        members[g][#members[g] + 1] = i
      end
      local shapes = {7, 5, 9, 11, 13, 15, 4, 6, 8, 10}
      for k, g in ipairs(order) do
        local gx, gy = {}, {}
        for _, i in ipairs(members[g]) do gx[#gx + 1], gy[#gy + 1] = x[i], y[i] end
        series[#series + 1] = {kind = "xy", x = gx, y = gy, with = "points", title = g, pointsize = 1.2,
                               pointtype = shapes[(k - 1) % #shapes + 1]}
      end
    else
      series[1] = {kind = "xy", x = x, y = y, with = "points", title = spec.label or "models", labels = spec.labels}
    end
    series[#series + 1] = {kind = "xy", x = {lo, hi}, y = {intercept + slope * lo, intercept + slope * hi}, with = "lines",
                           color = "#555555",
                           title = ("least squares: y = %.4g %s %.4g·x (r = %.3f, p = %.2g)"):format(
                             intercept, slope < 0 and "−" or "+", math.abs(slope), r, p)}
    local s = common_only(spec)
    -- The data's own span with a margin: gnuplot's autoscale rounds out to whole tics, which on a
    -- few ranks 400 apart (or a tiny model's 20-30) squeezes the points against the border or
    -- into a corner.
    local function padded(values, extra)
      local vlo, vhi = math.huge, -math.huge
      for _, v in ipairs(values) do vlo, vhi = math.min(vlo, v), math.max(vhi, v) end
      for _, v in ipairs(extra or {}) do vlo, vhi = math.min(vlo, v), math.max(vhi, v) end
      local margin = vhi > vlo and 0.08 * (vhi - vlo) or math.max(1, 0.05 * math.abs(vlo))
      return {vlo - margin, vhi + margin}
    end
    -- A range given with one end open keeps the data's span at the other (place_labels needs both).
    local function range_or(given, span)
      return given and {given[1] or span[1], given[2] or span[2]} or span
    end
    s.xrange = range_or(spec.xrange, padded(x))
    s.yrange = range_or(spec.yrange, padded(y, {intercept + slope * lo, intercept + slope * hi}))
    s.title = (spec.title or "Rank vs perplexity") .. (" (Pearson r = %.3f)"):format(r)
    s.xlabel = spec.xlabel or "rank"
    s.ylabel = spec.ylabel or "test perplexity"
    if s.key == nil then s.key = "below" end
    local a = rank_ppl_area(s.height or 500, s.key == false and 0 or #series)
    local extra = {("set lmargin at screen %g; set rmargin at screen %g; set bmargin at screen %g; set tmargin at screen %g")
                   :format(a.left, a.right, a.bottom, a.top)}
    if spec.labels then
      -- Each label where place_labels found room (gnuplot's own `with labels` puts every one to the
      -- right of its point, over its neighbours and past the border).
      local placed = place_labels{x = x, y = y, labels = spec.labels, xrange = s.xrange, yrange = s.yrange,
                                  width = s.width, height = s.height, area = a, logx = s.logx, logy = s.logy,
                                  lines = {{lo, intercept + slope * lo, hi, intercept + slope * hi}}}
      for i, l in ipairs(placed) do
        extra[#extra + 1] = ("set label %d %s at first %s, first %s %s font ',9' textcolor rgb '#333333' front")
          :format(i, gq(l.text), num(l.x), num(l.y), l.align)
        if l.lead then
          extra[#extra + 1] = ("set arrow from first %s, first %s to first %s, first %s nohead linecolor rgb '#aaaaaa' back")
            :format(num(x[i]), num(y[i]), num(l.x), num(l.y))
        end
      end
    end
    local caution = spec.groups and driving_group(x, y, spec.groups, r) or nil
    if caution then extra[#extra + 1] = ("set label %s at graph 0.02, graph 0.96 font ',9' textcolor rgb '#aa3300' front"):format(gq(caution)) end
    local result = draw(s, series, fname, extra)
    result.slope, result.intercept, result.r, result.p, result.caution = slope, intercept, r, p, caution
    return result
  end

  -- {values=} or series = {{values=, label=}, ...} → list of {values=, label=}.
  local function value_series(spec, fname)
    local list = spec.series or {{values = spec.values, label = spec.label}}
    if spec.series and spec.values then error(fname .. ": give either values= or series=, not both", 3) end
    local out = {}
    for i, s in ipairs(list) do
      check_options(s, {values = true, label = true, color = true, dashtype = true}, fname .. ": series " .. i)
      if s.values == nil then error(("%s: series %d needs values"):format(fname, i), 3) end
      out[i] = {values = numbers(s.values, "values", fname), label = s.label, color = s.color, dashtype = s.dashtype}
    end
    if #out == 0 then error(fname .. ": nothing to plot", 3) end
    return out
  end

  local SPECTRUM_OPTIONS = merge(COMMON, {values = true, series = true, label = true, normalize = true, log = true})

  local function spectrum(spec, fname, default_title)
    local normalize = spec.normalize ~= false
    local series = {}
    for _, s in ipairs(value_series(spec, fname)) do
      local y, first = {}, s.values[1]
      for i, v in ipairs(s.values) do y[i] = normalize and v / first or v end
      series[#series + 1] = {kind = "xy", x = range(#y), y = y, with = "lines", title = s.label,
                             color = s.color, dashtype = s.dashtype}
    end
    local c = common_only(spec)
    c.title = spec.title or default_title
    c.xlabel = spec.xlabel or "i"
    c.ylabel = spec.ylabel or (normalize and "σᵢ / σ₁" or "σᵢ")
    if spec.log ~= false and spec.logy == nil then c.logy = true end
    if c.key == nil and #series == 1 and not series[1].title then c.key = false end
    if c.key == nil then c.key = "bottom left" end
    return draw(c, series, fname)
  end

  function plot.spectrum(spec)
    check_options(spec, SPECTRUM_OPTIONS, "lmkit.plot.spectrum")
    return spectrum(spec, "lmkit.plot.spectrum", "Singular values")
  end

  function plot.cumulative(spec)
    local fname = "lmkit.plot.cumulative"
    check_options(spec, merge(COMMON, {values = true, series = true, label = true, squared = true, kind = true}), fname)
    local kind = spec.kind or "share"
    if kind ~= "share" and kind ~= "cdf" then
      error(("%s: kind must be \"share\" (Σ_{i≤k} σᵢ / Σ σᵢ against k) or \"cdf\" (the MoS paper's Fig. 1), got %s")
        :format(fname, tostring(kind)), 2)
    end
    if kind == "cdf" then
      if spec.squared then error(fname .. ": squared applies to kind = \"share\" only", 2) end
      -- The percentage of singular values whose σ/σ₁ is at most x: a step function over [0, 1].
      local series = {}
      for _, s in ipairs(value_series(spec, fname)) do
        local values, fractions = lmkit.analysis.normalized_cdf(lmkit.tensor(s.values, {dtype = "float64"}))
        local x, y = {0}, {0}
        for i, v in ipairs(values:totable()) do x[#x + 1], y[#y + 1] = v, 100 * fractions[i]:item() end
        series[#series + 1] = {kind = "xy", x = x, y = y, with = "steps", title = s.label, color = s.color,
                               dashtype = s.dashtype}
      end
      local c = common_only(spec)
      c.title = spec.title or "Cumulative percentage of normalized singular values"
      c.xlabel = spec.xlabel or "normalized singular value σ/σ₁"
      c.ylabel = spec.ylabel or "% of singular values ≤ x"
      c.xrange = spec.xrange or {0, 1.02}
      c.yrange = spec.yrange or {0, 102}
      if c.key == nil and #series == 1 and not series[1].title then c.key = false end
      if c.key == nil then c.key = "bottom right" end
      return draw(c, series, fname)
    end
    local series = {}
    for _, s in ipairs(value_series(spec, fname)) do
      local total, y = 0, {}
      for _, v in ipairs(s.values) do total = total + (spec.squared and v * v or v) end
      local running = 0
      for i, v in ipairs(s.values) do
        running = running + (spec.squared and v * v or v)
        y[i] = running / total
      end
      series[#series + 1] = {kind = "xy", x = range(#y), y = y, with = "lines", title = s.label,
                             color = s.color, dashtype = s.dashtype}
    end
    local c = common_only(spec)
    c.title = spec.title or "Cumulative share of singular values"
    c.xlabel = spec.xlabel or "k"
    c.ylabel = spec.ylabel or (spec.squared and "Σ(i≤k) σᵢ² / Σ σᵢ²" or "Σ(i≤k) σᵢ / Σ σᵢ")
    c.yrange = spec.yrange or {0, 1.02}
    if c.key == nil and #series == 1 and not series[1].title then c.key = false end
    if c.key == nil then c.key = "bottom right" end
    return draw(c, series, fname)
  end

  function plot.embedding_spectrum(spec)
    local fname = "lmkit.plot.embedding_spectrum"
    check_options(spec, merge(SPECTRUM_OPTIONS, {matrix = true, embeddings = true}), fname)
    local list = spec.embeddings or (spec.matrix and {{matrix = spec.matrix, label = spec.label}})
    local s = {}
    for k, v in pairs(spec) do if k ~= "matrix" and k ~= "embeddings" and k ~= "label" then s[k] = v end end
    if list then
      s.series = {}
      for i, e in ipairs(list) do
        local m = e.matrix or e[1]
        if not lmkit.is_tensor(m) or m:dim() ~= 2 then error(("%s: embedding %d: a 2-D tensor expected"):format(fname, i), 2) end
        s.series[i] = {values = lmkit.analysis.svdvals(m, {float64 = true}), label = e.label or e[2]}
      end
    else
      s.values, s.label = spec.values, spec.label
    end
    s.title = spec.title or "Singular values of the embedding matrix"
    return spectrum(s, fname, s.title)
  end

  -- The rows of m (N×d) on their top two principal directions (lmkit.analysis.projection_2d, in
  -- float64); a single column plots against the row number.
  local function pca2(m)
    if m:size(2) < 2 then
      local x = m:double()
      return x:sub(x:mean(1, true)):reshape(x:size(1)):totable(), range(x:size(1))
    end
    local p = lmkit.analysis.projection_2d(m:double())
    return p:select(2, 1):totable(), p:select(2, 2):totable()
  end
  plot.pca2 = pca2

  function plot.projection(spec)
    local fname = "lmkit.plot.projection"
    check_options(spec, merge(COMMON, {points = true, x = true, y = true, matrix = true, labels = true, groups = true}), fname)
    local x, y
    if spec.matrix then
      if not lmkit.is_tensor(spec.matrix) or spec.matrix:dim() ~= 2 then error(fname .. ": matrix must be a 2-D tensor", 2) end
      x, y = pca2(spec.matrix)
    elseif spec.points then
      local p = spec.points
      if lmkit.is_tensor(p) then
        if p:dim() ~= 2 or p:size(2) ~= 2 then error(fname .. ": points must be N×2", 2) end
        x, y = p:select(2, 1):double():totable(), p:select(2, 2):double():totable()
      else
        x, y = {}, {}
        for i, pt in ipairs(p) do x[i], y[i] = pt[1], pt[2] end
      end
    else
      x, y = numbers(spec.x, "x", fname), numbers(spec.y, "y", fname)
    end
    if #x ~= #y then error(("%s: x has %d values but y has %d"):format(fname, #x, #y), 2) end
    if spec.labels and #spec.labels ~= #x then error(("%s: %d labels for %d points"):format(fname, #spec.labels, #x), 2) end
    local series = {}
    if spec.groups then
      if #spec.groups ~= #x then error(("%s: %d groups for %d points"):format(fname, #spec.groups, #x), 2) end
      local order, members = {}, {}
      for i, g in ipairs(spec.groups) do
        if not members[g] then members[g] = {}; order[#order + 1] = g end
        members[g][#members[g] + 1] = i
      end
      for _, g in ipairs(order) do
        local gx, gy = {}, {}
        for _, i in ipairs(members[g]) do gx[#gx + 1], gy[#gy + 1] = x[i], y[i] end
        series[#series + 1] = {kind = "xy", x = gx, y = gy, with = "points", title = tostring(g), pointsize = 0.8}
      end
    else
      series[1] = {kind = "xy", x = x, y = y, with = "points", pointsize = 0.8}
    end
    if spec.labels then series[#series + 1] = {kind = "labels", x = x, y = y, labels = spec.labels} end
    local c = common_only(spec)
    c.title = spec.title or (spec.matrix and "Embeddings, first two principal components" or "2-D projection")
    c.xlabel = spec.xlabel or (spec.matrix and "PC 1" or "x")
    c.ylabel = spec.ylabel or (spec.matrix and "PC 2" or "y")
    if c.key == nil and not spec.groups then c.key = false end
    local result = draw(c, series, fname)
    result.x, result.y = x, y
    return result
  end

  function plot.bars(spec)
    local fname = "lmkit.plot.bars"
    check_options(spec, merge(COMMON, {categories = true, series = true, rotate = true}), fname)
    if type(spec.categories) ~= "table" or #spec.categories == 0 then error(fname .. ": categories = {names...} expected", 2) end
    if type(spec.series) ~= "table" or #spec.series == 0 then error(fname .. ": series = {{label=, values=}, ...} expected", 2) end
    local names, columns = {}, {}
    for i, s in ipairs(spec.series) do
      check_options(s, {label = true, values = true}, fname .. ": series " .. i)
      local values = s.values
      if lmkit.is_tensor(values) then values = numbers(values, "values", fname) end
      if type(values) ~= "table" then error(("%s: series %d needs values"):format(fname, i), 2) end
      local column = {}
      for c, category in ipairs(spec.categories) do
        local v = values[c]
        if v == nil then v = values[category] end  -- values keyed by category name
        if lmkit.is_tensor(v) then v = v:item() end
        if v ~= nil and type(v) ~= "number" then error(("%s: series %d: the value for '%s' is not a number"):format(fname, i, category), 2) end
        column[c] = v or (0 / 0)
      end
      names[i] = s.label or ("series " .. i)
      columns[i] = column
    end
    local c = common_only(spec)
    local extra = {
      "set style data histograms",
      "set style histogram clustered gap 1",
      "set style fill solid 0.85 border rgb '#333333'",
      "set boxwidth 0.9 relative",
      "set xtics nomirror rotate by " .. (spec.rotate or 30) .. " right",
    }
    if c.grid ~= false then extra[#extra + 1] = "set grid noxtics" end
    if c.yrange == nil then extra[#extra + 1] = "set yrange [*:*]" end
    return draw(c, {{kind = "bars", categories = spec.categories, names = names, columns = columns}}, fname, extra)
  end

  function plot.word_similarity(spec)
    local fname = "lmkit.plot.word_similarity"
    check_options(spec, merge(COMMON, {benchmarks = true, models = true, rotate = true}), fname)
    if type(spec.models) ~= "table" then error(fname .. ": models = {{label=, values=}, ...} expected", 2) end
    local s = {}
    for k, v in pairs(spec) do if k ~= "benchmarks" and k ~= "models" then s[k] = v end end
    s.categories, s.series = spec.benchmarks, spec.models
    s.title = spec.title or "Word similarity"
    s.ylabel = spec.ylabel or "Spearman ρ"
    if s.key == nil then s.key = "outside right top" end
    return plot.bars(s)
  end

  -- Epoch records of a run → epochs, train ppl, valid ppl, switch epoch, finetune start.
  local function run_curves(run, fname)
    if type(run) == "string" then run = lmkit.open_run(run) end
    local records = run:metrics("epoch")
    local epochs, train, valid = {}, {}, {}
    local last_main, finetune_start, switch_from_records = 0, nil, nil
    for _, r in ipairs(records) do
      local e = r.epoch
      if r.stage == "finetune" then
        finetune_start = finetune_start or (last_main + 1)
        e = last_main + r.epoch
      else
        last_main = math.max(last_main, r.epoch)
        if r.switched and not switch_from_records then switch_from_records = r.epoch end
      end
      epochs[#epochs + 1], train[#train + 1], valid[#valid + 1] = e, r.train_ppl, r.valid_ppl
    end
    if #epochs == 0 then error(fname .. ": the run has no epoch records yet", 3) end
    local ok, summary = pcall(function() return run:summary() end)
    local switch = ok and type(summary) == "table" and summary.switch_epoch or switch_from_records
    return epochs, train, valid, switch, finetune_start
  end

  function plot.learning_curve(spec)
    local fname = "lmkit.plot.learning_curve"
    check_options(spec, merge(COMMON, {run = true, epochs = true, train = true, valid = true, switch_epoch = true,
                                       label = true}), fname)
    local epochs, train, valid, switch, finetune
    if spec.run then
      epochs, train, valid, switch, finetune = run_curves(spec.run, fname)
      if spec.switch_epoch ~= nil then switch = spec.switch_epoch end
    else
      valid = numbers(spec.valid, "valid", fname)
      epochs = spec.epochs and numbers(spec.epochs, "epochs", fname) or range(#valid)
      train = spec.train and numbers(spec.train, "train", fname)
      switch = spec.switch_epoch
    end
    local prefix = spec.label and (spec.label .. " ") or ""
    local series = {}
    if train then series[#series + 1] = {kind = "xy", x = epochs, y = train, with = "linespoints", pointsize = 0.5, title = prefix .. "train"} end
    series[#series + 1] = {kind = "xy", x = epochs, y = valid, with = "linespoints", pointsize = 0.5, title = prefix .. "valid"}
    local c = common_only(spec)
    c.title = spec.title or "Learning curve"
    c.xlabel = spec.xlabel or "epoch"
    c.ylabel = spec.ylabel or "perplexity"
    local vlines = {}
    for _, v in ipairs(spec.vlines or {}) do vlines[#vlines + 1] = v end
    if switch then vlines[#vlines + 1] = {x = switch, label = ("ASGD switch (epoch %d)"):format(switch)} end
    if finetune then vlines[#vlines + 1] = {x = finetune - 0.5, label = "finetune"} end
    c.vlines = vlines
    -- The legend right of the plot: below it, it met the x axis's label.
    if c.key == nil then c.key = "outside right top" end
    local last = epochs[#epochs] or 0
    local result = draw(c, series, fname, last <= 20 and {"set xtics 1"} or nil)
    result.switch_epoch = switch
    return result
  end

  local docs = {
    line = [[lmkit.plot.line{out=, x=, y=, label=, with="lines" | series={{x=, y=, label=, with=, color=, dashtype=}, ...}, title=, xlabel=, ylabel=, ...} -> {out=, script=, data=}
Lines through gnuplot; out's extension (.png or .svg) picks the format; x defaults to 1..#y; arrays or 1-D tensors.
Options of every plot: title, xlabel, ylabel, width=800, height=500 (pixels), logx, logy, xrange={lo, hi}, yrange, key ("top left", ... or false), grid=true, font="sans,11", vlines={{x=, label=}}, hlines={{y=, label=}}, set={raw gnuplot commands}, gnuplot= (the executable; else $LMKIT_GNUPLOT or "gnuplot").
The data and the script are written next to out, named as out with .dat and .gp for its extension; without gnuplot the error names them.]],
    scatter = [[lmkit.plot.scatter{out=, x=, y=, labels=, label= | series={...}, ...} -> {out=, script=, data=}
Points (as plot.line, with="points"); labels = {strings} writes one beside each point.]],
    rank_ppl = [[lmkit.plot.rank_ppl{out=, rank=, ppl=, labels=, groups=, ...} -> {out=, script=, data=, slope=, intercept=, r=, p=}
Rank vs perplexity: the models as points, the least-squares line ppl = intercept + slope·rank, Pearson's r (and p) in the title and legend (thesis Fig. 4.6/4.7). groups = {name per point} (e.g. each model's head) gives each group a colour, a shape and a legend entry (label= names the points only without groups); labels = {string per point} writes each beside its point where it overlaps no other label or point (plot.place_labels). With groups (three or more), a correlation one group drives — leaving it out flips r's sign or moves r by 0.5 or more — is written on the plot and returned as caution ("r = 0.81 over all points is driven by the MoS points: without them r = 0.05"). Returns out, script, data, slope, intercept, r, p, caution.]],
    place_labels = [[lmkit.plot.place_labels{x=, y=, labels=, xrange={lo, hi}, yrange={lo, hi}, width=800, height=500, area={left=, right=, bottom=, top=}, logx=, logy=, lines={{x1, y1, x2, y2}, ...}} -> {{text=, x=, y=, align=, box=, overlap=, lead=}, ...}
Where rank_ppl writes its point labels: for each point, left to right, the first of eight places around it (right, left, above, below, the diagonals), on rings ever further out (lead = true: drawn with a leader line), whose box overlaps no placed label, no point, no line of `lines` and not the plot area's edge, else the least overlapping (overlap > 0). area: the plot area in screen fractions; box: the label's {x0, y0, x1, y1} in pixels (y up); x, y: its anchor in data coordinates, align: "left", "right" or "center".]],
    spectrum = [[lmkit.plot.spectrum{out=, values= | series={{values=, label=}, ...}, normalize=true, log=true, ...} -> {out=, script=, data=}
Singular values σᵢ against i, divided by σ₁ unless normalize=false, on a log y axis unless log=false.]],
    cumulative = [[lmkit.plot.cumulative{out=, values= | series={{values=, label=}, ...}, kind="share", squared=false, ...} -> {out=, script=, data=}
kind="share": the cumulative share Σ_{i≤k} σᵢ / Σ σᵢ against k (squared=true: of σᵢ², whose 1 − ε crossing is the ε-effective rank). kind="cdf": the MoS paper's Fig. 1, the percentage of singular values whose σᵢ/σ₁ is at most x, against x ∈ [0, 1] (lmkit.analysis.normalized_cdf).]],
    embedding_spectrum = [[lmkit.plot.embedding_spectrum{out=, matrix= | embeddings={{matrix=, label=}, ...} | values=, normalize=true, log=true, ...} -> {out=, script=, data=}
The spectrum of embedding matrices (N×d tensors; singular values in float64), one line per model.]],
    projection = [[lmkit.plot.projection{out=, points= | x=, y= | matrix=, labels=, groups=, ...} -> {out=, script=, data=, x=, y=}
A 2-D scatter: points N×2 (tensor or {{x, y}, ...}), or matrix N×d projected on its first two principal components; labels beside points; groups = {name per point} colors them by group.]],
    bars = [[lmkit.plot.bars{out=, categories={names...}, series={{label=, values=}, ...}, rotate=30, ...} -> {out=, script=, data=}
Grouped bars: one group per category, one bar per series; values by position or keyed by category name (missing: no bar).]],
    word_similarity = [[lmkit.plot.word_similarity{out=, benchmarks={names...}, models={{label=, values=}, ...}, ...} -> {out=, script=, data=}
Spearman ρ per word-similarity benchmark, one bar per model (plot.bars with its labels); values by position or keyed by benchmark.]],
    learning_curve = [[lmkit.plot.learning_curve{out=, run= | epochs=, train=, valid=, switch_epoch=, label=, ...} -> {out=, script=, data=, switch_epoch=}
Train and valid perplexity against epoch from a run (its directory or lmkit.open_run(dir)): the "epoch" records of metrics.jsonl, the ASGD switch (summary.switch_epoch) as a dashed vertical line, finetune epochs after the main ones.]],
    fit_line = [[lmkit.plot.fit_line(x, y) -> slope, intercept, r
Least squares y = intercept + slope·x and Pearson's r of two Lua arrays (what rank_ppl draws).]],
    driving_group = [[lmkit.plot.driving_group(x, y, groups, r) -> caution, group, r_without | nil
Whether one group of points drives the correlation r of x and y (groups: a name per point, three groups or more): the group whose removal moves r most, when leaving it out flips r's sign (|r| ≥ 0.3) or moves r by 0.5 or more; the caution names it and r without it. nil otherwise (what rank_ppl writes on its plot).]],
    pca2 = [[lmkit.plot.pca2(matrix) -> x, y
The rows of an N×d tensor projected on its first two principal components (centered, float64: lmkit.analysis.projection_2d), as two Lua arrays.]],
  }
  for name, doc in pairs(docs) do lmkit.document(plot[name], "lmkit.plot." .. name, doc) end
  for name, fn in pairs(plot) do
    if type(fn) == "function" and not docs[name] then error("lmkit.plot." .. name .. " has no doc string") end
  end
  return plot
end
