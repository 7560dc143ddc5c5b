-- Next-word predictions for chosen contexts (thesis §5.2, Table 5.1): the top-5 next words and
-- their probabilities for the six PTB test contexts Yang et al. chose, per model.
--
--   lmkit run recipes/qualitative.lua                               -- tiny scale: ptb-mini, small models
--   lmkit run recipes/qualitative.lua --set heads=softmax,mos --set epochs=1 --set lines=500
--   lmkit run recipes/qualitative.lua --set scale=paper --set models=runs/chapter5-models
--
-- One cell per model: Softmax, SS, GSS(−1.5, 2.5), LMS-PLIF, MoS, MoC with ET-ASGD, and MoS†, MoC†
-- with NT-ASGD (as the thesis, to compare with Yang et al.'s MoS‡ and MoC‡, whose published
-- predictions the table also shows). Each cell trains its model on real words
-- (recipes/presets/chapter5.lua: ptb-mini at tiny scale) and reads each context where it occurs in
-- the test stream, off one evaluation of it with batch size 1, bptt 70 and the hidden state carried
-- from the start — as the thesis did, so that all the text before a context shapes the prediction
-- (lmkit.analysis.top_k_contexts with stream = corpus.test). A context the stream lacks (a test
-- split cut by --set lines=N) is read from a zero state, and the report says which were.
-- Beside the top-5 the report gives P(true next word), its rank among all words, and how many
-- contexts have the true next word among the top 5 (paper | ours).
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local chapter5 = require "presets.chapter5"

