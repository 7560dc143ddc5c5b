-- MoS dropout sweep (thesis §5.4, Table 5.7): AWD-LSTM-MoS with K = 15 and every hyperparameter
-- fixed except the dropout on the MoS latent layer (dropoutl ∈ {0.29, 0.145, 0}). Less MoS dropout:
-- lower train perplexity and higher rank, but worse test perplexity, so the rank of the test
-- logP matrix tracks training performance, not test performance.
--
--   lmkit run recipes/mos_dropout.lua                                  -- tiny scale
--   lmkit run recipes/mos_dropout.lua --set scale=paper --set dataset=wikitext-2
--   lmkit run recipes/mos_dropout.lua --set K=3                        -- another mixture count
--
-- Each cell trains one model (train ppl: the training loop's at the best validation epoch, SPEC §2)
-- and computes the Press rank of its logP matrix on the test split (presets/measure.lua).
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local measure = require "presets.measure"

-- Table 5.7 (K = 15): MoS dropout, train ppl, test ppl, rank.
local PAPER = {
  ptb = {{0.29, 33.08, 56.07, 9979}, {0.145, 29.21, 59.09, 9985}, {0.00, 23.81, 64.82, 9992}},
  ["wikitext-2"] = {{0.29, 39.11, 63.06, 13215}, {0.145, 32.19, 64.38, 17256}, {0.00, 27.51, 68.49, 19427}},
}

return recipe.define{
  name = "mos_dropout",
  description = "AWD-LSTM-MoS (K = 15) for MoS dropout 0.29, 0.145, 0: train/test ppl, rank (thesis Table 5.7)",
  settings = presets.settings{"scale", "dataset", "epochs", "switch_epoch",
    K = recipe.setting(15, "mixture components (the thesis: 15 at every scale)"),
    switch = "nt",
    eval_train_tokens = recipe.setting(0, "≠ 0: also the eval-mode ppl on the training split's first N tokens (−1 all)"),
    max_contexts = recipe.setting(-1, "rank's test contexts: -1 as the thesis (WT2: first 33,320), 0 all, n"),
    limit = recipe.setting(0, "> 0: only the first `limit` cells"),
  },

  grid = function(cfg)
    local rows = PAPER[cfg.dataset] or error("mos_dropout: no published table for dataset '" .. cfg.dataset .. "'")
    local cells = {}
    for _, p in ipairs(rows) do
      -- the paper's numbers are for K = 15 only
      local paper = cfg.K == 15 and {train_ppl = p[2], test_ppl = p[3], rank = p[4]} or nil
      cells[#cells + 1] = {K = cfg.K, dropoutl = p[1], paper = paper}  -- K in the id: another K, other cells
    end
    return measure.limit(cells, cfg.limit)
  end,

  run = function(cell, ctx)
    return measure.train_and_measure{cfg = ctx.cfg, family = "mos", head = "mos",
                                     head_options = {K = cell.K, dropoutl = cell.dropoutl}, dir = ctx.dir .. "/run"}
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local data = presets.data(cfg)
    local t = lmkit.report.table{
      title = ("AWD-LSTM-MoS (K = %d) on %s for different MoS dropout rates (Table 5.7)"):format(cfg.K, data.short),
      data = data,
      columns = {
        {key = "dropoutl", label = "MoS dropout", digits = 3},
        {key = "train_ppl", label = "Train ppl", digits = 2, paper = measure.paper(results, "train_ppl")},
        {key = "test_ppl", label = "Test ppl", digits = 2, paper = measure.paper(results, "test_ppl")},
        {key = "rank", label = "Rank", digits = 0, paper = measure.paper(results, "rank")},
      },
    }
    for _, r in ipairs(results) do
      local row = {dropoutl = r.cell.dropoutl}
      if r.result then row.train_ppl, row.test_ppl, row.rank = r.result.train_ppl, r.result.test_ppl, r.result.rank end
      t:add(row)
    end
    t:note(presets.switch_note(ctx.cfg))
    measure.note_rank(t, results, ctx.cfg.dataset)
    t:note_yardsticks(results)
    measure.print_and_save(t, ctx.out, "report")
    measure.rank_correlations(results)
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
  end,
}
