-- recipes/presets: the paper's hyperparameters (SPEC.md §2, thesis Table 4.3) and the scales.
local T = require "lmkit.testing"
local presets = require "presets.awd_lstm"

T.test("paper scale is Table 4.3", function()
  local ptb = presets.resolve{family = "awd", dataset = "ptb", scale = "paper"}
  T.eq({ptb.model.dropouti, ptb.model.dropouth, ptb.model.emb, ptb.model.nhid, ptb.model.nhidlast},
       {0.4, 0.3, 400, 1150, 400})
  T.eq({ptb.train.lr, ptb.train.batch_size, ptb.train.seed, ptb.train.epochs}, {20, 20, 141, 1000})
  T.eq({ptb.model.wdrop, ptb.model.dropoute, ptb.model.dropout}, {0.5, 0.1, 0.4})
  T.eq({ptb.train.wdecay, ptb.train.bptt, ptb.train.clip}, {1.2e-6, 70, 0.25})
  local wt2 = presets.resolve{family = "awd", dataset = "wikitext-2", scale = "paper"}
  T.eq({wt2.model.dropouti, wt2.model.dropouth, wt2.train.lr, wt2.train.batch_size, wt2.train.seed}, {0.65, 0.2, 30, 80, 1881})
  local mos = presets.resolve{family = "mos", dataset = "ptb", scale = "paper"}
  T.eq({mos.model.emb, mos.model.nhid, mos.model.nhidlast, mos.head.K, mos.head.dropoutl}, {280, 960, 620, 15, 0.29})
  T.eq({mos.model.dropouth, mos.train.lr, mos.train.batch_size, mos.train.seed}, {0.225, 20, 12, 28})
  local mos_wt2 = presets.resolve{family = "mos", dataset = "wikitext-2", scale = "paper"}
  T.eq({mos_wt2.model.emb, mos_wt2.model.nhidlast, mos_wt2.train.epochs, mos_wt2.train.batch_size}, {300, 650, 500, 15})
  T.eq(ptb.corpus, {name = "ptb", kind = "files"})
end)

T.test("the paper's PTB Softmax model has the paper's parameter count", function()
  local ptb = presets.resolve{family = "awd", dataset = "ptb", scale = "paper"}
  local o = {vocab_size = 10000}
  for k, v in pairs(ptb.model) do o[k] = v end
  T.eq(lmkit.model(o):parameter_count().total, 24221600)
end)

T.test("LSTM layer parameters by formula equal the model's; Softmax‡'s proportional dropouts", function()
  for _, m in ipairs{{emb = 5, nhid = 7, nhidlast = 3, nlayers = 3}, {emb = 4, nhid = 6, nhidlast = 4, nlayers = 1},
                     {emb = 6, nhid = 9, nhidlast = 6, nlayers = 2}} do
    local layers = presets.lstm_parameters(m)
    local total = 0
    for _, n in ipairs(layers) do total = total + n end
    T.eq(total, lmkit.model{vocab_size = 11, emb = m.emb, nhid = m.nhid, nhidlast = m.nhidlast, nlayers = m.nlayers,
                            tie_weights = m.emb == m.nhidlast}:parameter_count().lstm)
  end
  -- Softmax‡ of thesis §5.7.2: Softmax† sizes (emb = nhidlast = 280, nhid 960) have 16.35M parameters
  -- (10,000 words: embedding, decoder bias, LSTMs) against the baseline's 24.22M.
  local base = presets.resolve{family = "awd", dataset = "ptb", scale = "paper"}.model
  local small = {emb = 280, nhid = 960, nhidlast = 280, nlayers = 3}
  local layers = presets.lstm_parameters(small)
  T.eq(10000 * 280 + 10000 + layers[1] + layers[2] + layers[3], 16350800)
  local rates, r = presets.proportional_dropouts(base, small)
  T.near(r.embedding, 0.7, 1e-12)
  T.near(rates.dropouti, 0.28, 1e-12)
  T.near(rates.dropoute, 0.07, 1e-12)
  T.near(r.last, (4 * 280 * (960 + 280) + 8 * 280) / (4 * 400 * (1150 + 400) + 8 * 400), 1e-12)
  T.near(rates.dropout, 0.4 * r.last, 1e-12)
  T.near(r.recurrent, (2 * 4 * 960 * 960 + 4 * 280 * 280) / (2 * 4 * 1150 * 1150 + 4 * 400 * 400), 1e-12)
  T.truthy(rates.dropouth < base.dropouth and rates.wdrop < base.wdrop)
  -- a one-layer model has no dropout between layers: its rate is kept
  local one = presets.proportional_dropouts(base, {emb = 200, nhid = 500, nhidlast = 200, nlayers = 1})
  T.eq(one.dropouth, base.dropouth)
end)

