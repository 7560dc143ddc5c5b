-- Mixtape (Yang, Luong, Salakhutdinov & Le, NeurIPS 2019): one softmax over per-word gated logits,
-- high-rank like MoS at close to one softmax's cost. Softmax vs MoS vs Mixtape at equal d: test
-- perplexity, Press rank of the logP matrix, time per training step and the head's activations.
-- The paper's claims: 3.5–10.5× faster than MoS, 20–34% slower than Softmax (GPU, 10–30K words).
--
--   lmkit run recipes/mixtape.lua                                   -- tiny scale (minutes on a CPU)
--   lmkit run recipes/mixtape.lua --set heads=softmax,mos,mixtape,mixtape_shared
--   lmkit run recipes/mixtape.lua --set scale=small
--
-- Cells: each head of `heads` ("mixtape_shared" is Mixtape with S = 0: every word shares one gate,
-- which makes it a Mixture of Contexts — the ablation of gate sharing taken to its end). Softmax
-- has emb = nhidlast = d; MoS and Mixtape project their last LSTM layer (its own width) to K
-- latent contexts of width d = emb, as in the MoS configuration (recipes/presets/awd_lstm.lua).
-- Each cell trains its model, then measures test ppl, the Press rank of Q on the test split, the
-- median wall time of `steps` training steps (forward + backward of the loss on one batch of
-- bptt × batch_size tokens, after one warm-up step, on this machine's threads; every head on the
-- same encoder, the Softmax configuration's with nhidlast = d) and the size of the
-- head's largest per-step tensors from their shapes (Softmax M·N logits, MoS M·K·N, Mixtape
-- M·K·min(S, N) + M·N; M = bptt · batch_size contexts).
-- Not in the paper, our choices: K = 4 (the paper's) and gate_dim = d/4 (the paper's d2 ≪ d; its
-- value for language models is not stated), S = 1000 (ids < S gated: the first-appearing words of lmkit's vocabularies,
-- frequency-sorted only for the synthetic language), Mixtape's dropoutl = MoS's, timing on CPU.
local recipe = require "lmkit.recipe"
local presets = require "presets.awd_lstm"
local lineup = require "presets.lineup"
local measure = require "presets.measure"

-- The head kind of a cell's name: "mixtape_shared" is Mixtape with S = 0.
local function kind(name)
  return name == "mixtape_shared" and "mixtape" or name
end

