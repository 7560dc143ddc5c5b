-- A recipe whose one cell goes wrong as `--set kind=` says, for cell_errors.sh:
--   bug       a runtime error in the recipe's own code (a traceback of the recipe's frames helps)
--   mistake   an lmkit function given a file that is not there (its message is all one needs)
--   loop      Ctrl-C while the cell runs Lua code
--   train     Ctrl-C while the cell trains (the run saves its state; the next run resumes it)
local recipe = require "lmkit.recipe"

local function interrupt_soon(seconds)
  os.execute(("(sleep %g; kill -INT %d) >/dev/null 2>&1 &"):format(seconds, lmkit.process.pid()))
end

local function index_of_nothing(t)
  return t.field  -- line 13: t is nil for kind=bug
end

return recipe.define{
  name = "cell_errors",
  settings = {kind = recipe.setting("bug", "bug, mistake, loop or train")},
  grid = function() return {{x = 1}} end,
  run = function(_, ctx)
    local kind = ctx.cfg.kind
    if kind == "bug" then return {value = index_of_nothing(nil)} end
    if kind == "mistake" then return {value = lmkit.read_tensors("no/such/outputs.npy")} end
    if kind == "loop" then
      interrupt_soon(0.3)
      local start = lmkit.clock()
      while lmkit.clock() - start < 30 do end
      return {value = "not interrupted"}
    end
    local language = lmkit.data.synthetic{vocab = 30, states = 12, dim = 4, seed = 7}
    local corpus = language:corpus{train = 4000, valid = 800, test = 800}
    lmkit.seed(1)
    local model = lmkit.model{vocab_size = 30, emb = 8, nhid = 16, nhidlast = 8, nlayers = 2}
    local started = false
    local run = lmkit.train{model = model, corpus = corpus, run_dir = ctx.dir .. "/run", lr = 5, batch_size = 4, bptt = 10,
                            epochs = 50, switch = "none", eval_batch_size = 4, test_batch_size = 2,
                            on_step = function()
                              if not started then started = true; interrupt_soon(0.2) end
                              lmkit.process.sleep(0.01)
                            end}
    return {test_ppl = run:summary().test_ppl}
  end,
  report = function(results)
    print("value: " .. tostring(results[1].result and (results[1].result.value or results[1].result.test_ppl)))
  end,
}
