-- lmkit.report.table: exact Markdown, CSV and LaTeX for small tables (escaping, quoting, paper | ours | Δ).
local T = require "lmkit.testing"
local report = lmkit.report

local function heads_table()
  return report.table{
    title = "Test ppl & rank_1 (PTB)",
    label = "tab:ppl",
    columns = {
      {key = "head", label = "Head"},
      {key = "params", label = "Params"},
      {key = "ppl", label = "Test ppl", digits = 2, best = "min"},
      {key = "note", label = "Note"},
    },
    rows = {
      {head = "Softmax_1", params = 24221600, ppl = 58.614, note = '50% "best", & #1'},
      {head = "MoS, K=15", params = 21500620, ppl = 56.021},
    },
    paper = {Softmax_1 = {ppl = 58.8}, ["MoS, K=15"] = {ppl = 56.0}},
  }
end

T.test("markdown: aligned columns, paper | ours | delta, best in bold, missing as a dash", function()
  T.eq(heads_table():markdown(), table.concat({
    "**Test ppl & rank_1 (PTB)**",
    "",
    "| Head      |   Params | Test ppl paper | Test ppl ours | Test ppl Δ | Note             |",
    "| :-------- | -------: | -------------: | ------------: | ---------: | :--------------- |",
    '| Softmax_1 | 24221600 |          58.80 |         58.61 |      -0.19 | 50% "best", & #1 |',
    "| MoS, K=15 | 21500620 |          56.00 |     **56.02** |      +0.02 | —                |",
    ""}, "\n"))
end)

T.test("data that is not the paper's: labelled, the paper's numbers kept without Δ; notes under the table", function()
  local t = report.table{
    title = "Ranks",
    columns = {{key = "head", label = "Head"}, {key = "rank", label = "Rank", paper = {402}}},
    rows = {{head = "Softmax", rank = 25}},
    data = {label = "a synthetic language standing in for PTB (tiny scale)", paper_data = false, paper_label = "PTB"},
    notes = {"Pearson r(rank, test ppl) = -0.948."},
  }
  t:note("Plot: rank_vs_ppl.png")
  T.eq(t:markdown(), table.concat({
    "**Ranks**",
    "",
    "*Data: a synthetic language standing in for PTB (tiny scale).*",
    "",
    "*The paper's numbers are for PTB, shown for orientation only: the data differ, so no Δ.*",
    "",
    "| Head    | Rank paper | Rank ours |",
    "| :------ | ---------: | --------: |",
    "| Softmax |        402 |        25 |",
    "",
    "Pearson r(rank, test ppl) = -0.948.",
    "",
    "Plot: rank_vs_ppl.png",
    "",
    ""}, "\n"))
  T.truthy(t:latex():find("\\caption{Ranks Data: a synthetic language", 1, false) ~= nil)
  -- On the paper's data the Δ is there and no orientation line.
  local same = report.table{columns = {{key = "rank", paper = {402}}}, rows = {{rank = 402}},
                            data = {label = "PTB", paper_data = true}}
  T.truthy(same:markdown():find("rank Δ", 1, true))
  T.eq(same:markdown():find("orientation", 1, true), nil)
  T.raises(function() report.table{columns = {"a"}, data = {label = "x"}} end, "data = {label = ")
end)

T.test("csv: quotes fields with commas and quotes, empty for missing", function()
  T.eq(heads_table():csv(), table.concat({
    "Head,Params,Test ppl paper,Test ppl ours,Test ppl Δ,Note",
    'Softmax_1,24221600,58.80,58.61,-0.19,"50% ""best"", & #1"',
    '"MoS, K=15",21500620,56.00,56.02,+0.02,',
    ""}, "\n"))
end)

