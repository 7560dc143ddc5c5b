-- Two cells that each train a small model for a few seconds (step_delay slows every step), for the
-- batch tests that stop tasks mid-training and resume them.
local recipe = require "lmkit.recipe"
return recipe.define{
  name = "train_cells",
  settings = {epochs = recipe.setting(3, "epochs per cell"),
               step_delay = recipe.setting(0.0, "seconds of sleep after every training step (> 0 slows the cells)")},
  grid = function() return {{seed = 1}, {seed = 2}} end,
  run = function(cell, ctx)
    local language = lmkit.data.synthetic{vocab = 30, states = 12, dim = 4, seed = 7}
    local corpus = language:corpus{train = 4000, valid = 800, test = 800}
    lmkit.seed(cell.seed)
    local model = lmkit.model{vocab_size = 30, emb = 8, nhid = 16, nhidlast = 8, nlayers = 2,
                              dropout = 0.1, dropouth = 0.1, dropouti = 0.1, dropoute = 0.05, wdrop = 0.2}
    local delay = ctx.cfg.step_delay
    local run = lmkit.train{
      model = model, corpus = corpus, run_dir = ctx.dir .. "/run", lr = 5, batch_size = 4, bptt = 10,
      epochs = ctx.cfg.epochs, switch = "none", log_interval = 20, eval_batch_size = 4, test_batch_size = 2,
      seed = cell.seed,
      on_step = delay > 0 and function() lmkit.process.sleep(delay) end or nil,
      -- A number of the recipe's own, for `lmkit compare --metric` (and for the preemption tests:
      -- a resumed run keeps these records as the epochs' own).
      on_epoch_end = function(info, control) control:record{valid_ppl_twice = 2 * info.valid_ppl} end,
    }
    return {test_ppl = ("%.9g"):format(run:summary().test_ppl)}
  end,
  report = function(results)
    local parts = {}
    for _, r in ipairs(results) do parts[#parts + 1] = r.result and r.result.test_ppl or "-" end
    print("test ppl: " .. table.concat(parts, " "))
  end,
}