-- Mixtape's gate width: the setting, or d/4 (the paper's "d2 ≪ d"; its value for language models
-- is not stated).
local function gate_dim(cfg, d)
  return cfg.gate_dim > 0 and cfg.gate_dim or math.max(1, d // 4)
end

local function head_of(p, name, cfg, d, vocab)
  if kind(name) == "mixtape" then
    return presets.head(p, "mixtape", {K = cfg.K, S = name == "mixtape" and math.min(cfg.S, vocab) or 0,
                                       gate_dim = gate_dim(cfg, d)})
  end
  return lineup.head(p, name)
end

-- Median wall seconds of one training step (forward + backward of the loss on a fixed batch) of a
-- fresh model with `head` and the given encoder sizes: every head timed on the same encoder, so the
-- differences are the heads'.
local function step_seconds(head, sizes, bptt, batch_size, steps)
  lmkit.seed(1)
  local model = lmkit.model{vocab_size = sizes.vocab_size, emb = sizes.emb, nhid = sizes.nhid,
                            nhidlast = sizes.emb, nlayers = sizes.nlayers, head = head}:train()
  local ids = (lmkit.rand(bptt + 1, batch_size) * (sizes.vocab_size - 1)):to("int64")
  local input, target = ids[{{1, bptt}, {}}], ids[{{2, bptt + 1}, {}}]
  local hidden = model:init_hidden(batch_size)
  local times = {}
  for step = 0, steps do
    local start = lmkit.clock()
    local loss
    loss, hidden = model:loss(input, target, hidden)
    loss:backward()
    for _, p in ipairs(model:parameters()) do p.grad = nil end
    if step > 0 then times[#times + 1] = lmkit.clock() - start end
  end
  table.sort(times)
  return times[(#times + 1) // 2]
end

-- Elements of the head's largest per-step tensors, from the shapes (M contexts, N words).
local function activations(name, M, N, cfg, K)
  if name == "mos" or name == "moss" then return M * K * N end
  if kind(name) ~= "mixtape" then return M * N end
  local own = name == "mixtape" and math.min(cfg.S, N) or 0
  return M * cfg.K * own + M * N
end

return recipe.define{
  name = "mixtape",
  description = "Mixtape vs MoS vs Softmax at equal d: perplexity, rank, step time and activations",
  settings = presets.settings{"scale", "dataset", "corpus", "init_from", "epochs", "switch_epoch",
    heads = recipe.setting("softmax,mos,mixtape", "also: mixtape_shared (S = 0)"),
    K = recipe.setting(4, "Mixtape's components (MoS keeps the scale's K)"),
    S = recipe.setting(1000, "Mixtape: words (ids < S) with gates of their own"),
    gate_dim = recipe.setting(0, "Mixtape: width of the gates' tanh(U_j h); 0: d/4"),
    steps = recipe.setting(5, "timed training steps per cell (after one warm-up)"),
    switch = recipe.setting("et", "the ASGD switch (SPEC §2): \"et\" or \"nt\""),
    max_contexts = recipe.setting(-1, "Q's test contexts: -1 as the thesis (PTB all, WT2 the first 33,320), 0 all, n"),
  },

  grid = function(cfg)
    local cells = {}
    for _, head in ipairs(lineup.list(cfg.heads)) do cells[#cells + 1] = {head = head} end
    return cells
  end,

  run = function(cell, ctx)
    local cfg = ctx.cfg
    local p = lineup.preset(kind(cell.head), cfg)
    local corpus = presets.load_corpus(p)
    local vocab = corpus.vocab:size()
    -- Equal d: Softmax's emb = nhidlast = the mixtures' latent width (their emb).
    local mos_p = presets.resolve{family = "mos", dataset = cfg.dataset, scale = cfg.scale}
    local d = mos_p.model.emb
    local head = head_of(p, cell.head, cfg, d, vocab)
    local model, summary = presets.train_cell{preset = p, head = head, dir = ctx.dir .. "/run",
                                              model = lineup.sizes_at(kind(cell.head), d),
                                              corpus = corpus, train = presets.train_overrides(cfg)}
    local rank, contexts, _, method = measure.rank(model, corpus, measure.contexts(cfg.max_contexts, cfg.dataset))
    local bptt, batch_size = p.train.bptt, p.train.batch_size
    -- Timed on the Softmax configuration's encoder (nhidlast = d) for every head.
    local awd = presets.resolve{family = "awd", dataset = cfg.dataset, scale = cfg.scale}.model
    local timing = {vocab_size = vocab, emb = d, nhid = awd.nhid, nlayers = awd.nlayers}
    return presets.with_yardsticks({d = d, test_ppl = summary.test_ppl, params = model:parameter_count().head, rank = rank,
            contexts = contexts, vocab = vocab, rank_method = method,
            step = step_seconds(head, timing, bptt, batch_size, cfg.steps),
            activations = activations(cell.head, bptt * batch_size, vocab, cfg, p.head.K), M = bptt * batch_size,
            timing = ("emb = nhidlast = %d, nhid %d, %d layers"):format(d, awd.nhid, awd.nlayers),
            gate_dim = gate_dim(cfg, d), S = math.min(cfg.S, vocab)}, corpus)
  end,

  report = function(results, ctx)
    local cfg = ctx.cfg
    local data = presets.data(cfg)
    local t = lmkit.report.table{
      title = ("Mixtape vs MoS vs Softmax at equal d, %s"):format(data.short),
      data = data,
      columns = {
        {key = "head", label = "Head"}, {key = "d", label = "d"}, {key = "params", label = "Head params"},
        {key = "test_ppl", label = "Test ppl", digits = 2}, {key = "rank", label = "Rank"},
        {key = "step_ms", label = "Step (ms)", digits = 1}, {key = "vs_softmax", label = "× Softmax", digits = 2},
        {key = "vs_mos", label = "× MoS", digits = 2}, {key = "mb", label = "Head activations (MB)", digits = 2},
      },
    }
    local by = {}
    for _, r in ipairs(results) do
      if r.result then by[r.cell.head] = r.result end
    end
    local names, steps, ppls = {}, {}, {}
    for _, r in ipairs(results) do
      local label = r.cell.head == "mixtape_shared" and "Mixtape (S = 0)" or lineup.label(r.cell.head)
      local row = {head = label}
      local x = r.result
      if x then
        row.d, row.params, row.test_ppl, row.rank = x.d, x.params, x.test_ppl, x.rank
        row.step_ms, row.mb = 1000 * x.step, 4 * x.activations / 2^20
        if by.softmax then row.vs_softmax = x.step / by.softmax.step end
        if by.mos then row.vs_mos = x.step / by.mos.step end
        names[#names + 1], steps[#steps + 1], ppls[#ppls + 1] = label, 1000 * x.step, x.test_ppl
      end
      t:add(row)
    end
    local any = next(by) and by[next(by)]
    if any then
      t:note(("Step: median wall time of %d training steps (forward + backward, one batch of %d contexts) of an " ..
              "untrained model with the head on one encoder for all (%s), on this machine's CPU threads; head " ..
              "activations: float32 bytes of its largest per-step tensors, from the shapes."):format(cfg.steps, any.M,
              any.timing))
      t:note(("Mixtape: K = %d, S = %d (of %d words), gate_dim = %d. The paper's claims (GPU, 10–30K words): " ..
              "3.5–10.5× faster than MoS, 20–34%% slower than Softmax."):format(cfg.K, any.S, any.vocab, any.gate_dim))
    end
    measure.note_rank(t, results, cfg.dataset)
    t:note_yardsticks(results)
    t:note(presets.switch_note(cfg, false))
    measure.print_and_save(t, ctx.out, "report")
    if #names > 0 then
      local plot_file = ctx.out .. "/step_time.png"
      lmkit.plot.bars{out = plot_file, categories = names, series = {{values = steps, label = "step (ms)"}},
                      ylabel = "ms per training step", title = ("Step time per head, %s"):format(data.short)}
      print("plot: " .. plot_file)
    end
    print("report files: " .. ctx.out .. "/report.{md,csv,tex}")
  end,
}
