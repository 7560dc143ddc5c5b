-- Time of the rank pipeline end to end: the logP matrix of a PTB-shaped Softmax AWD-LSTM over a
-- test stream (PTB test: 82,430 contexts × 10,000), its singular values and the Press rank, as
-- recipes/presets/measure.lua computes them (batch 1, bptt 70, float32).
--   ./build/lmkit run scripts/bench_rank.lua --set device=cuda                 # the issue's PTB shape
--   ./build/lmkit run scripts/bench_rank.lua --set contexts=2000 --set vocab=1000 --set emb=32 --set nhid=64
-- The model is untrained (seeded): the time depends on the shapes, not on what the model learned,
-- so no corpus or checkpoint is needed; the rank it prints is not a result. The token stream is
-- bench_train.lua's LCG. The time is taken once, after one small untimed warm-up of the same code
-- path (CUDA context, kernels, LAPACK's threads). Prints one JSON line.
local cfg = lmkit.configure({contexts = 82430, vocab = 10000, emb = 400, nhid = 1150, device = "cpu",
                             method = "auto", threads = 2, seed = 141})
lmkit.set_threads(cfg.threads)
lmkit.seed(cfg.seed)
local model = lmkit.model{vocab_size = cfg.vocab, emb = cfg.emb, nhid = cfg.nhid, nhidlast = cfg.emb,
                          head = lmkit.heads.softmax()}:eval()
if cfg.device ~= "cpu" then model:to(cfg.device) end

local function token_stream(n)
  local tokens, x = {}, cfg.seed
  for i = 1, n do
    x = x * 6364136223846793005 + 1442695040888963407
    tokens[i] = (x >> 33) % cfg.vocab
  end
  return lmkit.tensor(tokens, {dtype = "int64"})
end

local function rank_of(tokens)
  local sv, rows, cols, method = lmkit.analysis.logp_svdvals(model, tokens, {batch_size = 1, method = cfg.method})
  return lmkit.analysis.press_rank(sv, rows, cols), rows, cols, method
end

rank_of(token_stream(math.min(cfg.contexts, 200) + 1))
local tokens = token_stream(cfg.contexts + 1)
local start = lmkit.clock()
local rank, rows, cols, method = rank_of(tokens)
local seconds = lmkit.clock() - start
local v = lmkit.version()
print(("{\"impl\": \"lmkit\", \"bench\": \"logp_rank\", \"device\": %q, \"rows\": %d, \"cols\": %d, \"method\": %q, " ..
       "\"threads\": %d, \"seconds\": %.2f, \"press_rank\": %d, \"torch\": %q, \"lmkit\": %q}"):format(
  cfg.device, rows, cols, tostring(method), cfg.threads, seconds, rank, tostring(v.torch), tostring(v.lmkit)))