T.test("latex: booktabs, escaped specials, two-level header over paper | ours | Δ", function()
  T.eq(heads_table():latex(), table.concat({
    "\\begin{table}[t]",
    "  \\centering",
    "  \\caption{Test ppl \\& rank\\_1 (PTB)}",
    "  \\label{tab:ppl}",
    "  \\begin{tabular}{lrrrrl}",
    "    \\toprule",
    "    Head & Params & \\multicolumn{3}{c}{Test ppl} & Note \\\\",
    "    \\cmidrule(lr){3-5}",
    "     &  & paper & ours & $\\Delta$ &  \\\\",
    "    \\midrule",
    '    Softmax\\_1 & 24221600 & 58.80 & 58.61 & $-$0.19 & 50\\% "best", \\& \\#1 \\\\',
    "    MoS, K=15 & 21500620 & 56.00 & \\textbf{56.02} & +0.02 & --- \\\\",
    "    \\bottomrule",
    "  \\end{tabular}",
    "\\end{table}",
    ""}, "\n"))
end)

local function other_table()
  return report.table{
    columns = {"model", {key = "rank", digits = 1, sd = "rank_sd", align = "center"},
               {key = "ppl", digits = 1, paper = {60, 50}, delta = "percent"}},
    rows = {{model = "a$b", rank = 402, rank_sd = 0.26, ppl = 57}, {model = "c~d^e\\f{g}", rank = 10.04, ppl = 55}},
  }
end

T.test("mean ± sd, centered, paper numbers by row, relative delta", function()
  T.eq(other_table():markdown(), table.concat({
    "| model      |    rank     | ppl paper | ppl ours |  ppl Δ |",
    "| :--------- | :---------: | --------: | -------: | -----: |",
    "| a$b        | 402.0 ± 0.3 |      60.0 |     57.0 |  -5.0% |",
    "| c~d^e\\f{g} |    10.0     |      50.0 |     55.0 | +10.0% |",
    ""}, "\n"))
  T.eq(other_table():csv{raw = true}, table.concat({
    "model,rank,rank sd,ppl paper,ppl ours,ppl Δ",
    "a$b,402,0.26,60,57,-5",
    "c~d^e\\f{g},10.04,,50,55,10",
    ""}, "\n"))
  T.eq(other_table():latex(), table.concat({
    "\\begin{tabular}{lcrrr}",
    "  \\toprule",
    "  model & rank & \\multicolumn{3}{c}{ppl} \\\\",
    "  \\cmidrule(lr){3-5}",
    "   &  & paper & ours & $\\Delta$ \\\\",
    "  \\midrule",
    "  a\\$b & 402.0 $\\pm$ 0.3 & 60.0 & 57.0 & $-$5.0\\% \\\\",
    "  c\\textasciitilde{}d\\textasciicircum{}e\\textbackslash{}f\\{g\\} & 10.0 & 50.0 & 55.0 & +10.0\\% \\\\",
    "  \\bottomrule",
    "\\end{tabular}",
    ""}, "\n"))
end)

T.test("paper numbers from a row field or a function; rows added later; a plain table has one header row", function()
  local t = report.table{columns = {{key = "k", label = "K"}, {key = "ppl", digits = 1, paper = "ref", delta = false}}}
  t:add{k = 1, ppl = 60.04, ref = 61}:add{k = 15, ppl = 56.96}
  T.eq(t:csv(), "K,ppl paper,ppl ours\n1,61.0,60.0\n15,,57.0\n")
  local f = report.table{columns = {"k", {key = "ppl", digits = 0, paper = function(row) return row.k * 10 end}},
                         rows = {{k = 2, ppl = 19.6}}}
  T.eq(f:csv(), "k,ppl paper,ppl ours,ppl Δ\n2,20,20,0\n")
  local plain = report.table{columns = {"a", {key = "b", format = "%.3e"}}, rows = {{a = "x", b = 12345.678}}}
  T.eq(plain:latex(), "\\begin{tabular}{lr}\n  \\toprule\n  a & b \\\\\n  \\midrule\n  x & 1.235e+04 \\\\\n  \\bottomrule\n\\end{tabular}\n")
  T.eq(plain:markdown(), "| a   |         b |\n| :-- | --------: |\n| x   | 1.235e+04 |\n")
end)

