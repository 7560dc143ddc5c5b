-- The thesis's line-up of heads on a causal Transformer (beyond the thesis): Softmax, SS, GSS,
-- LMS-PLIF, MoS and Mixtape on the same small Transformer encoder (docs/models.md), over several
-- seeds, with the statistics the thesis used for the AWD-LSTM (Tables 4.8/4.9): mean ± sd of
-- train, validation and test perplexity and of the Press rank of Q, the heads placed by mean test
-- perplexity, and each head's two-sided Wilcoxon rank-sum and unpaired t-test p-values against
-- Softmax over the sampled seeds (the configuration's own seed, shared by several heads, left out
-- as Table 4.9 does). The question: does the softmax bottleneck's story — on PTB high-rank heads
-- (SS, GSS) no better than Softmax, MoS and LMS-PLIF better; on WT2 SS better too (Table 4.9b) —
-- hold for a Transformer?
--
--   lmkit run recipes/transformer_lineup.lua                                   -- tiny scale, 4 seeds
--   lmkit run recipes/transformer_lineup.lua --set seeds=2 --set epochs=1      -- a quick check (the test)
--   lmkit run recipes/transformer_lineup.lua --set scale=small --set seeds=5   -- PTB, for a GPU
--
-- Our choices (the thesis trains no Transformer): the sizes of each scale below; AdamW (lr 3e−3 at
-- tiny, 1e−3 above; weight decay 0.1 on matrices only), a linear warm-up then a cosine decay to
-- lr/10, gradient clipping at 1, fixed windows of the model's context (bptt = context), each read
-- alone. Validation and test predict every token from the `context` tokens before it, once the stream
-- has that many (the first context − 1 of each column have fewer): a sliding context of stride 1,
-- batch sizes 10 and 1 as the AWD-LSTM's, one prediction per token — the AWD-LSTM's perplexity
-- definition. The heads take the line-up's options (GSS (c, k) as the thesis chose per
-- dataset, MoS's K and dropout of the scale's MoS configuration, Mixtape's defaults). LMS-PLIF's
-- slopes train at the main lr (the head's own 0.02 is an SGD rate; under AdamW it was 7-20× the
-- main rate) without weight decay, as every vector under AdamW.
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local lineup = require "presets.lineup"
local report_files = require "presets.report_files"

-- The encoder and its training at each scale; the corpus is the AWD-LSTM presets' (tiny: the
-- synthetic language; small and paper: the dataset's full protocol).
local SCALES = {
  tiny = {model = {emb = 24, nlayers = 2, heads = 2, ff = 96, context = 32, dropout = 0.1, attention_dropout = 0.1},
          train = {epochs = 3, batch_size = 20, lr = 3e-3, warmup = 30, log_interval = 100}},
  small = {model = {emb = 256, nlayers = 4, heads = 4, ff = 1024, context = 128, dropout = 0.2, attention_dropout = 0.1},
           train = {epochs = 30, batch_size = 32, lr = 1e-3, warmup = 500, log_interval = 200}},
  paper = {model = {emb = 512, nlayers = 6, heads = 8, ff = 2048, context = 256, dropout = 0.3, attention_dropout = 0.1},
           train = {epochs = 50, batch_size = 32, lr = 1e-3, warmup = 1000, log_interval = 200}},
}
local KNOWN = {softmax = true, sigsoftmax = true, gss = true, plif = true, mos = true, mixtape = true, moc = true, moss = true}

-- What the thesis concluded for the AWD-LSTM per dataset (Table 4.9a PTB, 4.9b WT2): which heads beat
-- Softmax significantly (two-sided rank-sum p < 0.05 and a lower mean).
local THESIS = {
  ptb = {table = "4.9a", sigsoftmax = false, gss = false, plif = true, mos = true},
  wt2 = {table = "4.9b", sigsoftmax = true, gss = false, plif = true, mos = true},
}

-- The smallest two-sided p the rank-sum test (scipy's ranksums, the thesis's: the normal
-- approximation) can give for n values against n: every value of one sample beyond the other's.
local function smallest_p(n)
  if n < 2 then return nil end
  local a, b = {}, {}
  for i = 1, n do a[i], b[i] = i, n + i end
  return lineup.ranksums_p(a, b)
end

-- The fewest values per sample for which that smallest p falls below `level`.
local function seeds_needed(level)
  local n = 2
  while smallest_p(n) >= level do n = n + 1 end
  return n
end

local function scale_of(cfg)
  return SCALES[cfg.scale] or error(("transformer_lineup: no scale '%s' (tiny, small, paper)"):format(tostring(cfg.scale)), 0)
end