T.test("seed tables carry the thesis's rank-sum and the AAAI paper's unpaired t-test", function()
  local lineup = require "presets.lineup"
  local row = lineup.add_p({}, {1, 2, 3, 4}, {3, 4, 5, 6})
  -- Student's t = −2.19089 on 6 degrees of freedom: two-sided p = 0.0709877 (textbook t distribution).
  T.near(row.t_p, 0.0709877, 1e-6)
  T.truthy(row.p > 0 and row.p < 1)
  T.eq(lineup.add_p({}, {1}, {2, 3}).t_p, nil)  -- one value on a side: the tests say nothing
  local keys = {}
  for _, c in ipairs(lineup.ranksum_columns()) do keys[c.key] = true end
  T.truthy(keys.t_p and keys.t_p_paper and keys.p and keys.p_paper)
end)

T.test("tiny scale is small and trains", function()
  local cfg = presets.resolve{family = "mos", dataset = "ptb", scale = "tiny"}
  T.eq(cfg.corpus.kind, "synthetic")
  T.eq(cfg.model.nhid, 96)
  T.eq(cfg.head.K, 3)
  T.truthy(cfg.model.nhidlast ~= cfg.model.emb)
  T.eq(cfg.train.lr, 20)  -- the paper's lr stays
  local corpus = presets.load_corpus{corpus = {kind = "synthetic", vocab = 50, states = 8, dim = 4, train = 500, valid = 100, test = 100}}
  T.eq(corpus.train:size(1), 500)
end)

T.test("the data a scale trains on is labelled honestly; only the paper's corpus compares with the paper", function()
  local tiny = presets.data{dataset = "ptb", scale = "tiny"}
  T.eq(tiny, {label = "a synthetic language standing in for PTB (tiny scale)", short = "synthetic stand-in for PTB",
              paper_data = false, paper_label = "PTB"})
  local words = presets.data({dataset = "wikitext-2", scale = "tiny", lines = 300}, {words = true})
  T.eq(words.short, "WikiText-2-mini")
  T.truthy(words.label:find("its first 300 lines", 1, true))
  T.eq(words.paper_data, false)
  T.eq(presets.data{dataset = "ptb", scale = "paper"}, {label = "PTB (paper scale)", short = "PTB", paper_data = true,
                                                       paper_label = "PTB"})
  T.eq(presets.data{dataset = "ptb", scale = "small"}.paper_data, true)
  -- In a report: the paper's column stays, the difference goes.
  local t = lmkit.report.table{columns = {{key = "rank", label = "Rank", paper = {402}}}, rows = {{rank = 25}}, data = tiny}
  T.eq(t:markdown():find("Δ |", 1, true), nil)
  T.truthy(t:markdown():find("Rank paper", 1, true))
end)

T.test("parameter counts in millions are truncated as in the thesis's tables", function()
  local measure = require "presets.measure"
  T.eq(measure.millions(19057620 / 1e6), "19.05")
  T.eq(measure.millions(21500620 / 1e6), "21.50")
  T.eq(measure.millions(19.05), "19.05")  -- the paper's own value prints as itself
  T.eq(measure.millions(0.071234), "0.07")
end)

