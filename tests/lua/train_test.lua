-- lmkit.train / resume / evaluate from Lua: callbacks, the run object, exact evaluation.
local T = require "lmkit.testing"

local root = os.tmpname()
os.remove(root)

local function corpus()
  local lang = lmkit.data.synthetic{vocab = 30, states = 12, dim = 4, seed = 7}
  return lang:corpus{train = 4000, valid = 800, test = 800}, lang
end

local function tiny()
  lmkit.seed(3)
  return lmkit.model{vocab_size = 30, emb = 8, nhid = 16, nhidlast = 8, nlayers = 2,
                     dropout = 0.1, dropouth = 0.1, dropouti = 0.1, dropoute = 0.05, wdrop = 0.2}
end

local function options(extra)
  local o = {lr = 5, batch_size = 4, bptt = 10, epochs = 2, log_interval = 20, eval_batch_size = 4,
             test_batch_size = 2, seed = 11}
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end

local counter = 0
local function run_dir()
  counter = counter + 1
  return root .. "/run" .. counter
end

T.test("a run directory has one writer: a training started from inside another on its directory is refused", function()
  local c = corpus()
  local dir = run_dir()
  local nested_error
  local o = options{model = tiny(), corpus = c, run_dir = dir, epochs = 1}
  o.on_step = function(_, control)
    if nested_error == nil then
      local ok, err = pcall(lmkit.train, options{model = tiny(), corpus = c, run_dir = dir, epochs = 1})
      nested_error = ok and "accepted" or tostring(err)
      control:stop("checked")
    end
  end
  lmkit.train(o)
  T.truthy(nested_error:find("' is in use: it is held by pid", 1, true), nested_error)
  T.truthy(nested_error:find("training run", 1, true), nested_error)
  -- The lock went with the first run: resuming it now is allowed.
  T.eq(lmkit.resume(dir):summary().status, "finished")
  -- lmkit.fs.with_lock: the same rule for any folder, released when the function returns or raises.
  local lock = root .. "/folder.lock"
  lmkit.fs.mkdir(root)
  T.eq(lmkit.fs.with_lock(lock, function() return 1, 2 end), 1)
  local inner = T.raises(function()
    lmkit.fs.with_lock(lock, function() lmkit.fs.with_lock(lock, function() end) end, "outer")
  end, "is in use: its lock")
  T.truthy(inner:find(": outer", 1, true), inner)
  T.raises(function() lmkit.fs.with_lock(lock, function() error({code = 7}) end) end)
  T.eq(select(2, pcall(lmkit.fs.with_lock, lock, function() error({code = 7}) end)).code, 7)
  T.eq(lmkit.fs.with_lock(lock, function() return "free again" end), "free again")
  -- On a folder: the lock is the folder's own, and deleting its record frees nothing.
  local folder = root .. "/locked_folder"
  lmkit.fs.mkdir(folder)
  local held = T.raises(function()
    lmkit.fs.with_lock(folder, function()
      os.remove(folder .. "/.lock")
      lmkit.fs.with_lock(folder, function() end)
    end, "outer")
  end, "locked_folder' is in use: it is held by another process (its record")
  T.truthy(not held:find("its lock '", 1, true), held)
  T.eq(lmkit.fs.with_lock(folder, function() return "free again" end), "free again")
end)

T.test("a best.ckpt of another model than the run's config.json is refused, not loaded as the run's", function()
  local c = corpus()
  local dir = run_dir()
  lmkit.train(options{model = tiny(), corpus = c, run_dir = dir, epochs = 1})
  T.eq(lmkit.open_run(dir):best_model():parameter_count().total, tiny():parameter_count().total)
  local other = lmkit.model{vocab_size = 30, emb = 8, nhid = 20, nhidlast = 8, nlayers = 2,
                            dropout = 0.1, dropouth = 0.1, dropouti = 0.1, dropoute = 0.05, wdrop = 0.2}
  other:save(dir .. "/best.ckpt")
  T.raises(function() lmkit.open_run(dir):best_model() end, "best.ckpt holds another model than config.json describes (model.nhid: 16 in config.json, 20 in best.ckpt)")
end)

