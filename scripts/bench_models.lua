-- Forward + backward time per batch of a model on this machine (CPU), e.g.
--   ./build/lmkit run scripts/bench_models.lua --set size=ptb --set head=softmax --set threads=1
-- size: tiny (N=1000, d=32) or ptb (N=10000, emb 400, nhid 1150; MoS heads: emb 280, nhid 960,
-- nhidlast 620). Batch: bptt × bsz tokens. Times come from os.clock (process CPU time): with
-- threads = 1 that is the wall time of the batch; with more threads it is their sum.
local cfg = lmkit.configure({size = "tiny", head = "softmax", K = 15, bptt = 70, bsz = 20, steps = 3, threads = 1,
                             mixtape_K = 4, S = 1000, gate_dim = 64})
lmkit.set_threads(cfg.threads)
lmkit.seed(1)
local head = ({softmax = lmkit.heads.softmax(), sigsoftmax = lmkit.heads.sigsoftmax(),
               gss = lmkit.heads.gss{c = 0, k = 2}, plif = lmkit.heads.plif{},
               mos = lmkit.heads.mos{K = cfg.K}, moc = lmkit.heads.moc{K = cfg.K},
               mixtape = lmkit.heads.mixtape{K = cfg.mixtape_K, S = cfg.S, gate_dim = cfg.gate_dim}})[cfg.head]
local mixture = cfg.head == "mos" or cfg.head == "moc" or cfg.head == "mixtape"
-- The paper's PTB model of the head's family (recipes/presets); tiny: its dropouts at N = 1000, d = 32.
local o = require("presets.awd_lstm").paper_model(mixture and "mos" or "awd", "ptb")
if cfg.size == "tiny" then o.vocab_size, o.emb, o.nhid, o.nhidlast = 1000, 32, 64, 32 end
o.head = head
local model = lmkit.model(o):train()
local ids = (lmkit.rand(cfg.bptt + 1, cfg.bsz) * (o.vocab_size - 1)):to("int64")
local input, target = ids[{{1, cfg.bptt}, {}}], ids[{{2, cfg.bptt + 1}, {}}]
local clock = os.clock
local hidden = model:init_hidden(cfg.bsz)
local times = {}
for step = 0, cfg.steps do
  local start = clock()
  local loss
  loss, hidden = model:loss(input, target, hidden)
  loss:backward()
  for _, p in ipairs(model:parameters()) do p.grad = nil end
  if step > 0 then times[#times + 1] = clock() - start end  -- step 0 warms up
end
table.sort(times)
print(("%s %s: %d parameters, median %.3f s per batch of %dx%d (threads %d)"):format(
  cfg.size, cfg.head, model:parameter_count().total, times[(#times + 1) // 2], cfg.bptt, cfg.bsz, cfg.threads))
