-- Quickstart: train a small AWD-LSTM on a synthetic language whose true next-word distributions
-- are known, and see how close it gets to the best perplexity any model can reach (the language's
-- entropy rate). Needs no download; about a minute on 2 CPU cores.
--
--   lmkit run recipes/quickstart.lua [--set epochs=10 --set nhid=128 --set switch=et --set switch_epoch=5 ...]
--   lmkit run recipes/quickstart.lua --set init_from=runs/quickstart-... --set epochs=0 --set finetune_epochs=3
--
-- The language is a "softmax" language (docs/data.md): its log-probability matrix has rank
-- dim + 2, so a softmax head of width emb ≥ dim + 1 can express it exactly; what remains between
-- the model and the entropy rate is estimation from finite data. The run directory keeps the
-- config, the metrics per step and epoch, the checkpoints and summary.json (docs/training.md).
local cfg = lmkit.configure({
  -- the language
  vocab = 200, states = 48, dim = 8, language_seed = 1,
  train_tokens = 100000, valid_tokens = 10000, test_tokens = 10000,
  -- the model (tied weights: nhidlast = emb)
  emb = 24, nhid = 96, nlayers = 2,
  dropout = 0.1, dropouth = 0.1, dropouti = 0.1, dropoute = 0.0, wdrop = 0.1,
  -- training (AWD-LSTM protocol, scaled down)
  -- switch: "nt" (when validation stalls for nonmono epochs) or "et" (after epoch switch_epoch)
  epochs = 6, lr = 20, batch_size = 20, bptt = 35, switch = "nt", nonmono = 2, switch_epoch = 4,
  seed = 141,
  run_dir = "",  -- default: runs/quickstart-<date>-<time>
  -- starting from another run, and finetuning (docs/training.md): a run directory or checkpoint
  -- whose weights start this run ("": none); finetune epochs after the main ones, at finetune_lr
  -- (0: lr)
  init_from = "", finetune_epochs = 0, finetune_lr = 0,
})

if cfg.epochs < 1 and cfg.init_from == "" then
  error(("--set epochs=%s: the quickstart trains at least 1 epoch (or starts from a model: --set init_from=DIR)"):format(cfg.epochs), 0)
end

local language = lmkit.data.synthetic{vocab = cfg.vocab, states = cfg.states, dim = cfg.dim,
                                      seed = cfg.language_seed}
local corpus = language:corpus{train = cfg.train_tokens, valid = cfg.valid_tokens, test = cfg.test_tokens}
print(corpus:summary())

lmkit.seed(cfg.seed)
local model = lmkit.model{
  vocab_size = cfg.vocab, emb = cfg.emb, nhid = cfg.nhid, nhidlast = cfg.emb, nlayers = cfg.nlayers,
  dropout = cfg.dropout, dropouth = cfg.dropouth, dropouti = cfg.dropouti, dropoute = cfg.dropoute,
  wdrop = cfg.wdrop, head = lmkit.heads.softmax(),
}
print(model)

local run_dir = cfg.run_dir ~= "" and cfg.run_dir or ("runs/quickstart-" .. os.date("%Y%m%d-%H%M%S"))
local run = lmkit.train{
  model = model, corpus = corpus, run_dir = run_dir,
  lr = cfg.lr, batch_size = cfg.batch_size, bptt = cfg.bptt, epochs = cfg.epochs,
  switch = cfg.switch, nonmono = cfg.nonmono, switch_epoch = cfg.switch_epoch, seed = cfg.seed,
  eval_batch_size = 10, test_batch_size = 1, log_interval = 50,
  init_from = cfg.init_from ~= "" and cfg.init_from or nil,
  finetune_epochs = cfg.finetune_epochs, finetune_lr = cfg.finetune_lr > 0 and cfg.finetune_lr or nil,
}
local s = run:summary()
if not s.test_ppl then  -- diverged (or stopped) before any epoch gave a best model
  error(("training ended with status '%s' and no model to test: %s\nrun directory: %s"):format(
    s.status, s.diagnostic or s.stop_reason or "no epoch finished", run:dir()), 0)
end

-- Two yardsticks: the unigram model (word frequencies of the training split, add-½ smoothed, no
-- context) and the true distribution (the entropy rate of the language, estimated on a long fresh sample).
local unigram_ppl = corpus:unigram_perplexity("test")
local best_ppl = language:best_perplexity(200000)

print(("\n%-28s %10s"):format("", "perplexity"))
print(("%-28s %10.2f"):format("unigram (no context)", unigram_ppl))
print(("%-28s %10.2f"):format("AWD-LSTM, valid", s.valid_ppl))
print(("%-28s %10.2f"):format("AWD-LSTM, test", s.test_ppl))
print(("%-28s %10.2f"):format("true distribution (bound)", best_ppl))
print(("\nThe model closes %.0f%% of the gap from the unigram model to the bound, in %.1f s per epoch."):format(
  100 * (math.log(unigram_ppl) - math.log(s.test_ppl)) / (math.log(unigram_ppl) - math.log(best_ppl)),
  s.seconds_per_epoch))
print("run directory: " .. run:dir())
if not (s.test_ppl < unigram_ppl) then
  error(("the model (test ppl %.2f) did not beat the unigram model (%.2f): training failed"):format(s.test_ppl, unigram_ppl))
end
print(("test perplexity %.2f (bound %.2f)"):format(s.test_ppl, best_ppl))
