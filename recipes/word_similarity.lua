-- Word similarity of the models' embeddings (thesis §5.3.1, Tables 5.2–5.4, Fig. 5.1–5.3): Spearman's
-- ρ between the cosine similarity of embedding rows and human scores on 13 benchmarks, per model.
--
--   lmkit run recipes/word_similarity.lua                               -- tiny scale: ptb-mini, small models
--   lmkit run recipes/word_similarity.lua --set heads=softmax,gss --set epochs=1 --set lines=500
--   lmkit run recipes/word_similarity.lua --set scale=paper --set dataset=wikitext-2 --set models=runs/chapter5-models
--
-- One cell per model (Softmax, SS, GSS(−1.5, 2.5), LMS-PLIF, MoS, MoC: the columns of Tables 5.3/5.4),
-- trained on real words (recipes/presets/chapter5.lua: ptb-mini at tiny scale). Its tied input
-- embedding is scored on the 13 benchmarks of <data>/word-similarity (lmkit.analysis.word_similarity:
-- pairs with a word outside the vocabulary are skipped, benchmark words lowercased as Faruqui &
-- Dyer's script does). The report: pairs skipped per benchmark (Table 5.2; ptb-mini's vocabulary has
-- 7,596 words, PTB's 10,000, so more pairs are skipped here), ρ per benchmark and model (Table
-- 5.3/5.4, with a grouped bar chart as Fig. 5.1/5.2), and on how many benchmarks each model has the
-- highest ρ (Fig. 5.3): among all models, among the d = 400 models, and MoS vs MoC.
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local chapter5 = require "presets.chapter5"

-- Thesis Table 5.2: word pairs per benchmark, and pairs with a word outside PTB's / WT2's vocabulary.
local PAPER_PAIRS = {
  {"WS-353", 353, 116, 48}, {"WS-353-SIM", 203, 66, 28}, {"WS-353-REL", 252, 80, 28}, {"RG-65", 65, 55, 20},
  {"MC-30", 30, 21, 4}, {"MTurk-287", 287, 146, 106}, {"MTurk-771", 771, 346, 99}, {"MEN", 3000, 1952, 863},
  {"YP-130", 130, 65, 43}, {"VERB-143", 144, 9, 0}, {"RW-STANFORD", 2034, 1889, 1605},
  {"SimVerb-3500", 3500, 1746, 1080}, {"SimLex-999", 999, 424, 106},
}
-- Spearman's ρ per benchmark for Softmax, SS, GSS, LMS-PLIF, MoS, MoC: thesis Table 5.3 (PTB) and
-- Table 5.4 (WT2).
local PAPER_MODELS = {"softmax", "ss", "gss", "plif", "mos", "moc"}
local PAPER_RHO = {
  ptb = {
    {"WS-353", 0.4160, 0.3968, 0.3949, 0.4167, 0.3609, 0.4025},
    {"WS-353-SIM", 0.4550, 0.4462, 0.4507, 0.4710, 0.3846, 0.4451},
    {"WS-353-REL", 0.3774, 0.3491, 0.3470, 0.3714, 0.3399, 0.3361},
    {"RG-65", 0.3697, 0.5030, 0.5152, 0.5152, 0.2485, 0.6121},
    {"MC-30", 0.3833, 0.4667, 0.3833, 0.3500, 0.1333, 0.4167},
    {"MTurk-287", 0.6086, 0.6153, 0.5918, 0.5843, 0.6171, 0.5857},
    {"MTurk-771", 0.4273, 0.4341, 0.4378, 0.4199, 0.3985, 0.4186},
    {"MEN", 0.4299, 0.4460, 0.4355, 0.4298, 0.3789, 0.4337},
    {"YP-130", 0.1734, 0.1657, 0.1190, 0.1279, 0.2817, 0.2780},
    {"VERB-143", 0.4388, 0.4350, 0.4599, 0.4534, 0.4672, 0.4358},
    {"RW-STANFORD", 0.4787, 0.4676, 0.4527, 0.4819, 0.4904, 0.4603},
    {"SimVerb-3500", 0.1185, 0.1212, 0.1260, 0.1161, 0.1133, 0.1331},
    {"SimLex-999", 0.2273, 0.2067, 0.2361, 0.2060, 0.1887, 0.1950},
  },
  ["wikitext-2"] = {
    {"WS-353", 0.4658, 0.4691, 0.4799, 0.4657, 0.4155, 0.4676},
    {"WS-353-SIM", 0.5925, 0.6007, 0.6077, 0.6022, 0.5551, 0.5872},
    {"WS-353-REL", 0.3759, 0.3905, 0.3933, 0.3654, 0.3238, 0.3777},
    {"RG-65", 0.5701, 0.5368, 0.5547, 0.5231, 0.4868, 0.5426},
    {"MC-30", 0.7308, 0.7627, 0.7442, 0.7247, 0.6050, 0.7490},
    {"MTurk-287", 0.5405, 0.5682, 0.5634, 0.5485, 0.5685, 0.5068},
    {"MTurk-771", 0.4483, 0.4559, 0.4581, 0.4450, 0.4129, 0.4425},
    {"MEN", 0.5895, 0.5883, 0.5965, 0.5830, 0.5399, 0.5659},
    {"YP-130", 0.1889, 0.2127, 0.2388, 0.2272, 0.1665, 0.2117},
    {"VERB-143", 0.4268, 0.4306, 0.4401, 0.4253, 0.4541, 0.4646},
    {"RW-STANFORD", 0.4565, 0.4698, 0.4582, 0.4521, 0.4487, 0.4781},
    {"SimVerb-3500", 0.1243, 0.1283, 0.1288, 0.1283, 0.1438, 0.1515},
    {"SimLex-999", 0.2432, 0.2337, 0.2276, 0.2325, 0.1783, 0.2175},
  },
}
-- The groups of Fig. 5.3: all models (c, d), the d = 400 models (b, f), MoS vs MoC (a, e).
local GROUPS = {
  {key = "best_all", label = "Best (all)", models = PAPER_MODELS},
  {key = "best_d400", label = "Best (d=400)", models = {"softmax", "ss", "gss", "plif"}},
  {key = "best_mixtures", label = "Best (MoS vs MoC)", models = {"mos", "moc"}},
}

