-- The softmax bottleneck on a language of known rank (beyond the thesis: none of the papers could
-- do this). lmkit's synthetic languages know their truth: for kind = "softmax" the true
-- log-probability matrix Q* has rank r = dim + 2 (a softmax of dimension dim expresses the language
-- exactly), for kind = "hmm" Q* is a mixture of softmaxes of high rank; both know their entropy
-- rate, the perplexity no model can beat. So the thesis's claim — a high rank is neither necessary
-- nor sufficient for a good language model — can be tested where the truth is known: a Softmax
-- model with d + 2 below r cannot express a "softmax" language, one above r can; SigSoftmax, GSS,
-- LMS-PLIF and MoS at the small d show whether breaking the rank limit closes the gap.
--
--   lmkit run recipes/known_rank.lua                                  -- 12 models, ~3 minutes on 2 CPU cores
--   lmkit run recipes/known_rank.lua --set languages=softmax --set heads=mos --set epochs=1   -- the test
--   lmkit run recipes/known_rank.lua --set dim=32 --set small_d=8 --set large_d=64 --set epochs=10
--
-- Each cell: one language × one model, trained at tiny scale (recipes/presets/awd_lstm.lua) on a
-- corpus drawn from the language, then measured on its test split: the gap to the bound, log(ppl) −
-- the true mean NLL of that split (nats/token; the bound is `lang:nll` of the same tokens), and the
-- Press (float32 eps, as the thesis) and ε-effective (ε = 1e-3) ranks of the learned Q beside Q*'s.
-- Our choices (the papers have no such experiment): the language sizes (vocab 200, 48 states,
-- dim 16: r = 18), d = 4 below and 32 above r − 2, the other heads at the small d, ε = 1e-3.
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local lineup = require "presets.lineup"
local measure = require "presets.measure"

local function language(cfg, kind)
  return lmkit.data.synthetic{vocab = cfg.vocab, states = cfg.states, dim = cfg.dim, kind = kind, seed = cfg.language_seed}
end