T.test("a Transformer run written when its config carried alpha = beta = 0 still gives its best model", function()
  local c = corpus()
  local dir = run_dir()
  lmkit.seed(3)
  local m = lmkit.model{encoder = "transformer", vocab_size = 30, emb = 8, nlayers = 1, heads = 2, ff = 16, context = 10}
  lmkit.train{model = m, corpus = c, run_dir = dir, epochs = 1, bptt = 10, batch_size = 4, eval_batch_size = 4,
              test_batch_size = 2, log_interval = 50, seed = 11}
  local function with_model_options(extra)
    local f = assert(io.open(dir .. "/config.json"))
    local config = lmkit.json_decode(f:read("a"))
    f:close()
    for k, v in pairs(extra) do config.model[k] = v end
    f = assert(io.open(dir .. "/config.json", "w"))
    f:write(lmkit.json_encode(config))
    f:close()
  end
  -- What earlier lmkit versions wrote for a Transformer: AR and TAR at 0, now the AWD-LSTM's own options.
  with_model_options{alpha = 0, beta = 0}
  T.eq(lmkit.open_run(dir):best_model():parameter_count().total, m:parameter_count().total)
  with_model_options{alpha = 2}
  T.raises(function() lmkit.open_run(dir):best_model() end, "model.alpha: 2 in config.json, absent in best.ckpt")
  T.raises(function() lmkit.model{encoder = "transformer", vocab_size = 30, emb = 8, alpha = 2} end,
           "'alpha' = 2 is no longer a Transformer option")
end)

