-- Freezing LMS-PLIF's slopes (thesis §5.7.1, Tables 5.16/5.17): LMS-PLIF, LMS-PLIF† (the slopes
-- kept at their random initialization, so the head is Softmax plus a fixed perturbation of the
-- logits and has Softmax's trainable parameters) and Softmax, each over 11 seeds. The thesis finds
-- LMS-PLIF† trades training perplexity for slightly better test perplexity, as a regularizer does,
-- and that LMS-PLIF is not significantly better than LMS-PLIF† (p = 0.545 PTB, 0.0696 WT2): the
-- learned slopes raise the rank of Q but not the test performance.
--
--   lmkit run recipes/frozen_plif.lua                                   -- tiny scale, 11 seeds
--   lmkit run recipes/frozen_plif.lua --set seeds=3 --set epochs=1      -- a quick check (the test)
--   lmkit run recipes/frozen_plif.lua --set scale=paper --set dataset=wikitext-2
--
-- As in the thesis, mean ± sd are over all seeds (the configuration's own, 141 or 1881, first)
-- and the rank-sum p-values over the other seeds only, sampled for each model apart ("10 randomly
-- sampled seeds (for each model)", §5.7.1). At tiny scale LMS-PLIF has
-- K = 1000 intervals (recipes/presets/awd_lstm.lua); T = 20 and the slopes' lr 0.02 as published.
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local lineup = require "presets.lineup"

local HEADS = {"softmax", "plif", "plif_frozen"}

-- Table 5.16 (11 seeds): #Param, time per epoch, train/validation/test ppl mean and sd.
local function row(params, time, train, train_sd, valid, valid_sd, test, test_sd)
  return {params = params, time = time, train_ppl = train, train_sd = train_sd, valid_ppl = valid, valid_sd = valid_sd,
          test_ppl = test, test_sd = test_sd}
end
local PAPER = {
  ptb = {
    softmax = row("24.22M", "~55s", 33.91, 0.25, 59.55, 0.12, 57.08, 0.09),
    plif = row("24.32M", "~59s", 36.67, 0.30, 59.08, 0.09, 56.80, 0.11),
    plif_frozen = row("24.22M", "~56s", 37.16, 0.24, 59.23, 0.11, 56.83, 0.10),
  },
  ["wikitext-2"] = {
    softmax = row("33.55M", "~72s", 39.32, 0.14, 67.57, 0.14, 64.63, 0.08),
    plif = row("33.65M", "~93s", 41.13, 0.15, 67.15, 0.21, 64.16, 0.17),
    plif_frozen = row("33.55M", "~77s", 41.67, 0.15, 67.22, 0.13, 64.28, 0.17),
  },
}
-- Rank-sum tests over the 10 sampled seeds: Table 5.17 (LMS-PLIF vs LMS-PLIF†, with each one's test
-- ppl mean ± sd) and Table 4.9 (LMS-PLIF vs Softmax); LMS-PLIF† vs Softmax is not published.
local PAPER_TESTS = {
  ptb = {plif_vs_plif_frozen = {a = 56.81, a_sd = 0.11, b = 56.82, b_sd = 0.09, p = 5.45e-1, t_p = 8.26e-1},
         plif_vs_softmax = {a = 56.81, a_sd = 0.11, b = 57.08, b_sd = 0.10, p = 5.06e-4, t_p = 1.91e-5}},
  ["wikitext-2"] = {plif_vs_plif_frozen = {a = 64.15, a_sd = 0.17, b = 64.30, b_sd = 0.17, p = 6.96e-2, t_p = 6.41e-2},
                    plif_vs_softmax = {a = 64.15, a_sd = 0.17, b = 64.63, b_sd = 0.09, p = 1.57e-4, t_p = 2.98e-7}},
}
local TESTS = {{"plif", "plif_frozen"}, {"plif", "softmax"}, {"plif_frozen", "softmax"}}

return recipe.define{
  name = "frozen_plif",
  description = "LMS-PLIF vs LMS-PLIF† (frozen slopes) vs Softmax over seeds (thesis Tables 5.16/5.17)",
  settings = presets.settings{"scale", "dataset", "corpus", "init_from", "epochs", "switch", "switch_epoch", "seeds",
  },

  grid = function(cfg)
    if cfg.seeds < 1 then error("frozen_plif: seeds must be ≥ 1") end
    -- "10 randomly sampled seeds (for each model)" (§5.7.1): each head draws its own, and the
    -- rank-sum test compares independent samples.
    return lineup.seed_cells(HEADS, cfg, {per_head = true})
  end,

  needs = lineup.needs,

  run = function(cell, ctx)
    return lineup.run_cell{name = cell.head, cfg = ctx.cfg, seed = cell.seed, dir = ctx.dir .. "/run"}
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local paper = PAPER[cfg.dataset] or {}
    local all, sampled, expected = lineup.by_name(results, HEADS, "head")

    local data = presets.data(cfg)
    local t16 = lmkit.report.table{
      title = ("Effect of freezing the PLIF layer on %s over %d seeds (thesis Table 5.16; mean ± sd)")
              :format(data.short, cfg.seeds),
      data = data,
      columns = lineup.join({
        {key = "function", label = "Function"}, {key = "n", label = "Seeds"},
        {key = "params_paper", label = "#Param (paper)"}, {key = "params", label = "#Param (ours, trainable)"},
        {key = "time_paper", label = "Time (paper)"}, {key = "time", label = "Time (ours, s/epoch)", digits = 1},
      }, lineup.ppl_columns(function(key) return lineup.paper_column(paper, "head", key) end), {
        {key = "test_sd_paper", label = "Test sd (paper)", digits = 2},
      }),
    }
    for _, h in ipairs(HEADS) do t16:add(lineup.head_row(h, all, expected, paper)) end
    t16:note(presets.switch_note(ctx.cfg))
    t16:note_yardsticks(results)
    lineup.print_and_save(t16, ctx.out, "report")

    local tests = PAPER_TESTS[cfg.dataset] or {}
    local t17 = lmkit.report.table{
      title = ("Two-sided Wilcoxon rank-sum tests of test ppl on %s, sampled seeds only (thesis Table 5.17; " ..
               "LMS-PLIF vs Softmax: Table 4.9)"):format(data.short),
      data = data,
      columns = lineup.ranksum_columns(),
    }
    for _, pair in ipairs(TESTS) do
      local a, b = pair[1], pair[2]
      local published = tests[a .. "_vs_" .. b] or {}
      local line = lineup.ranksum_row(lineup.label(a), lineup.label(b), sampled[a], sampled[b])
      line.paper_a, line.paper_b, line.paper_a_sd, line.paper_b_sd = published.a, published.b, published.a_sd, published.b_sd
      line.p_paper, line.t_p_paper = published.p, published.t_p
      t17:add(line)
    end
    lineup.print_and_save(t17, ctx.out, "pvalues")
    if cfg.seeds < 3 then print("p-values need at least 3 seeds (2 sampled ones per head)") end
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}, " .. ctx.out .. "/pvalues.{md,csv,tex}")
  end,
}