T.test("markdown escapes pipes; latex_escape covers every special character", function()
  local t = report.table{columns = {"name"}, rows = {{name = "a|b"}}}
  T.eq(t:markdown(), "| name |\n| :--- |\n| a\\|b |\n")
  T.eq(report.latex_escape("_%&#$~^\\{}"), "\\_\\%\\&\\#\\$\\textasciitilde{}\\textasciicircum{}\\textbackslash{}\\{\\}")
  -- The symbols of lmkit's headers as math, which pdflatex typesets (a bare σ or ₁ stops it).
  T.eq(report.latex_escape("σ_r/σ₁"), "$\\sigma$\\_r/$\\sigma$$_{1}$")
  T.eq(report.latex_escape("ε-rank ≥ 2 ± 0.1"), "$\\varepsilon$-rank $\\geq$ 2 $\\pm$ 0.1")
  T.eq(report.latex_escape("Δ mean · 10³"), "$\\Delta$ mean $\\cdot$ 10$^{3}$")
end)

T.test("save picks the format from the extension and writes atomically", function()
  local dir = os.tmpname()
  os.remove(dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  local t = heads_table()
  for ext, method in pairs({md = "markdown", csv = "csv", tex = "latex"}) do
    local path = dir .. "/table." .. ext
    T.eq(t:save(path), path)
    local f = assert(io.open(path, "rb"))
    T.eq(f:read("a"), t[method](t))
    f:close()
  end
  local listing = io.popen("ls -A '" .. dir .. "'"):read("a")
  T.eq(listing, "table.csv\ntable.md\ntable.tex\n", "no temporary file is left behind")
  T.raises(function() t:save(dir .. "/table.xlsx") end, "use .md, .csv or .tex")
  T.raises(function() t:save(dir .. "/no/such/dir/table.md") end, "cannot write '" .. dir .. "/no/such/dir/table.md'")
  os.execute("rm -rf '" .. dir .. "'")
end)

T.test("mistakes are named", function()
  T.raises(function() report.table{columns = {{key = "a", digit = 2}}} end, "column 'a' option 'digit' is unknown (did you mean 'digits'?")
  T.raises(function() report.table{colums = {}} end, "lmkit.report.table option 'colums' is unknown (did you mean 'columns'?")
  T.raises(function() report.table{columns = {{label = "x"}}} end, "column 1 needs a key")
  T.raises(function() report.table{columns = {{key = "a", align = "middle"}}} end, "align must be")
  T.raises(function() report.table{columns = {"a"}}:csv{rwa = true} end, "Table:csv option 'rwa' is unknown (did you mean 'raw'?")
end)

T.test("documented", function()
  local name, doc = lmkit.doc(report.table)
  T.eq(name, "lmkit.report.table")
  T.truthy(doc:find("-> Table", 1, true))
end)

T.test("every report's yardsticks: unigram, bound, the gap closed and the near-unigram note", function()
  local function notes_of(results)
    local t = lmkit.report.table{columns = {{key = "test_ppl", label = "Test ppl"}}}
    T.eq(t:note_yardsticks(results), t)
    T.eq(table.concat(lmkit.report.yardsticks(results), "\n"), table.concat(t.notes, "\n"))
    return table.concat(t.notes, "\n")
  end
  -- Synthetic: unigram 100, bound 50; the best model (70) closes log(100/70)/log(100/50) = 51% of the gap;
  -- 96 is within 5% of the unigram model (≥ 95), 94.9 is not.
  local text = notes_of{{cell = {}, result = {test_ppl = 96, unigram_ppl = 100, bound_ppl = 50}},
                        {cell = {}, result = {test_ppl = 70, unigram_ppl = 100, bound_ppl = 50}},
                        {cell = {}, result = {test_ppl = 94.9, unigram_ppl = 100, bound_ppl = 50}},
                        {cell = {}}}
  T.truthy(text:find("the unigram model %(the training split's word frequencies, add%-½, no context%) has perplexity 100.00"), text)
  T.truthy(text:find("the true distribution %(.-%) 50.00; the best model here %(70.00%) closes 51%% of the gap"), text)
  T.truthy(text:find("1 of the 3 models is within 5%% of the unigram model's test perplexity or above it: it has"), text)
  -- Two languages: the best is the one closing the largest share of its own gap (20 of 21..10 closes 7%,
  -- 30 of 100..25 closes 87%), not the lowest perplexity.
  text = notes_of{{cell = {}, result = {test_ppl = 20, unigram_ppl = 21, bound_ppl = 10}},
                  {cell = {}, result = {test_ppl = 30, unigram_ppl = 100, bound_ppl = 25}}}
  T.truthy(text:find("has perplexity 21.00 to 100.00 %(the cells' corpora differ%)"), text)
  T.truthy(text:find("the best model here %(30.00%) closes 87%% of the gap"), text)
  T.truthy(text:find("1 of the 2 models is within 5%%"), text)
  -- Beyond the sampled bound (sampling noise): reached, not "103%"; worse than the unigram model: said so.
  T.truthy(notes_of{{cell = {}, result = {test_ppl = 49, unigram_ppl = 100, bound_ppl = 50}}}:find("reaches it, within"))
  text = notes_of{{cell = {}, result = {test_ppl = 101, unigram_ppl = 100, bound_ppl = 50}}}
  T.truthy(text:find("no model here beats the unigram model %(the best: 101.00%)"), text)
  T.truthy(text:find("The model is within 5%% of the unigram model's test perplexity or above it: it has learnt"), text)
  -- Real text: no bound; every model near the unigram model; a NaN (diverged) model is no model.
  text = notes_of{{cell = {}, result = {test_ppl = 110, unigram_ppl = 100}},
                  {cell = {}, result = {test_ppl = 99, unigram_ppl = 104}},
                  {cell = {}, result = {test_ppl = 0 / 0, unigram_ppl = 104}}}
  T.truthy(text:find("has perplexity 100.00 to 104.00 %(the cells' corpora differ%); for real text the true distribution's perplexity is unknown"), text)
  T.truthy(text:find("All 2 models are within 5%%"), text)
  -- Results from before the yardsticks were recorded are counted and said; no finished cell, no note.
  T.truthy(notes_of{{cell = {}, result = {test_ppl = 80}}}:find("no result here has a unigram_ppl %(results written before"))
  text = notes_of{{cell = {}, result = {test_ppl = 80}}, {cell = {}, result = {test_ppl = 70, unigram_ppl = 100}}}
  T.truthy(text:find("has perplexity 100.00; .* 1 of the 2 models' results have no unigram_ppl %(.*a run's summary%(%) has it"), text)
  T.eq(notes_of{{cell = {}}}, "")
  -- Plain rows (a custom recipe's run summaries) and another perplexity key.
  text = notes_of{{test_ppl = 99, unigram_ppl = 100}, {test_ppl = 50, unigram_ppl = 100}}
  T.truthy(text:find("has perplexity 100.00; for real text") and text:find("1 of the 2 models is within 5%%"), text)
  local valid = table.concat(lmkit.report.yardsticks({{valid_ppl = 99, test_ppl = 20, unigram_ppl = 100}}, "valid_ppl"), "\n")
  T.truthy(valid:find("The model is within 5%%"), valid)
  T.raises(function() lmkit.report.yardsticks("results") end, "a list of results or rows expected, got string")
  T.raises(function() lmkit.report.table{columns = {"x"}}:note_yardsticks({}, 3) end, "the perplexity's key, a string, expected, got number")
end)

T.run()
