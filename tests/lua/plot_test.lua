-- lmkit.plot: every plot kind through gnuplot in PNG and SVG, the rank–perplexity fit against its
-- closed form, learning curves from a real run, and the error without gnuplot.
local T = require "lmkit.testing"
local plot = lmkit.plot

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p '" .. dir .. "'"))

local function read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

local function nonempty(path)
  local f = io.open(path, "rb")
  if not f then return false end
  local size = f:seek("end")
  f:close()
  return size > 0
end

-- The result names the output, the script and the data; all three exist and are non-empty.
local function check_files(result, out)
  T.eq(result.out, out)
  T.eq(result.script, out:gsub("%.%w+$", ".gp"))
  T.eq(result.data, out:gsub("%.%w+$", ".dat"))
  for _, path in ipairs({result.out, result.script, result.data}) do T.truthy(nonempty(path), path .. " is empty or missing") end
  if out:match("%.png$") then
    T.eq(read(out):sub(1, 8), "\137PNG\r\n\26\n", "a PNG file")
  else
    T.truthy(read(out):find("<svg", 1, true), "an SVG file")
  end
end

local function svg_has(path, ...)
  local text = read(path)
  for _, s in ipairs({...}) do T.truthy(text:find(s, 1, true), ("'%s' in %s"):format(s, path)) end
end

