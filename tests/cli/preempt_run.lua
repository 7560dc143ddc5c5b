-- A small run that a SIGTERM interrupts at step `preempt_at` (sent by the run to itself, as a
-- cluster would), and whose epoch-end callback draws from Lua's math.random to change the lr: the
-- resumed run must restore Lua's random state too to match the run that never stopped.
local cfg = lmkit.configure({run_dir = "", preempt_at = 0})
assert(cfg.run_dir ~= "", "--set run_dir=... is required")
local pid = io.open("/proc/self/stat"):read("n")

local language = lmkit.data.synthetic{vocab = 30, states = 12, dim = 4, seed = 7}
local corpus = language:corpus{train = 4000, valid = 800, test = 800}
lmkit.seed(3)
local model = lmkit.model{vocab_size = 30, emb = 8, nhid = 16, nhidlast = 8, nlayers = 2,
                          dropout = 0.1, dropouth = 0.1, dropouti = 0.1, dropoute = 0.05, wdrop = 0.2}
math.randomseed(5)
local run = lmkit.train{
  model = model, corpus = corpus, run_dir = cfg.run_dir, lr = 5, batch_size = 4, bptt = 10, epochs = 3,
  switch = "none", log_interval = 20, eval_batch_size = 4, test_batch_size = 2, seed = 11,
  on_step = function(info, run)
    if info.step == cfg.preempt_at then os.execute("kill -TERM " .. pid) end
    if info.batch == 1 then run:set_lr(4 + 2 * math.random()) end
  end,
}
print(("finished: test ppl %.6f"):format(run:summary().test_ppl))