return recipe.define{
  name = "known_rank",
  description = "The bottleneck on synthetic languages of known rank: gap to the entropy bound vs rank, per head and d",
  settings = presets.settings{
    languages = recipe.setting("softmax,hmm", "the synthetic kinds: \"softmax\" (rank dim + 2), \"hmm\" (high rank)"),
    vocab = recipe.setting(200, "the languages' vocabulary"),
    states = recipe.setting(48, "their hidden states"),
    dim = recipe.setting(16, "their emission dimension (the \"softmax\" language's rank is dim + 2)"),
    language_seed = recipe.setting(1, "the languages' parameters and tokens"),
    train_tokens = recipe.setting(60000, "tokens drawn for training (valid and test: a tenth each)"),
    small_d = recipe.setting(4, "a Softmax below the rank (d + 2 < dim + 2), and every other head's d"),
    large_d = recipe.setting(32, "a Softmax above it"),
    heads = recipe.setting("sigsoftmax,gss,plif,mos,mixtape", "the other heads, at small_d"),
    epochs = recipe.setting(10, "epochs per model (the tiny scale's 3 leave most models at the unigram plateau)"),
    switch = recipe.setting("et", "the ASGD switch (SPEC §2): \"et\" or \"nt\""),
    switch_epoch = recipe.setting(0, "> 0: ET's epoch (default at tiny scale: the last but one)"),
    scale = recipe.setting("tiny", "the preset scale the models train at (their other sizes and rates)"),
  },

  grid = function(cfg)
    local cells = {}
    for _, kind in ipairs(lineup.list(cfg.languages)) do
      if kind ~= "softmax" and kind ~= "hmm" then
        error(("known_rank: languages are \"softmax\" or \"hmm\", got '%s'"):format(kind), 0)
      end
      cells[#cells + 1] = {language = kind, head = "softmax", d = cfg.small_d}
      cells[#cells + 1] = {language = kind, head = "softmax", d = cfg.large_d}
      for _, head in ipairs(lineup.list(cfg.heads)) do
        if head ~= "softmax" then cells[#cells + 1] = {language = kind, head = head, d = cfg.small_d} end
      end
    end
    return cells
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local lang = language(cfg, cell.language)
    local n = math.max(1000, cfg.train_tokens // 10)
    local corpus = lang:corpus{train = cfg.train_tokens, valid = n, test = n}
    local p = lineup.preset(cell.head, {dataset = "ptb", scale = cfg.scale})
    local model, summary = presets.train_cell{preset = p, head = lineup.head(p, cell.head), corpus = corpus,
                                              dir = ctx.dir .. "/run", model = lineup.sizes_at(cell.head, cell.d),
                                              train = presets.train_overrides(cfg)}
    -- The bound on these very test tokens, and Q* over the contexts the model's Q has (batch 1:
    -- row i predicts token i + 1).
    local bound_nll = lang:nll(corpus.test):mean():item()
    local sv, rows, cols = lmkit.analysis.logp_svdvals(model, corpus.test, {batch_size = 1})
    local qstar = lang:log_probs(corpus.test)
    local star_sv = lmkit.analysis.svdvals(qstar)
    -- The bound here: the language's own perplexity on these test tokens (not a fresh sample's).
    return {test_ppl = summary.test_ppl, bound_ppl = math.exp(bound_nll),
            unigram_ppl = corpus:unigram_perplexity("test"), gap = math.log(summary.test_ppl) - bound_nll,
            rank = lmkit.analysis.press_rank(sv, rows, cols), e3 = lmkit.analysis.effective_rank(sv, 1e-3),
            true_rank = lmkit.analysis.press_rank(star_sv, qstar:size(1), qstar:size(2), "float64"),
            true_e3 = lmkit.analysis.effective_rank(star_sv, 1e-3), contexts = rows, vocab = cols}
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local t = lmkit.report.table{
      title = "Synthetic languages of known rank: the gap to the entropy bound and the rank of Q, per head and d",
      data = {label = ("synthetic languages (vocab %d, %d states, dim %d; seed %d), tiny-scale models: not the paper's data")
                        :format(cfg.vocab, cfg.states, cfg.dim, cfg.language_seed),
              short = "synthetic languages", paper_data = false},
      columns = {
        {key = "language", label = "Language"}, {key = "true_rank", label = "rank Q* (Press, float64)"},
        {key = "true_e3", label = "ε-rank Q*"}, {key = "head", label = "Head"}, {key = "d", label = "d"},
        {key = "rank", label = "rank Q (Press)"}, {key = "e3", label = "ε-rank Q"},
        {key = "test_ppl", label = "Test ppl", digits = 2}, {key = "bound_ppl", label = "Bound ppl", digits = 2},
        {key = "gap", label = "Gap (nats/token)", digits = 4, best = "min"},
      },
    }
    local by_language, order = {}, {}
    for _, r in ipairs(results) do
      local row = {language = r.cell.language, head = lineup.label(r.cell.head), d = r.cell.d}
      local x = r.result
      if x then
        for _, k in ipairs{"true_rank", "true_e3", "rank", "e3", "test_ppl", "bound_ppl", "gap"} do row[k] = x[k] end
        local l = r.cell.language
        if not by_language[l] then by_language[l] = {x = {}, y = {}, labels = {}}; order[#order + 1] = l end
        local series = by_language[l]
        table.insert(series.x, x.rank)
        table.insert(series.y, x.gap)
        table.insert(series.labels, ("%s d=%d"):format(row.head, r.cell.d))
      end
      t:add(row)
    end
    t:note("ε-rank: the ε-effective rank for ε = 1e-3 (the smallest k holding 99.9% of Σσ²). Gap = log(test ppl) − " ..
           "the true mean NLL of the same test tokens: 0 is the best any model can do.")
    t:note(presets.switch_note(cfg, false))
    t:note_yardsticks(results)
    measure.print_and_save(t, ctx.out, "report")
    if #order > 0 then
      local series = {}
      for _, l in ipairs(order) do
        local b = by_language[l]
        series[#series + 1] = {x = b.x, y = b.y, labels = b.labels, label = ('"%s" language'):format(l)}
      end
      local plot_file = ctx.out .. "/gap_vs_rank.png"
      lmkit.plot.scatter{out = plot_file, series = series, xlabel = "Press rank of the learned Q",
                         ylabel = "gap to the entropy bound (nats/token)",
                         title = "Gap to the bound vs rank, synthetic languages of known rank"}
      print("plot: " .. plot_file)
    end
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
  end,
}