lmkit.seed(5)
local sv = lmkit.randn(60, 12):svdvals()
local kinds = {
  line = function(out) return plot.line{out = out, title = "Squares", xlabel = "n", ylabel = "n squared", y = {1, 4, 9, 16}, label = "n^2"} end,
  scatter = function(out)
    return plot.scatter{out = out, title = "Points", x = lmkit.tensor({1, 2, 3}), y = {3, 1, 2}, labels = {"a", "b", "c"}}
  end,
  rank_ppl = function(out) return plot.rank_ppl{out = out, rank = {402, 800, 1500, 9000}, ppl = {58.8, 58.0, 57.9, 56.0}} end,
  spectrum = function(out) return plot.spectrum{out = out, series = {{values = sv, label = "randn"}, {values = {3, 2, 1}, label = "toy"}}} end,
  spectrum_linear = function(out) return plot.spectrum{out = out, values = sv, log = false, normalize = false, title = "Raw spectrum"} end,
  cumulative = function(out) return plot.cumulative{out = out, values = sv, squared = true} end,
  embedding_spectrum = function(out)
    return plot.embedding_spectrum{out = out, embeddings = {{matrix = lmkit.randn(40, 8), label = "Softmax"},
                                                            {matrix = lmkit.randn(40, 3):matmul(lmkit.randn(3, 8)), label = "low rank"}}}
  end,
  projection = function(out)
    return plot.projection{out = out, points = lmkit.randn(6, 2), labels = {"the", "a", "of", "to", "in", "and"},
                           groups = {"f", "f", "f", "g", "g", "g"}}
  end,
  pca = function(out) return plot.projection{out = out, matrix = lmkit.randn(20, 5)} end,
  bars = function(out)
    return plot.bars{out = out, categories = {"x", "y"}, series = {{label = "A", values = {1, 2}}, {label = "B", values = {y = 3}}}}
  end,
  word_similarity = function(out)
    return plot.word_similarity{out = out, benchmarks = {"WS-353", "SimLex-999", "MEN"},
                                models = {{label = "Softmax", values = {0.45, 0.21, 0.5}}, {label = "MoS", values = {0.48, -0.05, 0.52}}}}
  end,
  learning_curve = function(out)
    return plot.learning_curve{out = out, epochs = {1, 2, 3, 4}, train = {300, 200, 150, 140}, valid = {280, 190, 160, 150}, switch_epoch = 3}
  end,
}
-- What each SVG must show: title, axis labels, legend entries.
local svg_text = {
  line = {"Squares", "n squared", "n^2"},
  rank_ppl = {"Rank vs perplexity (Pearson r = ", "test perplexity", "least squares"},
  spectrum = {"Singular values", "σᵢ / σ₁", "randn", "toy"},
  spectrum_linear = {"Raw spectrum", "σᵢ"},
  cumulative = {"Cumulative share of singular values", "σᵢ²"},
  embedding_spectrum = {"Singular values of the embedding matrix", "low rank"},
  projection = {"2-D projection", "the", "and"},
  pca = {"PC 1", "PC 2"},
  bars = {"A", "B"},
  word_similarity = {"Word similarity", "Spearman ρ", "SimLex-999", "MoS"},
  learning_curve = {"Learning curve", "perplexity", "ASGD switch (epoch 3)", "valid"},
  scatter = {"Points"},
}
local names = {}
for name in pairs(kinds) do names[#names + 1] = name end
table.sort(names)
for _, name in ipairs(names) do
  T.test(name .. " writes a PNG and an SVG with its title and labels", function()
    for _, ext in ipairs({"png", "svg"}) do
      local out = ("%s/%s.%s"):format(dir, name, ext)
      check_files(kinds[name](out), out)
    end
    svg_has(("%s/%s.svg"):format(dir, name), table.unpack(svg_text[name]))
  end)
end

T.test("rank_ppl: least-squares line and Pearson r equal their closed forms", function()
  -- x̄ = 2.5, ȳ = 4, Sxx = 5, Sxy = 7, Syy = 10: slope 1.4, intercept 0.5, r = 7/√50.
  local out = dir .. "/fit.svg"
  local r = plot.rank_ppl{out = out, rank = {1, 2, 3, 4}, ppl = {2, 3, 5, 6}, title = "Handmade"}
  T.near(r.slope, 1.4, 1e-14)
  T.near(r.intercept, 0.5, 1e-14)
  T.near(r.r, 7 / math.sqrt(50), 1e-14)
  T.near(r.p, select(2, lmkit.stats.pearsonr({1, 2, 3, 4}, {2, 3, 5, 6})), 1e-14)
  svg_has(out, "Handmade (Pearson r = 0.990)", "y = 0.5 + 1.4·x (r = 0.990")
  -- The line's block in the data file: its ends at the smallest and largest rank.
  local blocks = {}
  for block in (read(r.data) .. "\n\n"):gmatch("(.-)\n\n\n?") do blocks[#blocks + 1] = block end
  local ends = {}
  for x, y in blocks[#blocks]:gmatch("\n(%S+) (%S+)") do ends[#ends + 1] = {tonumber(x), tonumber(y)} end
  T.eq(#ends, 2)
  T.near(ends[1][1], 1, 0); T.near(ends[1][2], 1.9, 1e-14)
  T.near(ends[2][1], 4, 0); T.near(ends[2][2], 6.1, 1e-14)
  local slope, intercept, pr = plot.fit_line({1, 2, 3, 4}, {2, 3, 5, 6})
  T.near(slope, 1.4, 1e-14); T.near(intercept, 0.5, 1e-14); T.near(pr, 7 / math.sqrt(50), 1e-14)
end)

T.test("place_labels: crowded labels neither overlap nor cover a point nor leave the plot area", function()
  -- Nine GSS cells whose points sit a label's height apart (gss_grid at tiny scale looks like this).
  local x, y, labels = {}, {}, {}
  for i = 1, 9 do
    x[i], y[i] = 100 + (i % 3), 72 + 0.01 * (i // 3)
    labels[i] = ("(%g, %g)"):format(-2 + 0.5 * i, 1.25 + 0.25 * (i % 4))
  end
  local area = {left = 0.1, right = 0.97, bottom = 0.3, top = 0.9}
  local placed = plot.place_labels{x = x, y = y, labels = labels, xrange = {95, 107}, yrange = {71.9, 72.2},
                                   width = 800, height = 500, area = area}
  local function overlap(b, c)
    return math.min(b[3], c[3]) > math.max(b[1], c[1]) and math.min(b[4], c[4]) > math.max(b[2], c[2])
  end
  for i = 1, #x do
    local b = placed[i].box
    T.eq(placed[i].overlap, 0, labels[i])
    T.eq(placed[i].text, labels[i])
    T.truthy(b[1] >= 80 and b[3] <= 776 and b[2] >= 150 and b[4] <= 450, labels[i] .. " inside the plot area")
    for j = 1, #x do
      local px = 80 + (x[j] - 95) / 12 * 696
      local py = 150 + (y[j] - 71.9) / 0.3 * 300
      T.truthy(not overlap(b, {px - 4, py - 4, px + 4, py + 4}), ("%s covers point %d"):format(labels[i], j))
      if j ~= i then T.truthy(not overlap(b, placed[j].box), labels[i] .. " overlaps " .. labels[j]) end
    end
  end
  -- A point at the right edge gets its label on its left, inside.
  local edge = plot.place_labels{x = {1, 2, 10}, y = {1, 2, 3}, labels = {"a", "b", "a long label"}, xrange = {0, 10},
                                 yrange = {0, 4}, area = area}
  T.eq(edge[3].align, "right")
  -- Labels on one point go to rings further out, with a leader line; more labels than places
  -- around it (8 per ring, 7 rings) cannot all be free: the least overlapping place is taken and says so.
  local crowd = {x = {}, y = {}, labels = {}}
  for i = 1, 60 do crowd.x[i], crowd.y[i], crowd.labels[i] = 5, 2, "label " .. i end
  local stacked = plot.place_labels{x = crowd.x, y = crowd.y, labels = crowd.labels, xrange = {0, 10}, yrange = {0, 4}, area = area}
  T.eq(stacked[1].lead, false)
  T.eq(stacked[9].lead, true)
  T.truthy(stacked[60].overlap > 0)
  T.raises(function() plot.place_labels{x = {1}, y = {1}, labels = {"a"}, xrange = {2, 1}, yrange = {0, 1}} end, "lo < hi")
end)

T.test("rank_ppl: a colour and a legend entry per group; labels placed by place_labels", function()
  local out = dir .. "/groups.svg"
  local r = plot.rank_ppl{out = out, rank = {10, 11, 30, 31, 50}, ppl = {70, 71, 68, 69, 65},
                          groups = {"Softmax", "Softmax", "MoS", "MoS", "GSS"}}
  local data = read(r.data)
  T.truthy(data:find("# 0: Softmax\n10 70\n11 71\n", 1, true), data)
  T.truthy(data:find("# 1: MoS\n30 68\n31 69\n", 1, true), data)
  T.truthy(data:find("# 2: GSS\n50 65\n", 1, true), data)
  local script = read(r.script)
  T.truthy(script:find("index 1 using 1:2 with points pointtype 5", 1, true), script)
  svg_has(out, "Softmax", "MoS", "GSS")
  local labelled = plot.rank_ppl{out = dir .. "/labelled.svg", rank = {10, 11, 12}, ppl = {70, 70.1, 70.2},
                                 labels = {"(0, 1.25)", "(1, 2)", "it's"}}
  script = read(labelled.script)
  T.truthy(script:find("set label 1 '(0, 1.25)' at first ", 1, true), script)
  T.truthy(script:find("set label 3 'it''s' at first ", 1, true), script)
  T.raises(function() plot.rank_ppl{out = out, rank = {1, 2, 3}, ppl = {1, 2, 3}, groups = {"a"}} end, "one name per point")
end)

T.test("a line break in a label, a title or a file name never becomes a gnuplot command", function()
  local marker = dir .. "/injected"
  local evil = "run\nsystem(\"touch " .. marker .. "\") #"
  local r = plot.line{out = dir .. "/evil.svg", title = evil, series = {{y = {1, 2}, label = evil}}}
  T.truthy(not io.open(marker, "r"), "a label ran a command")
  for line in read(r.script):gmatch("[^\n]+") do T.truthy(not line:find("^system"), line) end
  for line in read(r.data):gmatch("[^\n]+") do T.truthy(not line:find("^system"), line) end
  T.raises(function() plot.line{out = dir .. "/x\nsystem(\"touch " .. marker .. "\") #.svg", y = {1, 2}} end,
           "holds a control character")
  T.truthy(not io.open(marker, "r"), "a file name ran a command")
end)

T.test("spectrum data: σᵢ/σ₁ by default; cumulative share ends at 1", function()
  local r = plot.spectrum{out = dir .. "/toy_spectrum.svg", values = {4, 2, 1}}
  T.eq(read(r.data), "# 0: xy\n1 1\n2 0.5\n3 0.25\n")
  local c = plot.cumulative{out = dir .. "/toy_cumulative.svg", values = {4, 2, 1, 1}}
  T.eq(read(c.data), "# 0: xy\n1 0.5\n2 0.75\n3 0.875\n4 1\n")
  local cdf = plot.cumulative{out = dir .. "/toy_cdf.svg", values = {4, 2, 1, 1}, kind = "cdf"}
  T.eq(read(cdf.data), "# 0: xy\n0 0\n0.25 25\n0.25 50\n0.5 75\n1 100\n")
  T.truthy(read(cdf.script):find("with steps", 1, true))
  T.raises(function() plot.cumulative{out = dir .. "/x.svg", values = {1}, kind = "pdf"} end, "kind must be \"share\"")
end)

T.test("pca2 recovers the principal axes of a stretched cloud", function()
  lmkit.seed(7)
  local z = lmkit.randn(400, 2):mul(lmkit.tensor({{10, 1}}))
  local m = lmkit.cat({z, lmkit.zeros(400, 3)}, 2)  -- variance along coordinates 1, 2 only
  local x, y = plot.pca2(m)
  local first, second = z:select(2, 1), z:select(2, 2)
  local cx = select(1, lmkit.stats.pearsonr(x, first:totable()))
  local cy = select(1, lmkit.stats.pearsonr(y, second:totable()))
  T.truthy(math.abs(cx) > 0.999 and math.abs(cy) > 0.99, ("correlations %g, %g"):format(cx, cy))
end)

T.test("learning_curve reads a run directory: epochs, ppl and the ASGD switch", function()
  local lang = lmkit.data.synthetic{vocab = 30, dim = 4}
  local corpus = lang:corpus{train = 3000, valid = 600, test = 600}
  lmkit.seed(1)
  local model = lmkit.model{vocab_size = 30, emb = 8, nhid = 16, nhidlast = 8, nlayers = 1}
  local run_dir = dir .. "/run"
  local run = lmkit.train{model = model, corpus = corpus, run_dir = run_dir, lr = 10, batch_size = 10, bptt = 10,
                          epochs = 4, switch = "et", switch_epoch = 2, test = false}
  local out = dir .. "/curve.svg"
  local r = plot.learning_curve{out = out, run = run_dir, logy = true}
  check_files(r, out)
  T.eq(r.switch_epoch, 2)
  svg_has(out, "ASGD switch (epoch 2)", "train", "valid")
  local records = run:metrics("epoch")
  local data = read(r.data)
  T.truthy(data:find(("\n4 %.17g\n"):format(records[4].train_ppl), 1, true), "train ppl of epoch 4 in the data")
  T.truthy(data:find(("\n4 %.17g\n"):format(records[4].valid_ppl), 1, true), "valid ppl of epoch 4 in the data")
  T.eq(plot.learning_curve{out = dir .. "/curve2.png", run = lmkit.open_run(run_dir)}.switch_epoch, 2)
end)

T.test("without gnuplot the error names the data and the script it wrote", function()
  local out = dir .. "/nognuplot.png"
  local err = T.raises(function()
    plot.line{out = out, y = {1, 2}, gnuplot = "/nonexistent/gnuplot"}
  end, "gnuplot not found ('/nonexistent/gnuplot')")
  T.truthy(err:find(dir .. "/nognuplot.dat", 1, true), err)
  T.truthy(err:find("install gnuplot-nox (scripts/setup.sh does) or run gnuplot on " .. dir .. "/nognuplot.gp", 1, true), err)
  T.truthy(nonempty(dir .. "/nognuplot.dat") and nonempty(dir .. "/nognuplot.gp"))
  T.truthy(not nonempty(out))
end)

T.test("a gnuplot error is reported with the script", function()
  local err = T.raises(function() plot.line{out = dir .. "/bad.svg", y = {1, 2}, set = {"set nonsense_option"}} end, "gnuplot failed")
  T.truthy(err:find(dir .. "/bad.gp", 1, true), err)
end)

T.test("mistakes are named", function()
  T.raises(function() plot.line{out = dir .. "/x.pdf", y = {1}} end, "use .png or .svg")
  T.raises(function() plot.line{y = {1}} end, "out = \"figure.png\"")
  T.raises(function() plot.line{out = dir .. "/x.png", y = {1}, titel = "t"} end, "lmkit.plot.line option 'titel' is unknown (did you mean 'title'?")
  T.raises(function() plot.line{out = dir .. "/x.png", x = {1, 2}, y = {1}} end, "x has 2 values but y has 1")
  T.raises(function() plot.line{out = dir .. "/x.png", y = {1, "a"}} end, "entry 2 is not a number")
  T.raises(function() plot.spectrum{out = dir .. "/x.png", values = lmkit.ones(2, 2)} end, "must be 1-D")
  T.raises(function() plot.rank_ppl{out = dir .. "/x.png", rank = {1, 2}, ppl = {1, 2}} end, "at least 3 points")
end)

T.test("style options are gnuplot's words and numbers, never script text", function()
  local marker = dir .. "/ran"
  local shell = "\nsystem 'touch " .. marker .. "'\n"
  T.raises(function() plot.line{out = dir .. "/k.svg", y = {1, 2}, key = "top" .. shell} end, "option 'key' must be")
  T.raises(function() plot.line{out = dir .. "/w.svg", y = {1, 2}, with = "lines" .. shell} end, "option 'with' must be one of")
  T.raises(function() plot.line{out = dir .. "/d.svg", series = {{y = {1, 2}, dashtype = "1" .. shell}}} end, "option 'dashtype' must be")
  T.raises(function() plot.line{out = dir .. "/l.svg", series = {{y = {1, 2}, linewidth = "2" .. shell}}} end, "option 'linewidth' must be")
  T.raises(function() plot.line{out = dir .. "/p.svg", series = {{y = {1, 2}, with = "points", pointtype = "7" .. shell}}} end,
           "option 'pointtype' must be")
  T.eq(io.open(marker), nil, "no shell command ran")
  -- What gnuplot does take still works: key words, a style, a dash pattern.
  plot.line{out = dir .. "/ok.svg", key = "bottom left box", series = {{y = {1, 2}, with = "linespoints", dashtype = ".-", label = "a"}}}
  T.truthy(io.open(dir .. "/ok.svg"), "ok.svg written")
end)

T.test("every plot function is documented", function()
  for name, fn in pairs(plot) do
    local full, doc = lmkit.doc(fn)
    T.eq(full, "lmkit.plot." .. name)
    T.truthy(doc:find("^lmkit%.plot%." .. name .. "[{(]"), doc)
  end
end)

T.test("a correlation one group drives is named: leaving that group out flips or collapses r", function()
  -- Three heads, no trend within any; the MoS points sit apart, low rank and high ppl, and make r.
  local rank = {10, 11, 12, 10, 11, 12, 2, 3, 2}
  local ppl = {100, 98, 101, 99, 100, 98, 150, 151, 149}
  local groups = {"Softmax", "Softmax", "Softmax", "GSS", "GSS", "GSS", "MoS", "MoS", "MoS"}
  local r = lmkit.stats.pearsonr(rank, ppl)
  local caution, group, without = lmkit.plot.driving_group(rank, ppl, groups, r)
  T.truthy(caution, "no caution for a correlation made by one group")
  T.eq(group, "MoS")
  T.truthy(math.abs(without) < 0.5 and r < -0.9, ("r %.3f, without MoS %.3f"):format(r, without))
  T.truthy(caution:find("driven by the MoS points: without them r = ", 1, true), caution)
  -- A trend every group shares is not flagged.
  local trend_rank = {10, 11, 12, 10, 11, 12, 2, 3, 4}
  local shared = {100, 105, 110, 101, 104, 111, 60, 66, 70}
  T.eq(lmkit.plot.driving_group(trend_rank, shared, groups, (lmkit.stats.pearsonr(trend_rank, shared))), nil)
  -- Two groups: leaving one out leaves no correlation across models to compare with.
  T.eq(lmkit.plot.driving_group({1, 2, 3, 4}, {1, 2, 4, 3}, {"a", "a", "b", "b"}, 0.8), nil)
  -- rank_ppl returns it and writes it on the plot.
  local fit = lmkit.plot.rank_ppl{out = dir .. "/driven.png", rank = rank, ppl = ppl, groups = groups}
  T.eq(fit.caution, caution)
  T.truthy(T.read_file(fit.script):find("driven by the MoS points", 1, true), "the caution is not on the plot")
end)

local ok, err = pcall(T.run)
os.execute("rm -rf '" .. dir .. "'")
if not ok then error(err, 0) end
