-- Training throughput of lmkit on this machine, the lmkit side of scripts/awd_lstm_reference.py
-- (the plain PyTorch yardstick); scripts/bench.sh runs both and prints the ratio.
--   ./build/lmkit run scripts/bench_train.lua --set size=tiny --set head=mos --set threads=2
-- One step = what the yardstick's step does: model:loss (embedding dropout, locked dropouts,
-- weight-dropped LSTMs, head NLL) + AR + TAR, backward, clip the global gradient norm to 0.25
-- (clip/(norm+1e-6), as clip_grad_norm_), SGD step with weight decay 1.2e-6 (as torch.optim.SGD),
-- hidden state carried (detached). Windows have the fixed length bptt (lmkit.train's random window
-- lengths and its per-epoch validation are left out, so both sides do the same tokens per step).
-- The token stream is the yardstick's 64-bit LCG, so both programs read identical tokens.
-- Wall time per step from lmkit.clock; prints one JSON line with impl = "lmkit".
-- device=cuda (or cuda:N) moves the model and the token batches there. The step's timing needs no
-- explicit synchronize (lmkit binds none): nll:item() at the end of each step copies to the host
-- after every kernel queued before it on the stream, the SGD update's included, so the clock
-- stops only once the whole step has run on the device.
local cfg = lmkit.configure({size = "tiny", head = "softmax", K = 15, bptt = 70, bsz = 0, steps = 20, warmup = 3,
                             threads = 2, lr = 20.0, seed = 141, collect = false, device = "cpu"})
lmkit.set_threads(cfg.threads)
lmkit.seed(cfg.seed)
assert(cfg.head == "softmax" or cfg.head == "mos", "head must be softmax or mos")
assert(cfg.size == "tiny" or cfg.size == "ptb" or cfg.size == "wt2", "size must be tiny, ptb or wt2")
local mos = cfg.head == "mos"
-- The paper's model and batch size (SPEC Table 4.3, from recipes/presets: the same values as the
-- yardstick's DROPOUTS); tiny: the PTB model's dropouts at N = 1000, d = 32, batch 20.
local presets = require "presets.awd_lstm"
local o, paper = presets.paper_model(mos and "mos" or "awd", cfg.size == "wt2" and "wikitext-2" or "ptb")
if cfg.size == "tiny" then o.vocab_size, o.emb, o.nhid, o.nhidlast = 1000, 32, 64, 32 end
local bsz = cfg.bsz > 0 and cfg.bsz or (cfg.size == "tiny" and 20 or paper.train.batch_size)
o.head = mos and lmkit.heads.mos{K = cfg.K, dropoutl = 0.29} or lmkit.heads.softmax()
local model = lmkit.model(o):train()
if cfg.device ~= "cpu" then model:to(cfg.device) end
local params = model:parameters()

-- Identical to token_stream() in scripts/awd_lstm_reference.py (Lua integers wrap mod 2^64).
local total = cfg.warmup + cfg.steps
local n_rows = total * cfg.bptt + 1
local tokens, x = {}, cfg.seed
for i = 1, n_rows * bsz do
  x = x * 6364136223846793005 + 1442695040888963407
  tokens[i] = (x >> 33) % o.vocab_size
end
local data = lmkit.data.batchify(lmkit.tensor(tokens, {dtype = "int64"}), bsz)  -- [n_rows, bsz]
if cfg.device ~= "cpu" then data = data:to(cfg.device) end

local lr, wdecay, clip = cfg.lr, 1.2e-6, 0.25
local function sgd_step()
  local sq = 0.0
  for _, p in ipairs(params) do
    local g = p.grad
    if g then sq = sq + g:norm():item() ^ 2 end
  end
  local coef = clip / (math.sqrt(sq) + 1e-6)
  lmkit.no_grad(function()
    for _, p in ipairs(params) do
      local g = p.grad
      if g then
        if coef < 1 then g:mul_(coef) end
        g:add_(p, wdecay)
        p:sub_(g, lr)
      end
    end
  end)
  for _, p in ipairs(params) do p.grad = nil end
end

local clock = lmkit.clock
local hidden = model:init_hidden(bsz)
local times, nll_value = {}, 0 / 0
for step = 0, total - 1 do
  local start = clock()
  local i = step * cfg.bptt
  local input, target = data[{{i + 1, i + cfg.bptt}, {}}], data[{{i + 2, i + cfg.bptt + 1}, {}}]
  local nll
  nll, hidden = model:loss(input, target, hidden)
  local loss = nll + model:ar() + model:tar()
  loss:backward()
  sgd_step()
  nll_value = nll:item()
  -- Lua's collector sees a tensor as a small userdata, not its storage or its autograd graph: without
  -- a collection the dead steps' tensors pile up (docs/benchmarks.md). collect=true frees them per step.
  if cfg.collect then collectgarbage() end
  if step >= cfg.warmup then times[#times + 1] = clock() - start end
end

local sum = 0.0
for _, t in ipairs(times) do sum = sum + t end
local sorted = {table.unpack(times)}
table.sort(sorted)
local n = #sorted
local median = n % 2 == 1 and sorted[(n + 1) // 2] or (sorted[n // 2] + sorted[n // 2 + 1]) / 2
local function round(v, d) local m = 10 ^ d; return math.floor(v * m + 0.5) / m end
local v = lmkit.version()
-- Keys in the yardstick's order (json_encode of a Lua table has no order, so the line is written out).
print(("{\"impl\": \"lmkit\", \"size\": %q, \"head\": %q, \"bsz\": %d, \"bptt\": %d, \"steps\": %d, \"warmup\": %d, " ..
       "\"threads\": %d, \"device\": %q, \"parameters\": %d, \"tokens_per_s\": %.1f, \"step_ms\": %.2f, \"step_ms_mean\": %.2f, " ..
       "\"final_nll\": %.4f, \"torch\": %q, \"lmkit\": %q}"):format(
  cfg.size, cfg.head, bsz, cfg.bptt, cfg.steps, cfg.warmup, cfg.threads, cfg.device, model:parameter_count().total,
  round(cfg.bptt * bsz * n / sum, 1), 1000 * median, 1000 * sum / n, nll_value, tostring(v.torch), tostring(v.lmkit)))
