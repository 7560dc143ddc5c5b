-- Time of the rank pipeline end to end: the logP matrix of a PTB-shaped Softmax AWD-LSTM over a
-- test stream (PTB test: 82,430 contexts × 10,000), its singular values and the Press rank, as
-- recipes/presets/measure.lua computes them (batch 1, bptt 70, float32).
--   ./build/lmkit run scripts/bench_rank.lua --set device=cuda                 # the issue's PTB shape
--   ./build/lmkit run scripts/bench_rank.lua --set contexts=2000 --set vocab=1000 --set emb=32 --set nhid=64
-- The model is untrained (seeded): the time depends on the shapes, not on what the model learned,
-- so no corpus or checkpoint is needed; the rank it prints is not a result. The token stream is
-- bench_train.lua's LCG. The time is taken once, after one small untimed warm-up of the same code
-- path (CUDA context, kernels, LAPACK's threads). Where the time goes is printed apart, each line
-- flushed as soon as it is measured (a run stopped at a time limit keeps what it measured):
--   {"bench": "logp_matrix", ...}  building Q alone (the model's forward passes and log-softmax);
--   {"bench": "logp_rank", ...}    the whole pipeline: Q, its singular values, the Press rank;
--                                  "spectrum_seconds" is that time less Q's.
-- --set skip_matrix=true leaves out Q alone (it holds Q whole: 3.3 GB at the PTB shape).
-- The defaults: the paper's PTB Softmax model (recipes/presets).
local paper = require("presets.awd_lstm").paper_model("awd", "ptb")
local cfg = lmkit.configure({contexts = 82430, vocab = paper.vocab_size, emb = paper.emb, nhid = paper.nhid, device = "cpu",
                             method = "auto", threads = 2, seed = 141, skip_matrix = false})
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

-- Q alone; reading one of its numbers waits for the device to finish it.
local function matrix_of(tokens)
  local q = lmkit.analysis.logp_matrix(model, tokens, {batch_size = 1})
  local _ = q[1][1]:item()
  return q:size(1), q:size(2)
end

local v = lmkit.version()
local function emit(fields)
  local parts = {}
  for _, kv in ipairs(fields) do
    local value, text = kv[2], nil
    if value == nil then
      text = "null"
    elseif type(value) == "string" then
      text = ("%q"):format(value)
    elseif math.type(value) == "float" then
      text = ("%.2f"):format(value)
    else
      text = tostring(value)
    end
    parts[#parts + 1] = ("%q: %s"):format(kv[1], text)
  end
  io.stdout:write("{" .. table.concat(parts, ", ") .. "}\n")
  io.stdout:flush()
end

local warm = token_stream(math.min(cfg.contexts, 200) + 1)
rank_of(warm)
if not cfg.skip_matrix then matrix_of(warm) end
local tokens = token_stream(cfg.contexts + 1)
local matrix_seconds
if not cfg.skip_matrix then
  local start = lmkit.clock()
  local rows, cols = matrix_of(tokens)
  matrix_seconds = lmkit.clock() - start
  emit({{"impl", "lmkit"}, {"bench", "logp_matrix"}, {"device", cfg.device}, {"rows", rows}, {"cols", cols},
        {"threads", cfg.threads}, {"seconds", matrix_seconds}, {"torch", tostring(v.torch)},
        {"lmkit", tostring(v.lmkit)}})
  collectgarbage()
end
local start = lmkit.clock()
local rank, rows, cols, method = rank_of(tokens)
local seconds = lmkit.clock() - start
emit({{"impl", "lmkit"}, {"bench", "logp_rank"}, {"device", cfg.device}, {"rows", rows}, {"cols", cols},
      {"method", tostring(method)}, {"threads", cfg.threads}, {"seconds", seconds},
      {"spectrum_seconds", matrix_seconds and seconds - matrix_seconds or nil},
      {"press_rank", rank}, {"torch", tostring(v.torch)}, {"lmkit", tostring(v.lmkit)}})