T.test("train returns a run whose files and summary say what happened", function()
  local c = corpus()
  local o = options{model = tiny(), corpus = c, run_dir = run_dir(), switch = "et", switch_epoch = 1}
  local run = lmkit.train(o)
  local s = run:summary()
  T.eq(s.status, "finished")
  T.eq(s.switch_epoch, 1)
  T.eq(s.epochs, 2)
  T.truthy(s.test_ppl > 1 and s.test_ppl < 30, "test ppl " .. tostring(s.test_ppl))
  T.eq(s.parameters.total, run:best_model():parameter_count().total)
  local epochs = run:metrics("epoch")
  T.eq(#epochs, 2)
  T.eq(epochs[2].averaging, true)
  T.truthy(#run:metrics("step") > 0)
  T.eq(run:config().train.lr, 5)
  T.eq(lmkit.open_run(run:dir()):summary().test_ppl, s.test_ppl)
  T.raises(function() return run:summry() end, "Run has no method or field 'summry'")
end)

T.test("callbacks see every step and epoch and can change the run", function()
  local c = corpus()
  local steps, epochs, evals, switched = 0, 0, 0, nil
  local run = lmkit.train(options{
    model = tiny(), corpus = c, run_dir = run_dir(), epochs = 3, switch = "et", switch_epoch = 1,
    on_step = function(info, run)
      steps = steps + 1
      T.eq(info.step, steps)
      if info.step == 3 then run:set_lr(2.5) end
      if info.step > 3 and info.epoch == 1 then T.eq(info.lr, 2.5) end  -- the switch restarts at lr
    end,
    on_epoch_end = function(info, run)
      epochs = epochs + 1
      if info.epoch == 2 then run:stop("enough") end
    end,
    on_switch = function(info) switched = info.epoch end,
    on_eval = function(info) evals = evals + 1 end,
  })
  local s = run:summary()
  T.eq(s.status, "stopped")
  T.eq(s.stop_reason, "enough")
  T.eq(epochs, 2)
  T.eq(switched, 1)
  T.eq(evals, 3)  -- two validations and the final test
end)

T.test("a callback's error stops the run with the callback named", function()
  T.raises(function()
    lmkit.train(options{model = tiny(), corpus = corpus(), run_dir = run_dir(),
                        on_step = function() error("boom in my callback") end})
  end, "boom in my callback")
end)

T.test("freeze keeps a layer's weights fixed from the next step on", function()
  local m = tiny()
  local embedding  -- shares the model's storage (m:parameters() lists the trainable ones only)
  for _, p in ipairs(m:parameters()) do
    local size = p:size()
    if #size == 2 and size[1] == 30 and size[2] == 8 then embedding = p end
  end
  local after_first_step
  lmkit.train(options{model = m, corpus = corpus(), run_dir = run_dir(), epochs = 1, test = false,
    on_step = function(info, run)
      if info.step == 1 then
        T.truthy(run:freeze("encoder.embedding") == 1)
        after_first_step = embedding:clone()
      end
    end})
  -- The best model is loaded back at the end; an epoch-1 best equals the frozen embedding.
  T.truthy(after_first_step:equal(embedding), "the frozen embedding changed")
  T.raises(function()
    lmkit.train(options{model = tiny(), corpus = corpus(), run_dir = run_dir(), epochs = 1, test = false,
                        on_step = function(info, run) run:freeze("no.such.layer") end})
  end, "no parameter name starts with 'no.such.layer'")
end)

T.test("options are checked by name", function()
  T.raises(function() lmkit.train(options{model = tiny(), corpus = corpus(), run_dir = run_dir(), learning_rate = 1}) end,
           "'learning_rate' is unknown")
  T.raises(function() lmkit.train(options{model = tiny(), corpus = corpus()}) end, "run_dir")
  T.raises(function() lmkit.train(options{model = tiny(), corpus = corpus(), run_dir = run_dir(), on_step = 3}) end,
           "'on_step' must be a function")
  T.raises(function() lmkit.resume(root .. "/nothing-here") end, "nothing to resume")
  -- model= and corpus= are named as options of argument 1, not by the stack slot they were copied to.
  T.raises(function() lmkit.train(options{model = tiny(), corpus = {1, 2}, run_dir = run_dir()}) end,
           "bad argument #1 to 'lmkit.train' (option 'corpus': Corpus expected, got table)")
  T.raises(function() lmkit.train(options{model = "tiny", corpus = corpus(), run_dir = run_dir()}) end,
           "bad argument #1 to 'lmkit.train' (option 'model': Model expected, got string)")
end)

T.test("evaluate with a neural cache: λ = 0 is the plain evaluation, repeated text gains, options are named", function()
  local m, c = tiny(), corpus()
  local plain = lmkit.evaluate(m, c.valid, {batch_size = 1, bptt = 10})
  local off = lmkit.evaluate(m, c.valid, {batch_size = 1, bptt = 10, cache = {window = 50, theta = 0.5, lambda = 0}})
  T.near(off.loss, plain.loss, 1e-6)  -- float32 model: summed per token in double vs mean in float32
  T.eq(off.tokens, plain.tokens)
  -- the same text twice: the second time the cache has seen every word that follows
  local twice = lmkit.cat({c.valid, c.valid}, 1)
  local n = c.valid:size(1)
  local cached = lmkit.evaluate(m, twice, {batch_size = 1, bptt = 10, cache = {window = n, theta = 1, lambda = 0.5}})
  local without = lmkit.evaluate(m, twice, {batch_size = 1, bptt = 10})
  T.truthy(cached.loss < without.loss, ("cache %.4f vs %.4f"):format(cached.loss, without.loss))
  T.raises(function() lmkit.evaluate(m, c.valid, {cache = {window = 0}}) end, "option 'cache.window' must be ≥ 1, got 0")
  T.raises(function() lmkit.evaluate(m, c.valid, {cache = {size = 5}}) end, "option 'cache.size' is unknown (accepted: window, theta, lambda)")
  T.raises(function() lmkit.evaluate(m, c.valid, {cache = {theta = "x"}}) end, "option 'cache.theta' must be a number")
  T.raises(function() lmkit.evaluate(m, c.valid, {cache = {lambda = 2}}) end, "option 'cache.lambda' must be in [0, 1], got 2")
  T.raises(function() lmkit.evaluate(m, c.valid, {cache = 5}) end, "option 'cache' must be a table")
end)

T.test("evaluate equals a plain forward loop, bit for bit", function()
  local m, c = tiny(), corpus()
  local r = lmkit.evaluate(m, c.valid, {batch_size = 4, bptt = 10})
  m:eval()
  local source = lmkit.data.batchify(c.valid, 4)
  local hidden, total, count = nil, 0, 0
  lmkit.no_grad(function()
    for input, target in lmkit.data.eval_batches(source, 10) do
      local loss
      loss, hidden = m:loss(input, target, hidden)
      local n = input:size(1) * input:size(2)
      total = total + loss:item() * n
      count = count + n
    end
  end)
  T.eq(r.tokens, count)
  T.eq(r.loss, total / count)
  T.near(r.ppl, math.exp(total / count), 1e-12)
end)

T.test("resume continues a stopped run to the same result", function()
  local c = corpus()
  local whole = lmkit.train(options{model = tiny(), corpus = c, run_dir = run_dir(), epochs = 3}):summary()
  local dir = run_dir()
  local first = lmkit.train(options{model = tiny(), corpus = c, run_dir = dir, epochs = 3,
    on_step = function(info, run) if info.step == 150 then run:stop("pause") end end}):summary()
  T.eq(first.status, "stopped")
  local resumed = lmkit.resume(dir):summary()  -- model and corpus rebuilt from config.json
  T.eq(resumed.status, "finished")
  T.eq(resumed.test_loss, whole.test_loss)
  T.eq(resumed.valid_loss, whole.valid_loss)
end)

T.test("a finished run continues with more epochs, its history kept, as if it had been given them at the start", function()
  local c = corpus()
  local whole = lmkit.train(options{model = tiny(), corpus = c, run_dir = run_dir(), epochs = 3}):summary()
  local dir = run_dir()
  T.eq(lmkit.train(options{model = tiny(), corpus = c, run_dir = dir, epochs = 2}):summary().status, "finished")
  T.raises(function() lmkit.resume(dir) end, "continue it with more epochs (lmkit.resume(dir, {epochs = 3 or more})")
  local continued = lmkit.resume(dir, {epochs = 3})
  local s = continued:summary()
  T.eq(s.status, "finished")
  T.eq(#continued:metrics("epoch"), 3, "the first two epochs' records are kept, the third added")
  T.eq(s.valid_loss, whole.valid_loss)
  T.eq(s.test_loss, whole.test_loss)
  -- Then a finetune stage from its best model, in the same run; and nothing more once it has ended.
  local tuned = lmkit.resume(dir, {finetune_epochs = 2})
  local stages = {}
  for _, record in ipairs(tuned:metrics("epoch")) do stages[#stages + 1] = record.stage end
  T.eq(stages, {"train", "train", "train", "finetune", "finetune"})
  T.truthy(tuned:summary().valid_loss <= s.valid_loss, "finetuning keeps the better model")
  T.raises(function() lmkit.resume(dir, {finetune_epochs = 2}) end, "give it more finetune epochs (finetune_epochs = 3 or more)")
end)

T.test("init_from starts a new run from another run's best model, e.g. to finetune it in a run of its own", function()
  local c = corpus()
  local base_dir = run_dir()
  local base = lmkit.train(options{model = tiny(), corpus = c, run_dir = base_dir, epochs = 2}):summary()
  local tuned = lmkit.train(options{model = tiny(), corpus = c, run_dir = run_dir(), epochs = 0, finetune_epochs = 2,
                                    init_from = base_dir})
  local s = tuned:summary()
  T.eq(s.status, "finished")
  T.eq(#tuned:metrics("epoch"), 2, "its own history: the two finetune epochs")
  -- Its first best model is the base's best (valid loss equal), which finetuning can only improve on.
  T.truthy(s.valid_loss <= base.valid_loss + 1e-12, ("%g > %g"):format(s.valid_loss, base.valid_loss))
  T.truthy(tuned:config().train.init_from:find(base_dir, 1, true), "config.json names the run it started from")
  local wider = lmkit.model{vocab_size = 30, emb = 8, nhid = 24, nhidlast = 8, nlayers = 2}
  T.raises(function() lmkit.train(options{model = wider, corpus = c, run_dir = run_dir(), init_from = base_dir}) end,
           "init_from = '" .. base_dir .. "'")
  T.raises(function() lmkit.train(options{model = tiny(), corpus = c, run_dir = run_dir(), init_from = root .. "/nowhere"}) end,
           "no such run directory or checkpoint file")
end)

T.test("dynamic evaluation runs and restores the weights", function()
  local m, c = tiny(), corpus()
  local before = m:parameters()[1]:clone()
  local r = lmkit.dynamic_evaluate(m, c.train, c.test, {lr = 0.05, stats_batch_size = 4, max_stats_windows = 20})
  T.truthy(r.ppl > 1)
  T.truthy(before:equal(m:parameters()[1]))
end)

T.run()
os.execute("rm -rf '" .. root .. "'")
