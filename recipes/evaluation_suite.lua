-- The evaluation suite of the AWD-LSTM / MoS papers' peers, for every head (beyond the thesis, which
-- reports static test perplexity only): each model's test perplexity as trained, with a neural
-- cache (Grave et al. 2017; AWD-LSTM's pointer.py) and with dynamic evaluation (Krause et al. 2018;
-- the MoS and AWD-LSTM repositories' dynamiceval.py). Does a head that breaks the softmax
-- bottleneck gain as much from either as Softmax does?
--
--   lmkit run recipes/evaluation_suite.lua                               -- tiny: ptb-mini, small models
--   lmkit run recipes/evaluation_suite.lua --set heads=softmax,mos --set epochs=1 --set lines=500
--   lmkit run recipes/evaluation_suite.lua --set scale=paper --set models=runs/chapter5-models
--
-- Each cell trains (or, with --set models=, loads) one of chapter 5's models on real words
-- (recipes/presets/chapter5.lua: ptb-mini at tiny scale), then evaluates its test split three ways,
-- all with batch size 1 as pointer.py and dynamiceval.py do: plain (bptt 70), with the cache
-- (window, theta, lambda: pointer.py's README values for PTB, 500 / 1.0 / 0.1, our default — the
-- WikiText-2 ones are 3785 / 0.662 / 0.1279), and dynamic (lr 2e-3, λ 0.02, ε 1e-3, bptt 5: Krause
-- et al.'s AWD-LSTM settings; the statistics from the training split). Not in the thesis: which
-- settings (above), and that the cache and dynamic evaluation are reported apart, not combined.
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local chapter5 = require "presets.chapter5"
local measure = require "presets.measure"

return recipe.define{
  name = "evaluation_suite",
  description = "Test ppl per head: plain, with a neural cache, with dynamic evaluation (beyond the thesis)",
  settings = chapter5.settings{
    heads = recipe.setting("softmax,ss,gss,plif,mos", "the models (presets/chapter5.lua)"),
    window = recipe.setting(500, "the cache's contexts per column (pointer.py's PTB value)"),
    theta = recipe.setting(1.0, "the cache's flatness θ"),
    lambda = recipe.setting(0.1, "the cache's weight λ"),
    dynamic_lr = recipe.setting(2e-3, "dynamic evaluation's step size"),
    dynamic_lamb = recipe.setting(0.02, "its decay towards the trained weights"),
  },

  grid = function(cfg)
    return chapter5.model_cells(cfg)
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local model, summary, corpus = chapter5.train_model_cell(cell, ctx, true)
    local plain = lmkit.evaluate(model, corpus.test, {batch_size = 1, bptt = 70})
    local cached = lmkit.evaluate(model, corpus.test, {batch_size = 1, bptt = 70,
                                  cache = {window = cfg.window, theta = cfg.theta, lambda = cfg.lambda}})
    local dynamic = lmkit.dynamic_evaluate(model, corpus.train, corpus.test, {lr = cfg.dynamic_lr, lamb = cfg.dynamic_lamb})
    return presets.with_yardsticks({valid_ppl = summary.valid_ppl, test_ppl = plain.ppl, cache_ppl = cached.ppl,
                                    dynamic_ppl = dynamic.ppl, tokens = plain.tokens}, corpus)
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local data = presets.data(cfg, {words = true})
    local t = lmkit.report.table{
      title = ("Test perplexity with the peers' evaluation suite, models trained on %s"):format(data.short),
      data = data,
      columns = {
        {key = "model", label = "Model"}, {key = "test_ppl", label = "Test ppl", digits = 2},
        {key = "cache_ppl", label = "+ neural cache", digits = 2},
        {key = "cache_gain", label = "cache gain (%)", digits = 1},
        {key = "dynamic_ppl", label = "+ dynamic eval", digits = 2},
        {key = "dynamic_gain", label = "dynamic gain (%)", digits = 1},
      },
    }
    local categories, plain, cached, dynamic = {}, {}, {}, {}
    for _, r in ipairs(results) do
      local label = chapter5.model(r.cell.model).label
      local row = {model = label}
      local x = r.result
      if x then
        row.test_ppl, row.cache_ppl, row.dynamic_ppl = x.test_ppl, x.cache_ppl, x.dynamic_ppl
        row.cache_gain = 100 * (x.test_ppl - x.cache_ppl) / x.test_ppl
        row.dynamic_gain = 100 * (x.test_ppl - x.dynamic_ppl) / x.test_ppl
        categories[#categories + 1] = label
        plain[label], cached[label], dynamic[label] = x.test_ppl, x.cache_ppl, x.dynamic_ppl
      end
      t:add(row)
    end
    t:note(("Batch size 1 throughout. Cache: window %d, θ %g, λ %g (pointer.py). Dynamic evaluation: lr %g, λ %g, " ..
            "ε 1e-3, bptt 5 (Krause et al.). Gain = 1 − ppl / test ppl."):format(cfg.window, cfg.theta, cfg.lambda,
            cfg.dynamic_lr, cfg.dynamic_lamb))
    t:note(chapter5.switch_note(results, cfg))
    t:note_yardsticks(results)
    measure.print_and_save(t, ctx.out, "report")
    if #categories > 0 then
      local plot_file = ctx.out .. "/evaluation.png"
      lmkit.plot.bars{out = plot_file, categories = categories, ylabel = "test perplexity",
                      title = ("Evaluation suite per head, %s"):format(data.short),
                      series = {{label = "plain", values = plain}, {label = "+ neural cache", values = cached},
                                {label = "+ dynamic evaluation", values = dynamic}}}
      print("plot: " .. plot_file)
    end
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
  end,
}