-- rho[model key][benchmark] → for lmkit.analysis.similarity_wins: {{name=, spearman=}, ...} per model
-- (nan where missing: it never wins).
local function best_counts(keys, rho, benchmarks)
  local lists = {}
  for i, key in ipairs(keys) do
    lists[i] = {}
    for _, b in ipairs(benchmarks) do
      local v = rho[key] and rho[key][b]
      lists[i][#lists[i] + 1] = {name = b, spearman = v or 0 / 0}
    end
  end
  local _, best = lmkit.analysis.similarity_wins(lists)
  local counts = {}
  for i, key in ipairs(keys) do counts[key] = best[i] end
  return counts
end

return recipe.define{
  name = "word_similarity",
  description = "Word similarity of the embeddings on 13 benchmarks per model (thesis Tables 5.2–5.4, Fig. 5.1–5.3)",
  settings = chapter5.settings{
    heads = recipe.setting("softmax,ss,gss,plif,mos,moc", "Tables 5.3/5.4's models (presets/chapter5.lua)"),
    case = recipe.setting("lower", "how benchmark words meet the vocabulary: lower (the thesis), exact, fold"),
  },

  grid = function(cfg)
    return chapter5.model_cells(cfg)
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local model, summary, corpus = chapter5.train_model_cell(cell, ctx, true)
    local scores = lmkit.analysis.word_similarity(model, corpus.vocab, {
      dir = chapter5.data_dir(cfg.data, "word-similarity"), case = cfg.case})
    local benchmarks = {}
    for i, s in ipairs(scores) do
      benchmarks[i] = {name = s.name, pairs = s.pairs, kept = s.kept, skipped = s.skipped,
                       spearman = s.spearman == s.spearman and s.spearman or nil, p = s.p == s.p and s.p or nil}
    end
    return presets.with_yardsticks({valid_ppl = summary.valid_ppl, test_ppl = summary.test_ppl, vocab = corpus.vocab:size(),
                                    emb = lmkit.analysis.embedding(model):size(2), benchmarks = benchmarks}, corpus)
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local data = presets.data(cfg, {words = true})
    local names = {}
    for i, b in ipairs(lmkit.analysis.similarity_benchmarks()) do names[i] = b.name end
    local files = {}
    local function save(t, name)
      for _, ext in ipairs{"md", "csv", "tex"} do t:save(ctx.out .. "/" .. name .. "." .. ext) end
      files[#files + 1] = name
    end

    -- ρ per model key and benchmark, ours and the paper's.
    local ours, paper, first = {}, {}, nil
    for _, r in ipairs(results) do
      if r.result then
        first = first or r.result
        ours[r.cell.model] = {}
        for _, b in ipairs(r.result.benchmarks) do ours[r.cell.model][b.name] = b.spearman end
      end
    end
    for j, key in ipairs(PAPER_MODELS) do
      paper[key] = {}
      for _, row in ipairs(PAPER_RHO[cfg.dataset] or {}) do paper[key][row[1]] = row[j + 1] end
    end

    -- Table 5.2: pairs and pairs skipped (the vocabulary is the same for every model).
    local skipped_col = cfg.dataset == "ptb" and 3 or 4
    local pairs_table = lmkit.report.table{
      title = ("Word pairs per benchmark, and pairs with a word outside the vocabulary of %s%s (thesis Table 5.2)"):format(
        data.short, first and (", " .. first.vocab .. " words") or ""),
      data = data,
      columns = {
        {key = "name", label = "Benchmark"},
        {key = "pairs", label = "Pairs", paper = "paper_pairs"},
        {key = "skipped", label = "Not in vocabulary", paper = "paper_skipped"},
        {key = "kept", label = "Kept"},
      },
    }
    local paper_pairs = {}
    for _, p in ipairs(PAPER_PAIRS) do paper_pairs[p[1]] = p end
    for _, name in ipairs(names) do
      local row = {name = name, paper_pairs = paper_pairs[name][2], paper_skipped = paper_pairs[name][skipped_col]}
      for _, b in ipairs(first and first.benchmarks or {}) do
        if b.name == name then row.pairs, row.skipped, row.kept = b.pairs, b.skipped, b.kept end
      end
      pairs_table:add(row)
    end
    pairs_table:note(chapter5.switch_note(results, cfg))
    pairs_table:note_yardsticks(results)
    pairs_table:print()
    save(pairs_table, "pairs")

    -- Tables 5.3 / 5.4: ρ per benchmark, one paper | ours | Δ group per model.
    local columns = {{key = "name", label = "Benchmark"}}
    for _, r in ipairs(results) do
      local key = r.cell.model
      columns[#columns + 1] = {key = key, label = chapter5.model(key).label, digits = 4,
                               paper = paper[key] and function(row) return paper[key][row.name] end or false}
    end
    local rho = lmkit.report.table{
      title = ("Spearman's ρ on the word-similarity benchmarks, embeddings of models trained on %s (thesis Table %s)"):format(
        data.short, cfg.dataset == "ptb" and "5.3" or "5.4"),
      data = data,
      columns = columns,
    }
    for _, name in ipairs(names) do
      local row = {name = name}
      for _, r in ipairs(results) do row[r.cell.model] = ours[r.cell.model] and ours[r.cell.model][name] end
      rho:add(row)
    end
    rho:print()
    save(rho, "spearman")

    -- Fig. 5.3: benchmarks on which a model has the highest ρ, within each group of models that
    -- this run has (the paper's counts from its Table 5.3/5.4 among the same models; with all six,
    -- Fig. 5.3's). A group with a model still missing gets no count of ours.
    local keys = {}
    for _, r in ipairs(results) do keys[#keys + 1] = r.cell.model end
    local best_columns = {{key = "model", label = "Model"}}
    local best_rows = {}
    for _, key in ipairs(keys) do best_rows[key] = {model = chapter5.model(key).label} end
    for _, g in ipairs(GROUPS) do
      local members = {}
      for _, key in ipairs(g.models) do
        if best_rows[key] then members[#members + 1] = key end
      end
      if #members >= 2 then
        local complete = true
        for _, key in ipairs(members) do complete = complete and ours[key] ~= nil end
        best_columns[#best_columns + 1] = {key = g.key, label = g.label, paper = "paper_" .. g.key}
        local paper_best = PAPER_RHO[cfg.dataset] and best_counts(members, paper, names) or {}
        local our_best = complete and best_counts(members, ours, names) or {}  -- a missing model: no count
        for _, key in ipairs(members) do
          best_rows[key]["paper_" .. g.key] = paper_best[key]
          best_rows[key][g.key] = our_best[key]
        end
      end
    end
    if #best_columns > 1 then
      local best = lmkit.report.table{
        title = ("Benchmarks on which a model's embeddings have the highest ρ, models trained on %s (thesis Fig. 5.3; " ..
                 "ties count for each)"):format(data.short),
        data = data,
        columns = best_columns,
      }
      for _, key in ipairs(keys) do best:add(best_rows[key]) end
      best:print()
      save(best, "best")
    end

    -- Fig. 5.1 / 5.2: ρ per benchmark, one bar per model.
    local bars = {}
    for _, key in ipairs(keys) do
      if ours[key] then bars[#bars + 1] = {label = chapter5.model(key).label, values = ours[key]} end
    end
    if #bars > 0 then
      lmkit.plot.word_similarity{out = ctx.out .. "/spearman.png", benchmarks = names, models = bars,
                                 title = ("Word similarity, models trained on %s"):format(data.short)}
    end
    print(("report files: %s/{%s}.{md,csv,tex}%s"):format(ctx.out, table.concat(files, ","),
      #bars > 0 and (", plot: " .. ctx.out .. "/spearman.png") or ""))
  end,
}