return recipe.define{
  name = "transformer_lineup",
  description = "The thesis's heads on a causal Transformer over seeds: mean ± sd, rank, rank-sum and t-test vs Softmax",
  settings = presets.settings{"scale", "dataset", "corpus", "init_from", "epochs",
    seeds = recipe.setting(4, "seeds per head: the configuration's own and seeds − 1 sampled ones, which the p-values use (p < 0.05 can first be reached with seeds = 4)"),
    heads = recipe.setting("softmax,sigsoftmax,gss,plif,mos,mixtape", "the heads; Softmax must be among them for the p-values"),
    rank = recipe.setting(true, "the Press rank of Q on the test split per cell"),
  },

  grid = function(cfg)
    scale_of(cfg)
    if cfg.seeds < 1 then error("transformer_lineup: seeds must be ≥ 1", 0) end
    local heads = lineup.list(cfg.heads)
    for _, head in ipairs(heads) do
      if not KNOWN[head] then
        error(("transformer_lineup: no head '%s' in the line-up (softmax, sigsoftmax, gss, plif, mos, mixtape, moc, moss)"):format(head), 0)
      end
    end
    return lineup.seed_cells(heads, cfg, {per_head = true})
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local s = scale_of(cfg)
    local p = lineup.preset(cell.head, cfg)
    local corpus = presets.load_corpus(p)
    local m = {encoder = "transformer", vocab_size = corpus.vocab:size(), head = lineup.head(p, cell.head)}
    for k, v in pairs(s.model) do m[k] = v end
    lmkit.seed(cell.seed)
    local model = lmkit.model(m)
    local t = s.train
    -- The rest of the protocol (AdamW with weight decay 0.1, clipping at 1, fixed windows of the
    -- context, a cosine to lr/10, no ASGD switch) is the Transformer encoder's own training defaults.
    local run = lmkit.train{model = model, corpus = corpus, run_dir = ctx.dir .. "/run", seed = cell.seed,
                            init_from = presets.cell_init_from(cfg.init_from, ctx.dir .. "/run"),
                            lr = t.lr, own_lr = t.lr, warmup = t.warmup, epochs = cfg.epochs > 0 and cfg.epochs or t.epochs,
                            batch_size = t.batch_size, eval_batch_size = 10, test_batch_size = 1,
                            log_interval = t.log_interval}
    local summary = run:summary()
    local best = run:best_model()
    local result = {train_ppl = summary.train_ppl, valid_ppl = summary.valid_ppl, test_ppl = summary.test_ppl,
                    epochs = summary.epochs, seconds_per_epoch = summary.seconds_per_epoch,
                    params = lineup.trainable_parameters(best), params_total = best:parameter_count().total}
    if cfg.rank then
      local sv, rows, cols, method = lmkit.analysis.logp_svdvals(best, corpus.test, {batch_size = 1, bptt = s.model.context})
      result.rank, result.contexts, result.vocab, result.rank_method = lmkit.analysis.press_rank(sv, rows, cols), rows, cols, method
    end
    return presets.with_yardsticks(result, corpus)
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local s = scale_of(cfg)
    local heads = lineup.list(cfg.heads)
    local all, sampled, expected = lineup.by_name(results, heads, "head")
    local means = {}
    for _, h in ipairs(heads) do means[h] = lineup.sample(all[h], "test_ppl") end
    local place = lineup.places(means)
    -- The p-values: the sampled seeds only (the configuration's own seed is one several heads share).
    local base_mean, _, _, base = lineup.sample(sampled.softmax or {}, "test_ppl")
    local data = presets.data(cfg)
    local t = lmkit.report.table{
      title = ("The line-up on a causal Transformer (%d blocks, d = %d, context %d), %d seeds, on %s"):format(
        s.model.nlayers, s.model.emb, s.model.context, cfg.seeds, data.short),
      data = data,
      columns = lineup.join({{key = "function", label = "Function"}, {key = "n", label = "Seeds"},
                             {key = "params", label = "#Param"}, {key = "time", label = "Time (s/epoch)", digits = 1}},
                            lineup.ppl_columns(function() return nil end), {
                              {key = "rank", label = "Rank", digits = 0, sd = "rank_sd"},
                              {key = "place", label = "Place (test ppl)"},
                            }, {
                              -- No published numbers for a Transformer: our tests only.
                              {key = "p", label = "Rank-sum p vs Softmax", format = "%.2e"},
                              {key = "significant", label = "At p < 0.05"},
                              {key = "t_p", label = "t-test p", format = "%.2e"},
                            }),
    }
    local significant, lineup_outcome = {}, {}
    for _, h in ipairs(heads) do
      local line = lineup.head_row(h, all, expected, {})
      line.place = place[h]
      if #all[h] > 0 then line.rank, line.rank_sd = lineup.sample(all[h], "rank") end
      if h ~= "softmax" and base and #sampled[h] > 0 then
        local sampled_mean, _, _, values = lineup.sample(sampled[h], "test_ppl")
        if #values > 0 then lineup.add_p(line, values, base) end
        if line.p then
          -- The test is two-sided: a significant difference is better or worse than Softmax, in the
          -- direction of the same seeds the p-value compares (not the means over every seed).
          local lower = sampled_mean < base_mean
          significant[h] = line.p < 0.05 and lower
          lineup_outcome[h] = line.p < 0.05 and not lower and "worse" or nil
          line.significant = line.p >= 0.05 and "no" or (lower and "better" or "worse")
        end
      end
      t:add(line)
    end
    t:note_yardsticks(results)
    t:note(("Encoder: causal pre-LayerNorm Transformer, %d blocks, d = %d, %d heads, MLP %d, context %d, learned positions, " ..
            "dropout %.2g; AdamW (weight decay 0.1 on matrices), warm-up %d steps then cosine to lr/10 (lr %.3g; " ..
            "LMS-PLIF's slopes at the same lr, not decayed), clip 1, " ..
            "fixed windows of %d tokens, each read alone. Validation and test: every token predicted from the %d " ..
            "tokens before it (a sliding context; the first of each column from fewer; batch 10 and 1). " ..
            "p: two-sided Wilcoxon rank-sum against Softmax over the sampled seeds (the configuration's own seed, " ..
            "which several heads share, left out as the thesis's Table 4.9 does); t p: unpaired t-test."):format(
      s.model.nlayers, s.model.emb, s.model.heads, s.model.ff, s.model.context, s.model.dropout, s.train.warmup,
      s.train.lr, s.model.context, s.model.context))
    -- The thesis's conclusion for RNNs on this dataset, and whether this run agrees head by head.
    local thesis = THESIS[cfg.dataset] or THESIS.ptb
    local agree, disagree = {}, {}
    for _, h in ipairs{"sigsoftmax", "gss", "plif", "mos"} do
      if significant[h] ~= nil then
        -- The table's word for the head: better, worse (significantly, and so not better), or neither.
        local outcome = significant[h] and "better"
          or (lineup_outcome[h] == "worse" and "significantly worse" or "not significantly better")
        local label = ("%s %s"):format(lineup.label(h), outcome)
        if significant[h] == thesis[h] then agree[#agree + 1] = label else disagree[#disagree + 1] = label end
      end
    end
    local n = base and #base or 0
    local floor = smallest_p(n)
    local verdict = "Not enough seeds for a verdict (p-values need Softmax and 2 sampled seeds per head, 3 seeds)."
    if floor and floor >= 0.05 then
      verdict = ("No verdict: with %d sampled seeds per head no difference can reach p < 0.05."):format(n)
    elseif #agree + #disagree > 0 then
      verdict = ("Here (%s): agrees for %s; differs for %s."):format(data.short,
        #agree > 0 and table.concat(agree, ", ") or "none", #disagree > 0 and table.concat(disagree, ", ") or "none")
    end
    local function said(value) return value and "significantly better" or "not significantly better" end
    t:note(("The thesis, for the AWD-LSTM on %s (Table %s): SS %s, GSS %s, LMS-PLIF %s, MoS %s than Softmax. %s"):format(
      cfg.dataset == "wt2" and "WT2" or "PTB", thesis.table, said(thesis.sigsoftmax), said(thesis.gss), said(thesis.plif),
      said(thesis.mos), verdict))
    if floor then
      t:note(("With %d sampled seeds per head the smallest two-sided rank-sum p (normal approximation, as " ..
              "lmkit.stats.ranksums and scipy's ranksums compute it) is %.3g, when all of a head's values lie beyond all of Softmax's: p < 0.05 needs " ..
              "%d sampled seeds per head (seeds = %d), p < 0.01 needs %d (seeds = %d)."):format(
        n, floor, seeds_needed(0.05), seeds_needed(0.05) + 1, seeds_needed(0.01), seeds_needed(0.01) + 1))
    end
    if not data.paper_data then t:note("Tiny scale on " .. data.label .. ": a check of the machinery, not a finding about Transformers.") end
    local rank, ppl, heads_of = {}, {}, {}
    for _, r in ipairs(results) do
      if r.result and r.result.rank and r.result.test_ppl then
        rank[#rank + 1], ppl[#ppl + 1], heads_of[#heads_of + 1] = r.result.rank, r.result.test_ppl, lineup.label(r.cell.head)
      end
    end
    local function varies(values)
      for i = 2, #values do if values[i] ~= values[1] then return true end end
      return false
    end
    if #rank >= 3 and varies(rank) and varies(ppl) then  -- a constant side has no correlation
      -- A colour and a shape per head (its seeds share them), named in the legend.
      local plot_file = ctx.out .. "/rank_ppl.png"
      local fit = lmkit.plot.rank_ppl{out = plot_file, rank = rank, ppl = ppl, groups = heads_of,
                                      title = ("Rank of Q vs test perplexity, Transformer line-up, %s"):format(data.short)}
      t:note(("Pearson r(rank, test ppl) = %.3f over %d models (plot: rank_ppl.png)%s."):format(
        fit.r, #rank, fit.caution and ("; " .. fit.caution .. ", so the line is the gap between that head and the rest") or ""))
    end
    report_files.print_and_save(t, ctx.out, "report")

    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
  end,
}
