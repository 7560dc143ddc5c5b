-- MoS mixtures (thesis §5.4, Table 5.6): AWD-LSTM-MoS with all hyperparameters fixed except the
-- number of mixture components K. More components: more parameters, lower train perplexity, higher
-- rank of the test logP matrix; test perplexity stops improving after K = 10 (Yang et al.'s Table
-- 5.5 claimed rank drives test performance).
--
--   lmkit run recipes/mos_mixtures.lua                                 -- tiny scale, K = 1..20
--   lmkit run recipes/mos_mixtures.lua --set scale=paper               -- PTB as published
--   lmkit run recipes/mos_mixtures.lua --set scale=paper --set dataset=wikitext-2   -- K = 10, 15, 20
--   lmkit run recipes/mos_mixtures.lua --set scale=paper --set eval_train_tokens=200000
--
-- Each cell trains one model (train ppl: the training loop's at the best validation epoch, SPEC §2;
-- eval_train_tokens ≠ 0 adds the eval-mode ppl on the training split) and computes the Press rank
-- of its logP matrix on the test split (as gss_grid.lua). Writes report.{md,csv,tex} into <out>.
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local measure = require "presets.measure"

-- Table 5.6: K, #params (millions), train ppl, test ppl, rank.
local PAPER = {
  ptb = {
    {1, 19.05, 56.42, 64.50, 282}, {3, 19.40, 41.77, 59.25, 5575}, {5, 19.75, 38.09, 58.38, 8057},
    {10, 20.62, 35.48, 56.21, 9976}, {15, 21.50, 33.08, 56.07, 9979}, {20, 22.37, 32.19, 56.19, 9980},
  },
  ["wikitext-2"] = {
    {10, 33.92, 36.94, 62.65, 12198}, {15, 34.90, 35.92, 63.06, 13229}, {20, 35.88, 35.35, 62.76, 13998},
  },
}
local ALL_K = {1, 3, 5, 10, 15, 20}
-- Table 5.5: Yang et al.'s reported K, test ppl, rank on PTB (the MoS paper's claim that rank drives
-- test performance, which Table 5.6 re-examines).
local YANG = {{3, 58.62, 6467}, {5, 57.36, 8930}, {10, 56.33, 9973}, {15, 55.97, 9981}, {20, 56.17, 9981}}

return recipe.define{
  name = "mos_mixtures",
  description = "AWD-LSTM-MoS for K = 1..20 mixtures: params, train/test ppl, rank (thesis Table 5.6)",
  settings = presets.settings{"scale", "dataset", "epochs", "switch_epoch",
    cells = recipe.setting("all", "all: K ∈ {1, 3, 5, 10, 15, 20}; paper: the K the thesis trained on this dataset (WT2: 10, 15, 20)"),
    switch = "nt",
    eval_train_tokens = recipe.setting(0, "≠ 0: also the eval-mode ppl on the training split's first N tokens (−1 all)"),
    max_contexts = recipe.setting(-1, "rank's test contexts: -1 as the thesis (WT2: first 33,320), 0 all, n"),
    limit = recipe.setting(0, "> 0: only the first `limit` cells"),
  },

  grid = function(cfg)
    local rows = PAPER[cfg.dataset] or error("mos_mixtures: no published table for dataset '" .. cfg.dataset .. "'")
    local by_k = {}
    for _, p in ipairs(rows) do by_k[p[1]] = {params = p[2], train_ppl = p[3], test_ppl = p[4], rank = p[5]} end
    local cells = {}
    if cfg.cells ~= "all" and cfg.cells ~= "paper" then
      error("mos_mixtures: cells must be \"all\" or \"paper\", got '" .. tostring(cfg.cells) .. "'")
    end
    for _, K in ipairs(ALL_K) do
      if cfg.cells == "all" or by_k[K] then cells[#cells + 1] = {K = K, paper = by_k[K]} end
    end
    return measure.limit(cells, cfg.limit)
  end,

  run = function(cell, ctx)
    return measure.train_and_measure{cfg = ctx.cfg, family = "mos", head = "mos", head_options = {K = cell.K},
                                     dir = ctx.dir .. "/run"}
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local data = presets.data(cfg)
    local t = lmkit.report.table{
      title = ("AWD-LSTM-MoS on %s for different numbers of mixtures (Table 5.6)"):format(data.short),
      data = data,
      columns = {
        {key = "K", label = "#Mixture"},
        -- millions, so that the paper's 19.05M and a tiny model's 0.07M share a column
        {key = "params", label = "#Param (M)", format = measure.millions, paper = measure.paper(results, "params")},
        {key = "train_ppl", label = "Train ppl", digits = 2, paper = measure.paper(results, "train_ppl")},
        {key = "test_ppl", label = "Test ppl", digits = 2, paper = measure.paper(results, "test_ppl")},
        {key = "rank", label = "Rank", digits = 0, paper = measure.paper(results, "rank")},
      },
    }
    for _, r in ipairs(results) do
      local row = {K = r.cell.K}
      if r.result then
        row.params, row.train_ppl, row.test_ppl, row.rank =
          r.result.params / 1e6, r.result.train_ppl, r.result.test_ppl, r.result.rank
      end
      t:add(row)
    end
    t:note(presets.switch_note(ctx.cfg))
    measure.note_rank(t, results, ctx.cfg.dataset)
    t:note_yardsticks(results)
    measure.print_and_save(t, ctx.out, "report")
    measure.rank_correlations(results)

    -- Table 5.5: the same K beside what Yang et al. reported (PTB), and both correlations.
    if cfg.dataset == "ptb" then
      local ours = {}
      for _, r in ipairs(results) do if r.result then ours[r.cell.K] = r.result end end
      local t55 = lmkit.report.table{
        title = ("Rank and test ppl per K: Yang et al.'s report (thesis Table 5.5) beside ours on %s"):format(data.short),
        data = data,
        columns = {
          {key = "K", label = "#Mixture"},
          {key = "yang_test", label = "Test ppl (Yang et al.)", digits = 2}, {key = "test_ppl", label = "Test ppl (ours)", digits = 2},
          {key = "yang_rank", label = "Rank (Yang et al.)"}, {key = "rank", label = "Rank (ours)"},
        },
      }
      local yr, yp, orank, oppl = {}, {}, {}, {}
      for _, y in ipairs(YANG) do
        local o = ours[y[1]]
        t55:add{K = y[1], yang_test = y[2], yang_rank = y[3], test_ppl = o and o.test_ppl, rank = o and o.rank}
        yr[#yr + 1], yp[#yp + 1] = y[3], y[2]
        if o and o.rank then orank[#orank + 1], oppl[#oppl + 1] = o.rank, o.test_ppl end
      end
      local function r_of(a, b)
        if #a < 3 then return "n/a" end
        for i = 2, #a do
          if a[i] ~= a[1] then
            for j = 2, #b do if b[j] ~= b[1] then return ("%+.3f"):format((lmkit.stats.pearsonr(a, b))) end end
          end
        end
        return "n/a"
      end
      t55:note(("Pearson r(rank, test ppl): Yang et al.'s rows %s, ours %s."):format(r_of(yr, yp), r_of(orank, oppl)))
      measure.print_and_save(t55, ctx.out, "table5_5")
      print("report files: " .. ctx.out .. "/{report,table5_5}.{md,csv,tex}")
    else
      print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
    end
  end,
}