T.test("seed grids: the reported seed first; per head, independent sampled seeds", function()
  local lineup = require "presets.lineup"
  local cfg = {scale = "tiny", dataset = "ptb", seeds = 4}
  local shared = lineup.seed_cells({"softmax", "gss"}, cfg)
  local own = lineup.seed_cells({"softmax", "gss"}, cfg, {per_head = true})
  local function seeds_of(cells, head)
    local s = {}
    for _, c in ipairs(cells) do if c.head == head then s[#s + 1] = c.seed end end
    return s
  end
  T.eq(seeds_of(shared, "softmax"), seeds_of(shared, "gss"))
  T.eq(seeds_of(own, "softmax")[1], 141)
  T.eq(seeds_of(own, "gss")[1], 141)
  local a, b = seeds_of(own, "softmax"), seeds_of(own, "gss")
  for i = 2, 4 do T.truthy(a[i] ~= b[i], "sampled seed " .. i .. " differs between heads") end
  T.eq(seeds_of(lineup.seed_cells({"gss"}, cfg, {per_head = true}), "gss"), b)  -- reruns find the same cells
end)

T.test("each recipe's switch: ET at the scale's epoch (paper 200), NT, or the cell's own", function()
  T.eq(presets.train_overrides{scale = "paper", switch = "et", epochs = 0}, {switch = "et", switch_epoch = 200})
  T.eq(presets.train_overrides{scale = "small", switch = "et", epochs = 0}, {switch = "et", switch_epoch = 25})
  T.eq(presets.train_overrides{scale = "tiny", switch = "et", epochs = 0}, {switch = "et", switch_epoch = 2})
  T.eq(presets.train_overrides{scale = "tiny", switch = "et", epochs = 6}, {epochs = 6, switch = "et", switch_epoch = 5})
  T.eq(presets.train_overrides{scale = "paper", switch = "et", switch_epoch = 150}.switch_epoch, 150)
  T.eq(presets.train_overrides{scale = "paper", switch = "nt"}, {switch = "nt"})
  T.eq(presets.train_overrides({scale = "paper", switch = "et"}, {switch = "nt"}), {switch = "nt"})
  T.truthy(presets.switch_note{scale = "paper", switch = "et"}:find("ET-ASGD, averaging after epoch 200", 1, true))
  -- The recipes whose tables the thesis trained with ET-ASGD (SPEC §2) say so in their settings.
  local recipe_switch = {gss_grid = "et", compare_heads = "et", frozen_plif = "et", fair_mos_softmax = "et",
                         flooding = "et", mos_mixtures = "nt", mos_dropout = "nt"}
  for name, switch in pairs(recipe_switch) do
    local r = dofile(assert(package.searchpath(name, package.path)))  -- lmkit's recipes folder is on the path
    T.eq(r.settings.switch, switch, name)
  end
end)

T.test("ranks use the thesis's contexts by default: all of PTB's test split, WT2's first 33,320", function()
  local measure = require "presets.measure"
  T.eq(measure.contexts(-1, "ptb"), nil)
  T.eq(measure.contexts(-1, "wikitext-2"), 33320)  -- 476 windows of 70 at batch size 1
  T.eq(measure.contexts(0, "wikitext-2"), nil)
  for _, name in ipairs{"gss_grid", "press_robustness", "mos_mixtures", "mos_dropout", "flooding"} do
    T.eq(dofile(assert(package.searchpath(name, package.path))).settings.max_contexts, -1, name)
  end
end)

T.test("unknown names are errors that list the known ones", function()
  T.raises(function() presets.resolve{dataset = "ptb2"} end, "datasets: ptb, wikitext-2")
  T.raises(function() presets.resolve{scale = "huge"} end, "tiny, small or paper")
end)

T.test("integer list settings: a string, a number or a table; bad items named", function()
  local lineup = require "presets.lineup"
  T.eq(lineup.integers("8,16, 24", "dims"), {8, 16, 24})
  T.eq(lineup.integers(8, "dims"), {8})
  T.eq(lineup.integers({2, 4}, "dims"), {2, 4})
  T.raises(function() lineup.integers("8,x", "hidden_size: dims") end, "hidden_size: dims must list positive integers, got 'x'")
  T.raises(function() lineup.integers("0", "dims") end, "got '0'")
  T.raises(function() lineup.integers("", "dims") end, "dims is empty")
end)

T.test("fair_mos_softmax's matched Softmax: the thesis's d = 340 at paper scale, the closest count elsewhere", function()
  local fair = require "presets.fair_mos"
  local mos = presets.resolve{family = "mos", dataset = "ptb", scale = "paper"}
  local d0 = fair.base_d({d = 0}, mos)
  T.eq(d0, 280)
  -- §5.7.2: "17.56M" for Softmax♣/★ at d = 340, "17.53M" for MoS.
  local d, mos_params = fair.softmax_width({scale = "paper", d = 0}, mos, 10000, d0)
  T.eq(d, 340)
  T.eq(fair.count(mos, 10000, 340, "softmax"), 17560880)
  T.eq(mos_params, 17535200)  -- the thesis's 17.53M, truncated to two decimals
  -- The closest-count rule alone would pick 339 (17,540,476), one below the thesis.
  T.eq(fair.closest_width(mos, 10000, d0), 339)
  T.eq(fair.count(mos, 10000, 339, "softmax"), 17540476)
  -- Tiny scale: the rule, as the thesis gives no width there.
  local tiny = presets.resolve{family = "mos", dataset = "ptb", scale = "tiny"}
  local tiny_d0 = fair.base_d({d = 0}, tiny)
  local tiny_d, tiny_target = fair.softmax_width({scale = "tiny", d = 0}, tiny, 200, tiny_d0)
  T.eq(tiny_d, (fair.closest_width(tiny, 200, tiny_d0)))
  for _, other in ipairs({tiny_d - 1, tiny_d + 1}) do
    if other >= tiny_d0 then
      T.truthy(math.abs(fair.count(tiny, 200, other, "softmax") - tiny_target) >=
               math.abs(fair.count(tiny, 200, tiny_d, "softmax") - tiny_target))
    end
  end
end)

T.test("chapter 5's recipes analyse a model imported from a reference checkpoint instead of training it", function()
  local chapter5 = require "presets.chapter5"
  local p = presets.resolve{family = "awd", dataset = "ptb", scale = "tiny"}
  local corpus = presets.load_corpus{corpus = {kind = "synthetic", vocab = 40, states = 8, dim = 4, train = 300, valid = 120, test = 90}}
  local dir = os.tmpname()
  os.remove(dir)
  lmkit.fs.mkdir(dir)
  lmkit.seed(3)
  local own = lmkit.model{vocab_size = 40, emb = 6, nhid = 9, nhidlast = 6, nlayers = 2}
  own:export(dir .. "/softmax.pt", {format = "awd-lstm"})
  local cfg = {import = "softmax=" .. dir .. "/softmax.pt", seed = 0, models = "", lines = 0, data = "", dataset = "ptb",
               scale = "tiny", epochs = 0}
  local model, summary = chapter5.train{entry = chapter5.model("softmax"), cfg = cfg, dir = dir, corpus = corpus}
  T.eq(summary.status, "imported")
  local test = lmkit.evaluate(own, corpus.test, {batch_size = p.train.test_batch_size, bptt = p.train.bptt})
  T.near(summary.test_ppl, test.ppl, 1e-9)
  T.truthy(model:log_probs(corpus.test:view(-1, 1):narrow(1, 1, 5)) == own:log_probs(corpus.test:view(-1, 1):narrow(1, 1, 5)))
  local note = chapter5.switch_note({{cell = {model = "softmax"}}, {cell = {model = "gss"}}}, cfg)
  T.truthy(note:find("imported from the reference code's checkpoint " .. dir .. "/softmax.pt, not trained here", 1, true), note)
  local mos_note = chapter5.switch_note({{cell = {model = "mos"}}}, {import = "mos=m.pt", import_floor = 0, dataset = "ptb",
                                                                    scale = "tiny", epochs = 0})
  T.truthy(mos_note:find("log p exactly (the MoS code's log(p + 1e-8): --set import_floor=1e-8)", 1, true), mos_note)
  mos_note = chapter5.switch_note({{cell = {model = "mos"}}}, {import = "mos=m.pt", import_floor = 1e-8, dataset = "ptb",
                                                               scale = "tiny", epochs = 0})
  T.truthy(mos_note:find("log(p + 1e-08) as the MoS code computes it", 1, true), mos_note)
  T.raises(function() chapter5.imports{import = "gss=x.pt"} end, "the thesis's code's checkpoint of it: --set import=gss=thesis:PATH")
  -- The thesis's code's checkpoints: any model, its --top_model said for it.
  T.eq(chapter5.imports{import = "gss=thesis:g.pt, mos=m.pt"}.gss, "thesis:g.pt")
  T.raises(function() chapter5.imports{import = "gss=thesis:"} end, "is not key=PATH or key=thesis:PATH")
  local thesis_dir = os.getenv("LMKIT_SOURCE_DIR") .. "/tests/runtime/models/files/"
  local thesis_cfg = {import = "gss=thesis:" .. thesis_dir .. "thesis_smax.pt", seed = 0, models = "", lines = 0, data = "",
                      dataset = "ptb", scale = "tiny", epochs = 0}
  local thesis_corpus = presets.load_corpus{corpus = {kind = "synthetic", vocab = 23, states = 8, dim = 4, train = 300, valid = 120, test = 90}}
  local gss_model, gss_summary = chapter5.train{entry = chapter5.model("gss"), cfg = thesis_cfg, dir = dir, corpus = thesis_corpus}
  T.eq(gss_summary.status, "imported")
  local gss_config = lmkit.json_decode(gss_model:config())
  T.eq(gss_config.head.kind, "gss")
  T.eq(gss_config.head.c, -1.5)  -- §4.4.1's (c, k) on PTB
  T.eq(gss_config.head.k, 2.5)
  T.raises(function() chapter5.imports{import = "mos"} end, "is not key=PATH")
  T.raises(function() chapter5.imports{import = "mosx=a.pt"} end, "no model 'mosx'")
  local small = presets.load_corpus{corpus = {kind = "synthetic", vocab = 30, states = 8, dim = 4, train = 300, valid = 120, test = 90}}
  T.raises(function() chapter5.train{entry = chapter5.model("softmax"), cfg = cfg, dir = dir, corpus = small} end,
           "has a vocabulary of 40 words, the corpus 30")
  os.remove(dir .. "/softmax.pt")
  os.remove(dir)
end)

T.test("init_from of a grid: one model for every cell, or each cell's own cell of a recipe folder", function()
  T.eq(presets.train_overrides({scale = "tiny", init_from = "runs/a"}).init_from, "runs/a")
  T.eq(presets.train_overrides({scale = "tiny", init_from = ""}).init_from, nil)
  T.eq(presets.train_overrides({scale = "tiny", init_from = "runs/a"}, {init_from = "own"}).init_from, "own")
  T.eq(presets.cell_init_from("", "out/cells/x/run"), nil)
  T.eq(presets.cell_init_from("runs/a/best.ckpt", "out/cells/x/run"), "runs/a/best.ckpt")
  local folder = os.tmpname()
  os.remove(folder)
  lmkit.fs.mkdir(folder .. "/cells/head=mos,seed=2/run")
  lmkit.write_file(folder .. "/recipe.json", "{}")
  lmkit.write_file(folder .. "/cells/head=mos,seed=2/run/best.ckpt", "")
  -- A cell whose run has a best.ckpt but no result (still training, preempted) is not finished.
  T.raises(function() presets.cell_init_from(folder, "new/cells/head=mos,seed=2/run") end,
           "that recipe folder has no finished cell head=mos,seed=2 (" .. folder .. "/cells/head=mos,seed=2/result.json")
  lmkit.write_file(folder .. "/cells/head=mos,seed=2/result.json", "{}")
  T.eq(presets.cell_init_from(folder, "new/cells/head=mos,seed=2/run"), folder .. "/cells/head=mos,seed=2/run")
  T.eq(presets.cell_init_from(folder .. "//", "new/cells/head=mos,seed=2/run"), folder .. "/cells/head=mos,seed=2/run")
  T.raises(function() presets.cell_init_from(folder, "new/cells/head=mos,seed=3/run") end,
           "that recipe folder has no finished cell head=mos,seed=3")
  T.raises(function() presets.cell_init_from(folder, "runs/mine") end, "is a recipe's folder, but this run (runs/mine) is no recipe cell's")
  -- A cell that has begun continues from its own state: the source may be gone.
  lmkit.fs.mkdir(folder .. "/resumed/cells/head=mos,seed=3/run")
  lmkit.write_file(folder .. "/resumed/cells/head=mos,seed=3/run/state.ckpt", "")
  T.eq(presets.cell_init_from(folder, folder .. "/resumed/cells/head=mos,seed=3/run"), folder .. "/cells/head=mos,seed=3/run")
  os.execute("rm -rf '" .. folder .. "'")
end)

T.test("a synthetic corpus's yardsticks: the unigram model's closed form and the language's bound", function()
  local p = presets.resolve{family = "awd", dataset = "ptb", scale = "tiny"}
  local corpus, language = presets.load_corpus(p)
  local y = presets.yardsticks(corpus)
  -- Add-½ counts by hand, in Lua, against the runtime's float64 sum.
  local counts, train = {}, corpus.train:totable()
  for _, w in ipairs(train) do counts[w] = (counts[w] or 0) + 1 end
  local nll, test = 0, corpus.test:totable()
  for _, w in ipairs(test) do nll = nll - math.log(((counts[w] or 0) + 0.5) / (#train + 0.5 * corpus.vocab:size())) end
  T.near(y.unigram_ppl, math.exp(nll / #test), 1e-9 * y.unigram_ppl)
  T.near(y.bound_ppl, language:best_perplexity(200000), 1e-12)
  T.truthy(y.bound_ppl < y.unigram_ppl)
  T.raises(function() corpus:unigram_perplexity("dev") end, "got \"dev\"")
end)


T.test("transformer_lineup: better or worse is read from the sampled seeds its p-value compares", function()
  local def = dofile(assert(package.searchpath("transformer_lineup", package.path)))
  -- The configuration's own seed (seed_index 1) is left out of the p-value. Here it alone makes
  -- Softmax's mean over every seed the worst (1000) and MoS's the best (50); over the sampled seeds,
  -- the ones the rank-sum test compares, every MoS value lies above every Softmax one (p ≈ 0.02).
  local ppl = {softmax = {1000, 100, 101, 102, 103}, mos = {50, 110, 111, 112, 113}}
  local results = {}
  for _, head in ipairs{"softmax", "mos"} do
    for i, value in ipairs(ppl[head]) do
      results[#results + 1] = {cell = {head = head, seed = 100 + i, seed_index = i},
                               result = {train_ppl = value, valid_ppl = value, test_ppl = value, epochs = 1, params = 10}}
    end
  end
  local out = os.tmpname()
  os.remove(out)
  local cfg = {scale = "tiny", dataset = "ptb", epochs = 0, seeds = 5, heads = "softmax,mos", rank = false, data = ""}
  local printed = {}
  local print_before = print
  print = function(...) printed[#printed + 1] = table.concat({...}, "\t") end
  local ok, err = pcall(def.report, results, {cfg = cfg, out = out})
  print = print_before
  T.truthy(ok, err)
  local text = table.concat(printed, "\n")
  local csv = T.read_file(out .. "/report.csv")
  local mos_row = assert(csv:match("\n(MoS[^\n]*)"), "no MoS row in report.csv: " .. csv)
  T.truthy(mos_row:find(",worse,", 1, true), mos_row)
  T.truthy(not mos_row:find("better", 1, true), mos_row)
  T.truthy(text:find("report files: " .. out, 1, true), text)
  local md = T.read_file(out .. "/report.md")
  T.truthy(md:find("differs for MoS significantly worse", 1, true), md)
  for _, ext in ipairs{"md", "csv", "tex"} do os.remove(out .. "/report." .. ext) end
  os.remove(out)
end)

T.test("the corpus setting puts any scale on the real words: the mini protocol or the full corpus", function()
  local lineup = require "presets.lineup"
  T.eq(presets.resolve{scale = "tiny"}.corpus.kind, "synthetic")
  local mini = lineup.preset("mos", {dataset = "wikitext-2", scale = "tiny", corpus = "mini"})
  T.eq(mini.corpus, {name = "wikitext-2", kind = "files", protocol = "mini"})
  T.eq(mini.model.emb, presets.resolve{family = "mos", scale = "tiny"}.model.emb, "the scale's model stays")
  T.eq(presets.resolve{scale = "paper", corpus = "full"}.corpus, {name = "ptb", kind = "files", protocol = "full"})
  T.raises(function() presets.resolve{corpus = "huge"} end, "unknown corpus 'huge'")
  -- What the reports say the numbers were measured on: never the paper's data at tiny scale.
  local data = presets.data{dataset = "ptb", scale = "tiny", corpus = "mini"}
  T.eq({data.short, data.paper_data}, {"PTB-mini", false})
  T.truthy(data.label:find("PTB's mini protocol (trained on its validation split), tiny scale", 1, true), data.label)
  T.eq(presets.data{dataset = "ptb", scale = "tiny", corpus = "full"}.paper_data, false)
  T.eq(presets.data{dataset = "ptb", scale = "paper", corpus = "full"}.paper_data, true)
  T.eq(presets.data{dataset = "ptb", scale = "small", corpus = "mini"}.paper_data, false)
  T.eq(presets.data{dataset = "ptb", scale = "tiny"}.short, "synthetic stand-in for PTB")
  -- The line-up recipes declare it.
  for _, name in ipairs{"compare_heads", "frozen_plif", "fair_mos_softmax", "mixtape", "transformer_lineup", "asgd_switch",
                        "gss_grid", "flooding"} do
    local r = dofile(assert(package.searchpath(name, package.path)))
    T.eq(r.settings.corpus, "", name)
  end
end)

T.run()
