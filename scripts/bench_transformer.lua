-- Training throughput of lmkit's causal Transformer on this machine, the lmkit side of
-- scripts/transformer_reference.py (the same model in plain PyTorch); scripts/bench_transformer.sh
-- alternates the two and prints both.
--   ./build/lmkit run scripts/bench_transformer.lua --set size=tiny --set threads=2 --set tokens_file=/tmp/t.pt
-- lmkit.train as a user runs it: AdamW (weight decay 0.1 on matrices), warm-up + cosine, clip 1,
-- fixed windows of the context, softmax head, dropout 0.1. The training tokens come from
-- lmkit.data.synthetic and are written to tokens_file, which the PyTorch side reads, so both
-- programs train on identical tokens. tokens/s: the median over the log intervals after the first
-- (each interval's rate counts its own wall time, so the validation at the epoch's end is left out).
-- Prints one JSON line with impl = "lmkit".
local cfg = lmkit.configure({size = "tiny", threads = 2, steps = 60, interval = 10, seed = 141, tokens_file = "",
                             device = "cpu"})
lmkit.set_threads(cfg.threads)
local SIZES = {  -- vocab, emb, nlayers, heads, ff, context, batch
  tiny = {1000, 64, 2, 4, 256, 64, 20},
  small = {10000, 256, 4, 4, 1024, 128, 16},
}
local s = SIZES[cfg.size] or error("size must be tiny or small")
local vocab, emb, nlayers, heads, ff, context, bsz = table.unpack(s)
local corpus = lmkit.data.corpus{name = "synthetic", vocab = vocab, states = 64, dim = 16, seed = cfg.seed,
                                 train = bsz * (context * cfg.steps + 2), valid = bsz * context * 2, test = bsz * context * 2}
if cfg.tokens_file ~= "" then lmkit.write_tensors(cfg.tokens_file, {train = corpus.train}) end
lmkit.seed(cfg.seed)
local model = lmkit.model{encoder = "transformer", vocab_size = vocab, emb = emb, nlayers = nlayers, heads = heads, ff = ff,
                          context = context, dropout = 0.1, attention_dropout = 0.1}
if cfg.device ~= "cpu" then model:to(cfg.device) end
local dir = os.tmpname()
os.remove(dir)
local rates = {}
local run = lmkit.train{model = model, corpus = corpus, run_dir = dir, optimizer = "adamw", lr = 3e-3, wdecay = 0.1,
                        clip = 1.0, windows = "fixed", bptt = context, schedule = "cosine", warmup = 10, min_lr = 3e-4,
                        switch = "none", epochs = 1, batch_size = bsz, eval_batch_size = bsz, test = false,
                        log_interval = cfg.interval, seed = cfg.seed}
for _, r in ipairs(run:metrics("step")) do rates[#rates + 1] = r.tokens_per_s end
local steps = #run:metrics("step") * cfg.interval
local valid_ppl = run:summary().valid_ppl
os.execute("rm -rf '" .. dir .. "'")
table.remove(rates, 1)  -- the first interval holds the first steps' allocations
table.sort(rates)
local n = #rates
assert(n > 0, "too few steps for a rate: raise steps")
local median = n % 2 == 1 and rates[(n + 1) // 2] or (rates[n // 2] + rates[n // 2 + 1]) / 2
local v = lmkit.version()
print(("{\"impl\": \"lmkit\", \"size\": %q, \"bsz\": %d, \"context\": %d, \"steps\": %d, \"threads\": %d, \"device\": %q, " ..
       "\"parameters\": %d, \"tokens_per_s\": %.1f, \"step_ms\": %.2f, \"final_valid_ppl\": %.3f, \"torch\": %q, \"lmkit\": %q}"):format(
  cfg.size, bsz, context, steps, cfg.threads, cfg.device, model:parameter_count().total, median,
  1000 * bsz * context / median, valid_ppl, tostring(v.torch), tostring(v.lmkit)))
