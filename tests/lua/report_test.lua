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

T.run()
