-- Heads compared over seeds (thesis §4.4.2, Tables 4.8/4.9): Softmax, SS, GSS, LMS-PLIF and MoS,
-- each trained with 11 seeds (the preset's reported seed and 10 others); mean ± sd of train,
-- validation and test perplexity and of the rank of Q, the heads placed by mean test perplexity,
-- and two-sided Wilcoxon rank-sum p-values of each head's test perplexities against Softmax's over
-- the 10 other seeds (as Table 4.9 does). The thesis: GSS and SS are not significantly better than
-- Softmax on PTB despite their high ranks; LMS-PLIF (low rank) and MoS are.
--
--   lmkit run recipes/compare_heads.lua                                 -- tiny scale, 11 seeds
--   lmkit run recipes/compare_heads.lua --set seeds=3 --set epochs=1    -- a quick check (the test)
--   lmkit run recipes/compare_heads.lua --set scale=paper --set dataset=wikitext-2 --set task=7
--
-- Every head trains with its paper configuration at the chosen scale (MoS with the MoS code's;
-- GSS with the (c, k) the thesis chose per dataset, recipes/presets/lineup.lua). The first seed is
-- the configuration's own (141, 28 for MoS, 1881 on WT2); the other ten are drawn for each head
-- from a stream of its own, as the thesis sampled seeds per model (Table 4.9's rank-sum test
-- compares independent samples).
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local lineup = require "presets.lineup"
local measure = require "presets.measure"

-- Table 4.8 (11 seeds): #Param, time per epoch, then mean and sd of train, validation, test ppl and rank.
-- Table 4.9 (the 10 sampled seeds): test ppl mean and sd, rank-sum p-value against Softmax; t_p: the
-- AAAI paper's unpaired t-test p-value against Softmax over the same seeds (its Table 2).
local function row(params, time, train, train_sd, valid, valid_sd, test, test_sd, rank, rank_sd, t9, t9_sd, p, t_p)
  return {params = params, time = time, train_ppl = train, train_sd = train_sd, valid_ppl = valid, valid_sd = valid_sd,
          test_ppl = test, test_sd = test_sd, rank = rank, rank_sd = rank_sd, test10 = t9, test10_sd = t9_sd, p = p,
          t_p = t_p}
end
local PAPER = {
  ptb = {
    softmax = row("24.22M", "~55s", 33.91, 0.25, 59.55, 0.12, 57.08, 0.09, 402, 0, 57.08, 0.10, nil, nil),
    sigsoftmax = row("24.22M", "~57s", 32.87, 0.19, 59.69, 0.15, 57.05, 0.15, 5113, 85, 57.03, 0.15, 3.25e-1, 3.92e-1),
    gss = row("24.22M", "~58s", 33.68, 0.32, 59.51, 0.13, 57.00, 0.14, 8904, 57, 57.02, 0.13, 2.56e-1, 2.62e-1),
    plif = row("24.32M", "~59s", 36.67, 0.30, 59.08, 0.09, 56.80, 0.11, 496, 83, 56.81, 0.11, 5.06e-4, 1.91e-5),
    mos = row("21.50M", "~100s", 31.84, 0.23, 57.14, 0.26, 54.91, 0.26, 9981, 2, 54.88, 0.26, 1.57e-4, 2.02e-15),
  },
  ["wikitext-2"] = {
    softmax = row("33.55M", "~72s", 39.32, 0.14, 67.57, 0.14, 64.63, 0.08, 402, 0, 64.63, 0.09, nil, nil),
    sigsoftmax = row("33.55M", "~83s", 39.29, 0.17, 67.28, 0.16, 64.35, 0.17, 6634, 46, 64.35, 0.18, 1.93e-3, 3.46e-4),
    gss = row("33.55M", "~87s", 39.42, 0.41, 67.35, 0.22, 64.50, 0.13, 10122, 72, 64.51, 0.13, 5.87e-2, 2.74e-2),
    plif = row("33.65M", "~93s", 41.13, 0.15, 67.15, 0.21, 64.16, 0.17, 524, 74, 64.15, 0.17, 1.57e-4, 2.98e-7),
    mos = row("34.90M", "~600s", 36.17, 0.30, 64.54, 0.36, 61.96, 0.40, 15734, 188, 61.97, 0.43, 2.38e-4, 2.04e-13),
  },
}
-- Table 4.1 (PTB): rank of Q and perplexity difference to the baseline (Softmax ppl − the head's;
-- positive: better), as the heads' own papers reported them and as the thesis reproduced them.
local TABLE_4_1 = {
  sigsoftmax = {rank_reported = 4640, rank_thesis = 4979, diff_reported = 0.40, diff_thesis = -0.06},
  plif = {rank_reported = nil, rank_thesis = 580, diff_reported = 1.11, diff_thesis = 0.43},
  mos = {rank_reported = 9980, rank_thesis = 9979, diff_reported = 2.88, diff_thesis = 1.28},
}
local KNOWN = {softmax = true, sigsoftmax = true, gss = true, plif = true, mos = true, moc = true}

return recipe.define{
  name = "compare_heads",
  description = "Heads over 11 seeds: mean ± sd, rank, Wilcoxon rank-sum vs Softmax (thesis Tables 4.8/4.9)",
  settings = presets.settings{"scale", "dataset", "corpus", "init_from", "epochs", "switch", "switch_epoch", "seeds",
    heads = recipe.setting("softmax,sigsoftmax,gss,plif,mos", "Softmax must be among them for the p-values"),
    rank = recipe.setting(true, "the Press rank of Q on the test split per cell"),
  },

  grid = function(cfg)
    if cfg.seeds < 1 then error("compare_heads: seeds must be ≥ 1") end
    local heads = lineup.list(cfg.heads)
    for _, head in ipairs(heads) do
      if not KNOWN[head] then error("compare_heads: no head '" .. head .. "' in the line-up (softmax, sigsoftmax, gss, plif, mos, moc)") end
    end
    return lineup.seed_cells(heads, cfg, {per_head = true})
  end,

  needs = lineup.needs,

  run = function(cell, ctx)
    return lineup.run_cell{name = cell.head, cfg = ctx.cfg, seed = cell.seed, dir = ctx.dir .. "/run", rank = ctx.cfg.rank}
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local paper = PAPER[cfg.dataset] or {}
    local heads = lineup.list(cfg.heads)
    -- Results per head: all seeds (Table 4.8) and the sampled ones, without the configuration's own (Table 4.9).
    local all, sampled, expected = lineup.by_name(results, heads, "head")

    local function paper_key(key) return lineup.paper_column(paper, "head", key) end
    -- Places by mean test perplexity among the heads shown: the paper's from its means, ours from ours.
    local paper_means, our_means = {}, {}
    for _, h in ipairs(heads) do
      if paper[h] then paper_means[h] = paper[h].test_ppl end
      our_means[h] = lineup.sample(all[h], "test_ppl")
    end
    local paper_place, our_place = lineup.places(paper_means), lineup.places(our_means)
    local data = presets.data(cfg)
    local t8 = lmkit.report.table{
      title = ("Heads over %d seeds on %s (thesis Table 4.8; mean ± sd)"):format(cfg.seeds, data.short),
      data = data,
      columns = lineup.join({
        {key = "function", label = "Function"}, {key = "n", label = "Seeds"},
        {key = "params_paper", label = "#Param (paper)"}, {key = "params", label = "#Param (ours)"},
        {key = "time_paper", label = "Time (paper)"}, {key = "time", label = "Time (ours, s/epoch)", digits = 1},
      }, lineup.ppl_columns(paper_key), {
        {key = "test_sd_paper", label = "Test sd (paper)", digits = 2},
        {key = "rank", label = "Rank", digits = 0, sd = "rank_sd", paper = paper_key("rank")},
        {key = "place", label = "Place (test ppl)", paper = function(row) return paper_place[row.head] end, delta = false},
      }),
    }
    local function round(x) return x and math.floor(x + 0.5) end
    for _, h in ipairs(heads) do
      local line = lineup.head_row(h, all, expected, paper)
      line.place = our_place[h]
      if #all[h] > 0 then
        local rank, rank_sd = lineup.sample(all[h], "rank")
        line.rank, line.rank_sd = round(rank), round(rank_sd)   -- the thesis rounds rank's mean and sd
      end
      t8:add(line)
    end
    t8:note(presets.switch_note(ctx.cfg))
    measure.note_rank(t8, results, cfg.dataset)
    t8:note_yardsticks(results)
    lineup.print_and_save(t8, ctx.out, "report")

    -- Table 4.9: the sampled seeds only, each head against Softmax.
    local _, _, _, base = lineup.sample(sampled.softmax or {}, "test_ppl")
    local t9 = lmkit.report.table{
      title = ("Wilcoxon rank-sum vs Softmax on %s, sampled seeds only (thesis Table 4.9)"):format(data.short),
      data = data,
      columns = lineup.join({
        {key = "function", label = "Function"}, {key = "n", label = "Seeds"},
        {key = "test_ppl", label = "Test ppl", digits = 2, sd = "test_sd", paper = paper_key("test10")},
        {key = "test_sd_paper", label = "Test sd (paper)", digits = 2},
      }, lineup.p_columns()),
    }
    for _, h in ipairs(heads) do
      local mean, sd, n, values = lineup.sample(sampled[h], "test_ppl")
      local line = {["function"] = lineup.label(h), head = h, n = n, test_ppl = mean, test_sd = sd,
                    test_sd_paper = paper[h] and paper[h].test10_sd,
                    p_paper = paper[h] and paper[h].p, t_p_paper = paper[h] and paper[h].t_p}
      if h ~= "softmax" and base then lineup.add_p(line, values, base) end
      t9:add(line)
    end
    lineup.print_and_save(t9, ctx.out, "pvalues")
    if not base or #base < 2 then
      print("p-values need Softmax and at least 3 seeds (2 sampled ones per head)")
    end

    -- Table 4.1: the configuration's own seed of SS, LMS-PLIF and MoS against Softmax's (single models,
    -- as the heads' papers and the thesis's reproduction report them).
    local own = {}
    for _, r in ipairs(results) do
      if r.result and r.cell.seed_index == 1 then own[r.cell.head] = r.result end
    end
    local t41 = lmkit.report.table{
      title = ("Reported vs reproduced on %s: rank of Q and ppl difference to Softmax, the configuration's own seed " ..
               "(thesis Table 4.1, PTB)"):format(data.short),
      data = data,
      columns = {
        {key = "function", label = "Function"},
        {key = "rank_reported", label = "Rank (reported)"}, {key = "rank_thesis", label = "Rank (thesis)"},
        {key = "rank", label = "Rank (ours)"},
        {key = "diff_reported", label = "ppl diff (reported)", digits = 2}, {key = "diff_thesis", label = "ppl diff (thesis)", digits = 2},
        {key = "diff", label = "ppl diff (ours)", digits = 2},
      },
    }
    for _, h in ipairs{"sigsoftmax", "plif", "mos"} do
      local published = cfg.dataset == "ptb" and TABLE_4_1[h] or {}
      local line = {["function"] = lineup.label(h), rank_reported = published.rank_reported,
                    rank_thesis = published.rank_thesis, diff_reported = published.diff_reported,
                    diff_thesis = published.diff_thesis}
      if own[h] then
        line.rank = own[h].rank
        if own.softmax then line.diff = own.softmax.test_ppl - own[h].test_ppl end
      end
      t41:add(line)
    end
    t41:note("ppl diff = Softmax's test ppl − the head's (positive: better than the baseline). The reported numbers " ..
             "are the SS, LMS-PLIF and MoS papers' own; the thesis's were trained with each author's code and shared " ..
             "hyperparameters, ours with lmkit's line-up.")
    t41:note(presets.switch_note(cfg))
    lineup.print_and_save(t41, ctx.out, "table4_1")

    print("report files: " .. ctx.out .. "/{report,pvalues,table4_1}.{md,csv,tex}")
  end,
}
