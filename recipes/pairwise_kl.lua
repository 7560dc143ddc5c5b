-- Expected pairwise KL divergence between next-word distributions (the MoS paper, Appendix C.1,
-- Table 11): E_{c,c'}[KL(P(·|c) ‖ P(·|c'))] over contexts of PTB's validation and test splits, for
-- Softmax, MoC and MoS. Yang et al. read a higher value as a sign of a higher-rank model, one that
-- tells contexts apart (Softmax 4.869 / 4.763, MoC 4.955 / 4.864, MoS 5.400 / 5.284 nats).
--
--   lmkit run recipes/pairwise_kl.lua                                  -- tiny scale (the synthetic language)
--   lmkit run recipes/pairwise_kl.lua --set scale=paper --set models=runs/chapter5-models
--   lmkit run recipes/pairwise_kl.lua --set heads=softmax,ss,gss,plif,moc,mos --set pairs=100000
--
-- Each cell trains (or, with --set models=, loads) one of chapter 5's models (presets/chapter5.lua)
-- and builds its logP matrix Q on each split (batch size 1, bptt 70, the state carried: the
-- contexts in reading order), then draws `pairs` context pairs c ≠ c' uniformly from Q's rows
-- (lmkit.analysis.pairwise_kl) and reports the mean KL with its standard error. Where the paper is
-- silent (the report says so): how many pairs it drew (ours: `pairs`, default 10,000, with the
-- standard error that number gives), and that its Softmax, MoC and MoS are Yang et al.'s own models;
-- ours are the thesis's chapter-5 models (ET-ASGD).
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local chapter5 = require "presets.chapter5"
local measure = require "presets.measure"

-- The MoS paper's Table 11 (PTB): expected pairwise KL on the validation and test splits.
local PAPER = {Softmax = {valid = 4.869, test = 4.763}, MoC = {valid = 4.955, test = 4.864}, MoS = {valid = 5.400, test = 5.284}}
local SPLITS = {"valid", "test"}

return recipe.define{
  name = "pairwise_kl",
  description = "Expected pairwise KL between next-word distributions per model (MoS paper, Table 11)",
  settings = chapter5.settings{
    heads = recipe.setting("softmax,moc,mos", "the models (presets/chapter5.lua: softmax ss gss plif mos moc ...)"),
    pairs = recipe.setting(10000, "context pairs drawn per split (the MoS paper does not say how many)"),
    kl_seed = recipe.setting(0, "seed of the pair draws (the same pairs for every model)"),
    max_contexts = recipe.setting(-1, "Q's contexts per split: -1 as the thesis's logP matrices " ..
                                      "(PTB all, WT2 the first 33,320), 0 all, n"),
  },

  grid = function(cfg)
    if cfg.pairs < 1 then error("pairwise_kl: pairs must be ≥ 1", 0) end
    return chapter5.model_cells(cfg)
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local model, summary, corpus = chapter5.train_model_cell(cell, ctx, false)
    local result = presets.with_yardsticks({valid_ppl = summary.valid_ppl, test_ppl = summary.test_ppl}, corpus)
    for _, split in ipairs(SPLITS) do
      local q = lmkit.analysis.logp_matrix(model, corpus[split], {batch_size = 1, bptt = 70,
                                           max_contexts = measure.contexts(cfg.max_contexts, cfg.dataset)})
      local kl = lmkit.analysis.pairwise_kl(q, {pairs = cfg.pairs, seed = cfg.kl_seed})
      result[split], result[split .. "_se"], result[split .. "_contexts"] = kl.mean, kl.standard_error, q:size(1)
      q = nil
      collectgarbage()  -- Q of PTB is 3.3 GB: free it before the next split's
    end
    return result
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local data = presets.data(cfg)
    local with_paper = cfg.dataset == "ptb"
    local function paper(split)
      if not with_paper then return false end
      return function(row) return PAPER[row.model] and PAPER[row.model][split] end
    end
    local t = lmkit.report.table{
      title = ("Expected pairwise KL divergence of next-word distributions on %s (MoS paper, Table 11; nats, mean ± s.e.)")
        :format(data.short),
      data = data,
      columns = {
        {key = "model", label = "Model"},
        {key = "valid", label = "Validation", format = "%.4g", sd = "valid_se", paper = paper("valid")},
        {key = "test", label = "Test", format = "%.4g", sd = "test_se", paper = paper("test")},
        {key = "contexts", label = "Contexts (valid/test)"},
        {key = "test_ppl", label = "Test ppl", digits = 2},
      },
    }
    for _, r in ipairs(results) do
      local row = {model = chapter5.model(r.cell.model).label}
      local x = r.result
      if x then
        row.valid, row.valid_se, row.test, row.test_se, row.test_ppl = x.valid, x.valid_se, x.test, x.test_se, x.test_ppl
        row.contexts = ("%d/%d"):format(x.valid_contexts, x.test_contexts)
      end
      t:add(row)
    end
    t:note(("Each split: %d pairs c ≠ c' drawn uniformly from Q's rows (seed %d; the same pairs for every model); " ..
            "the MoS paper does not say how many it drew."):format(cfg.pairs, cfg.kl_seed))
    t:note(chapter5.switch_note(results, cfg) .. " The MoS paper's numbers are of Yang et al.'s own models.")
    t:note_yardsticks(results)
    measure.print_and_save(t, ctx.out, "report")
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
  end,
}
