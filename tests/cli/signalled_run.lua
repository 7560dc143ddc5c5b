-- A small training run that sends its own process a signal at step `at`, as a cluster (SIGTERM) or
-- a person at the keyboard (SIGINT) would; its epoch-end callback draws from Lua's math.random to
-- change the lr, so a resumed run must restore Lua's random state too to match one that never stopped.
--   local train = dofile("cli/signalled_run.lua"); train(run_dir, {signal = "INT", at = 150})
return function(run_dir, interruption)
  interruption = interruption or {}
  local pid = io.open("/proc/self/stat"):read("n")
  local language = lmkit.data.synthetic{vocab = 30, states = 12, dim = 4, seed = 7}
  local corpus = language:corpus{train = 4000, valid = 800, test = 800}
  lmkit.seed(3)
  local model = lmkit.model{vocab_size = 30, emb = 8, nhid = 16, nhidlast = 8, nlayers = 2,
                            dropout = 0.1, dropouth = 0.1, dropouti = 0.1, dropoute = 0.05, wdrop = 0.2}
  math.randomseed(5)
  return lmkit.train{
    model = model, corpus = corpus, run_dir = run_dir, lr = 5, batch_size = 4, bptt = 10, epochs = 3,
    switch = "none", log_interval = 20, eval_batch_size = 4, test_batch_size = 2, seed = 11,
    on_step = function(info, run)
      if info.step == interruption.at then
        if interruption.signal == "INT" then
          -- os.execute runs system(), which ignores SIGINT until the shell returns: send it from
          -- a background job a little later, and give it time to arrive within this step.
          os.execute(("(sleep 0.05; kill -INT %d) >/dev/null 2>&1 &"):format(pid))
          local start = os.clock()
          while os.clock() - start < 1 do end
        else
          os.execute(("kill -%s %d"):format(interruption.signal or "TERM", pid))
        end
      end
      if info.batch == 1 then run:set_lr(4 + 2 * math.random()) end
    end,
  }
end