-- Thesis Table 5.1, per context (in recipes/data/table5_1_contexts.txt's order) and model: the
-- top-5 next words with their probabilities. MoS‡ and MoC‡ are Yang et al.'s published models
-- (no counterpart is trained here). "mr ." in MoC†'s row of context #4 is the PTB token "mr.".
local PAPER = {
  { -- context #1, next word "tons"
    Softmax = {{"tons", 0.90}, {"million", 0.04}, {"metric", 0.02}, {"trillion", 0.01}, {"billion", 0.01}},
    SS = {{"tons", 0.85}, {"million", 0.04}, {"metric", 0.02}, {"billion", 0.02}, {"units", 0.01}},
    GSS = {{"tons", 0.68}, {"units", 0.09}, {"million", 0.04}, {"billion", 0.03}, {"trillion", 0.03}},
    ["LMS-PLIF"] = {{"tons", 0.83}, {"metric", 0.11}, {"million", 0.02}, {"units", 0.01}, {"trillion", 0.01}},
    MoS = {{"tons", 0.40}, {"million", 0.26}, {"billion", 0.12}, {"<eos>", 0.05}, {"units", 0.05}},
    MoC = {{"tons", 0.36}, {"million", 0.27}, {"billion", 0.13}, {"units", 0.05}, {"metric", 0.04}},
    ["MoS†"] = {{"million", 0.28}, {"billion", 0.23}, {"tons", 0.19}, {"trillion", 0.10}, {"<eos>", 0.05}},
    ["MoC†"] = {{"million", 0.30}, {"tons", 0.30}, {"billion", 0.17}, {"<eos>", 0.04}, {"trillion", 0.03}},
    ["MoS‡"] = {{"million", 0.38}, {"tons", 0.24}, {"billion", 0.09}, {"barrels", 0.06}, {"ounces", 0.04}},
    ["MoC‡"] = {{"billion", 0.39}, {"million", 0.36}, {"trillion", 0.05}, {"<eos>", 0.04}, {"N", 0.03}},
  },
  { -- context #2, next word "a"
    Softmax = {{"million", 0.32}, {"billion", 0.30}, {"<eos>", 0.04}, {"to", 0.03}, {"in", 0.03}},
    SS = {{"<eos>", 0.28}, {"a", 0.11}, {"million", 0.11}, {"to", 0.07}, {"far", 0.05}},
    GSS = {{"<eos>", 0.18}, {"and", 0.13}, {"million", 0.10}, {"to", 0.08}, {"a", 0.06}},
    ["LMS-PLIF"] = {{"a", 0.17}, {"<eos>", 0.14}, {"million", 0.07}, {"to", 0.07}, {"far", 0.06}},
    MoS = {{"million", 0.28}, {"billion", 0.15}, {"<eos>", 0.14}, {"a", 0.10}, {"to", 0.05}},
    MoC = {{"<eos>", 0.12}, {"to", 0.11}, {"million", 0.10}, {"in", 0.08}, {"a", 0.05}},
    ["MoS†"] = {{"million", 0.22}, {"a", 0.13}, {"<eos>", 0.12}, {"billion", 0.11}, {"to", 0.07}},
    ["MoC†"] = {{"million", 0.22}, {"to", 0.11}, {"<eos>", 0.08}, {"in", 0.07}, {"billion", 0.06}},
    ["MoS‡"] = {{"<eos>", 0.36}, {"a", 0.13}, {"to", 0.07}, {"for", 0.07}, {"and", 0.06}},
    ["MoC‡"] = {{"million", 0.39}, {"billion", 0.36}, {"<eos>", 0.05}, {"to", 0.04}, {"of", 0.03}},
  },
  { -- context #3, next word "african"
    Softmax = {{"africa", 0.20}, {"african", 0.11}, {"to", 0.08}, {"korea", 0.05}, {"korean", 0.05}},
    SS = {{"africa", 0.15}, {"african", 0.14}, {"korea", 0.08}, {"korean", 0.05}, {"<unk>", 0.05}},
    GSS = {{"africa", 0.18}, {"korean", 0.10}, {"african", 0.09}, {"and", 0.06}, {"korea", 0.04}},
    ["LMS-PLIF"] = {{"africa", 0.19}, {"korea", 0.05}, {"african", 0.05}, {"and", 0.05}, {"korean", 0.04}},
    MoS = {{"africa", 0.15}, {"african", 0.11}, {"korea", 0.08}, {"of", 0.06}, {"and", 0.05}},
    MoC = {{"bloc", 0.19}, {"africa", 0.14}, {"and", 0.07}, {"korea", 0.06}, {"african", 0.04}},
    ["MoS†"] = {{"african", 0.16}, {"africa", 0.13}, {"the", 0.08}, {"korea", 0.06}, {"<unk>", 0.04}},
    ["MoC†"] = {{"and", 0.11}, {"africa", 0.10}, {"bloc", 0.07}, {"korea", 0.06}, {"<unk>", 0.05}},
    ["MoS‡"] = {{"africa", 0.15}, {"african", 0.15}, {"<eos>", 0.14}, {"korea", 0.08}, {"korean", 0.05}},
    ["MoC‡"] = {{"<eos>", 0.38}, {"and", 0.08}, {"of", 0.06}, {"or", 0.05}, {"<unk>", 0.04}},
  },
  { -- context #4, next word "ual"
    Softmax = {{"the", 0.17}, {"<unk>", 0.05}, {"that", 0.04}, {"they", 0.03}, {"it", 0.02}},
    SS = {{"the", 0.12}, {"that", 0.06}, {"they", 0.05}, {"<unk>", 0.03}, {"then", 0.03}},
    GSS = {{"the", 0.17}, {"that", 0.04}, {"they", 0.04}, {"it", 0.03}, {"<unk>", 0.03}},
    ["LMS-PLIF"] = {{"the", 0.10}, {"<unk>", 0.05}, {"that", 0.03}, {"they", 0.02}, {"even", 0.02}},
    MoS = {{"the", 0.12}, {"<unk>", 0.08}, {"ual", 0.08}, {"that", 0.03}, {"coniston", 0.02}},
    MoC = {{"the", 0.22}, {"<unk>", 0.03}, {"they", 0.03}, {"a", 0.03}, {"then", 0.02}},
    ["MoS†"] = {{"the", 0.10}, {"<unk>", 0.07}, {"ual", 0.06}, {"that", 0.03}, {"they", 0.02}},
    ["MoC†"] = {{"the", 0.23}, {"<unk>", 0.03}, {"mr.", 0.02}, {"ual", 0.03}, {"that", 0.02}},
    ["MoS‡"] = {{"the", 0.14}, {"that", 0.07}, {"ual", 0.07}, {"<unk>", 0.03}, {"it", 0.02}},
    ["MoC‡"] = {{"the", 0.10}, {"<unk>", 0.06}, {"that", 0.05}, {"in", 0.02}, {"it", 0.02}},
  },
  { -- context #5, next word "conspiracy"
    Softmax = {{"<unk>", 0.54}, {"political", 0.02}, {"violence", 0.01}, {"peace", 0.01}, {"conspiracy", 0.01}},
    SS = {{"<unk>", 0.45}, {"political", 0.02}, {"other", 0.01}, {"violence", 0.01}, {"incest", 0.01}},
    GSS = {{"<unk>", 0.45}, {"other", 0.01}, {"political", 0.01}, {"incest", 0.01}, {"civil", 0.01}},
    ["LMS-PLIF"] = {{"<unk>", 0.50}, {"political", 0.01}, {"a", 0.01}, {"the", 0.01}, {"incest", 0.01}},
    MoS = {{"<unk>", 0.26}, {"violence", 0.03}, {"other", 0.03}, {"the", 0.03}, {"a", 0.02}},
    MoC = {{"<unk>", 0.65}, {"other", 0.02}, {"incest", 0.01}, {"acts", 0.01}, {"the", 0.01}},
    ["MoS†"] = {{"<unk>", 0.21}, {"acts", 0.03}, {"the", 0.03}, {"other", 0.03}, {"incest", 0.02}},
    ["MoC†"] = {{"<unk>", 0.38}, {"other", 0.04}, {"the", 0.03}, {"in", 0.01}, {"that", 0.01}},
    ["MoS‡"] = {{"<unk>", 0.47}, {"violence", 0.11}, {"conspiracy", 0.03}, {"incest", 0.03}, {"civil", 0.03}},
    ["MoC‡"] = {{"<unk>", 0.41}, {"the", 0.03}, {"a", 0.02}, {"other", 0.02}, {"in", 0.01}},
  },
  { -- context #6, next word "subsidies"
    Softmax = {{"spending", 0.09}, {"costs", 0.07}, {"payments", 0.04}, {"orders", 0.04}, {"sales", 0.04}},
    SS = {{"spending", 0.10}, {"costs", 0.04}, {"<unk>", 0.04}, {"orders", 0.03}, {"payments", 0.03}},
    GSS = {{"spending", 0.13}, {"sales", 0.07}, {"<unk>", 0.04}, {"exports", 0.03}, {"officials", 0.03}},
    ["LMS-PLIF"] = {{"officials", 0.10}, {"<unk>", 0.05}, {"spending", 0.05}, {"and", 0.03}, {"contracts", 0.03}},
    MoS = {{"spending", 0.12}, {"subsidies", 0.09}, {"payments", 0.08}, {"costs", 0.03}, {"sales", 0.03}},
    MoC = {{"spending", 0.09}, {"debt", 0.08}, {"payments", 0.08}, {"orders", 0.04}, {"<unk>", 0.03}},
    ["MoS†"] = {{"subsidies", 0.13}, {"spending", 0.10}, {"benefits", 0.04}, {"costs", 0.04}, {"orders", 0.03}},
    ["MoC†"] = {{"spending", 0.09}, {"officials", 0.05}, {"debt", 0.04}, {"subsidies", 0.03}, {"<unk>", 0.03}},
    ["MoS‡"] = {{"subsidies", 0.15}, {"spending", 0.08}, {"officials", 0.04}, {"costs", 0.04}, {"<unk>", 0.04}},
    ["MoC‡"] = {{"officials", 0.04}, {"figures", 0.03}, {"efforts", 0.03}, {"<unk>", 0.03}, {"costs", 0.03}},
  },
}
local PUBLISHED_ONLY = {"MoS‡", "MoC‡"}

local function here()
  local source = debug.getinfo(1, "S").source
  return source:sub(1, 1) == "@" and (source:sub(2):match("^(.*)/[^/]*$") or ".") or "."
end

local function contexts_file(cfg)
  return cfg.contexts ~= "" and cfg.contexts or (here() .. "/data/table5_1_contexts.txt")
end

-- "tons 0.90, million 0.04, ..." from {{word, prob}, ...}
local function show(top)
  if not top then return nil end
  local parts = {}
  for _, p in ipairs(top) do parts[#parts + 1] = ("%s %.2f"):format(p[1], p[2]) end
  return table.concat(parts, ", ")
end

local function position(top, word)
  for i, p in ipairs(top or {}) do
    if p[1] == word then return i end
  end
  return nil
end

return recipe.define{
  name = "qualitative",
  description = "Top-5 next words for the six contexts of thesis Table 5.1, per model",
  settings = chapter5.settings{
    heads = recipe.setting("softmax,ss,gss,plif,mos,moc,mos_nt,moc_nt", "Table 5.1's models (presets/chapter5.lua)"),
    contexts = recipe.setting("", "\"context<TAB>next word\" per line; \"\" = recipes/data/table5_1_contexts.txt"),
    k = recipe.setting(5, "next words shown per context"),
  },

  grid = function(cfg)
    return chapter5.model_cells(cfg)
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local model, summary, corpus = chapter5.train_model_cell(cell, ctx, true)
    local contexts = lmkit.analysis.read_contexts(contexts_file(cfg))
    -- unk: with --set lines=N the cut-down vocabulary lacks some words; they read as <unk>.
    local out = lmkit.analysis.top_k_contexts(model, corpus.vocab, contexts,
                                              {k = cfg.k, unk = "<unk>", stream = corpus.test, bptt = 70})
    local result = presets.with_yardsticks({valid_ppl = summary.valid_ppl, test_ppl = summary.test_ppl,
                                            vocab = corpus.vocab:size(), contexts = {}}, corpus)
    for i, c in ipairs(out) do
      local top = {}
      for j, p in ipairs(c.top) do top[j] = {p.word, p.prob} end
      -- A next word outside the vocabulary (only with lines > 0) was scored as <unk>: not its own.
      local known = contexts[i].next == nil or corpus.vocab:id(contexts[i].next) ~= nil
      result.contexts[i] = {top = top, next_known = known, next_prob = known and c.next_prob or nil,
                            next_rank = known and c.next_rank or nil, next_position = known and c.next_position or 0,
                            state = c.state, position = c.position}
    end
    return result
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local contexts = lmkit.analysis.read_contexts(contexts_file(cfg))
    local thesis_contexts = cfg.contexts == "" and cfg.dataset == "ptb"
    local data = presets.data(cfg, {words = true})
    local labels = {}
    for _, r in ipairs(results) do labels[#labels + 1] = chapter5.model(r.cell.model).label end
    if thesis_contexts then
      for _, label in ipairs(PUBLISHED_ONLY) do labels[#labels + 1] = label end
    end
    local by_label = {}
    for _, r in ipairs(results) do by_label[chapter5.model(r.cell.model).label] = r.result or false end

    local t = lmkit.report.table{
      title = ("Top-%d next words for the contexts of thesis Table 5.1, models trained on %s (‡: Yang et al.'s " ..
               "published models)"):format(cfg.k, data.short),
      data = data,
      columns = {
        {key = "context", label = "Context"}, {key = "model", label = "Model"},
        {key = "top", label = "Top-" .. cfg.k, paper = thesis_contexts and "paper_top" or false, delta = false,
         align = "left"},
        {key = "in_top", label = "Next in top-" .. cfg.k, paper = thesis_contexts and "paper_in_top" or false,
         delta = false, align = "center"},
        {key = "next_prob", label = "P(next)", format = "%.3f"},
        {key = "next_rank", label = "Rank of next"},
      },
    }
    local counts, paper_counts, probs, known = {}, {}, {}, {}
    for i, c in ipairs(contexts) do
      for _, label in ipairs(labels) do
        local paper_top = thesis_contexts and PAPER[i] and PAPER[i][label]
        local row = {context = ("#%d (%s)"):format(i, c.next or "?"), model = label, paper_top = show(paper_top)}
        if paper_top then
          local inside = position(paper_top, c.next) ~= nil
          row.paper_in_top = inside and "yes" or "no"
          paper_counts[label] = (paper_counts[label] or 0) + (inside and 1 or 0)
        end
        local r = by_label[label]
        local ours = r and r.contexts and r.contexts[i]
        if ours then
          row.top = show(ours.top)
          row.in_top = not ours.next_known and "not in vocab" or ours.next_position > 0 and "yes" or "no"
          row.next_prob, row.next_rank = ours.next_prob, ours.next_rank
          counts[label] = (counts[label] or 0) + (ours.next_position > 0 and 1 or 0)
          if ours.next_prob then
            probs[label] = (probs[label] or 0) + ours.next_prob
            known[label] = (known[label] or 0) + 1
          end
        end
        t:add(row)
      end
    end
    t:note(chapter5.switch_note(results, ctx.cfg))
    t:note_yardsticks(results)
    -- Where each context was read (the same for every model: one test stream).
    local first = nil
    for _, r in ipairs(results) do first = first or (r.result and r.result.contexts) end
    if first then
      local at, zero = {}, {}
      for i, c in ipairs(first) do
        if c.state == "stream" then at[#at + 1] = ("#%d at token %d"):format(i, c.position) else zero[#zero + 1] = "#" .. i end
      end
      t:note(("Read off one evaluation of the test stream (batch 1, bptt 70, state carried from its start): %s.%s"):format(
        #at > 0 and table.concat(at, ", ") or "none",
        #zero > 0 and (" Not in this test stream, read from a zero state: %s."):format(table.concat(zero, ", ")) or ""))
    end
    t:print()
    for _, ext in ipairs{"md", "csv", "tex"} do t:save(ctx.out .. "/report." .. ext) end

    local summary = lmkit.report.table{
      title = ("Contexts whose true next word is among the top %d (of %d), models trained on %s"):format(
        cfg.k, #contexts, data.short),
      data = data,
      columns = {
        {key = "model", label = "Model"},
        {key = "hits", label = "Hits", paper = thesis_contexts and "paper_hits" or false},
        {key = "mean_prob", label = "Mean P(next)", format = "%.3f"},  -- over the contexts whose next word is known
        {key = "test_ppl", label = "Test ppl", digits = 2},
      },
    }
    for _, label in ipairs(labels) do
      local r = by_label[label]
      summary:add{model = label, paper_hits = paper_counts[label], hits = r and counts[label],
                  mean_prob = r and probs[label] and probs[label] / known[label], test_ppl = r and r.test_ppl}
    end
    summary:print()
    for _, ext in ipairs{"md", "csv", "tex"} do summary:save(ctx.out .. "/hits." .. ext) end
    print("report files: " .. ctx.out .. "/{report,hits}.{md,csv,tex}")
  end,
}
