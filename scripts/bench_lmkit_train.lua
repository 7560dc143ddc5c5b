-- Training throughput of lmkit.train itself — what users run: the BPTT sampler's random window
-- lengths, lr scaled by seq_len/bptt, AR/TAR, global-norm clipping, the finiteness checks, logging —
-- on the same model, sizes, dropouts and token stream as scripts/bench_train.lua (the Lua-loop step)
-- and scripts/awd_lstm_reference.py (the plain PyTorch yardstick); scripts/bench.sh runs all three.
--   ./build/lmkit run scripts/bench_lmkit_train.lua --set size=tiny --set head=softmax --set threads=2
-- The token stream is the yardstick's 64-bit LCG written out as a corpus (id 0 spelled "<eos>", so
-- that the vocabulary has exactly N words and the parameter count matches). The run stops itself
-- after warmup + steps steps (the on_step callback asks it to); tokens/s is over the steps after the
-- warm-up, with each window's own length, from the wall clock at the end of each step (no ASGD switch:
-- the yardstick does not average either). Peak RSS is
-- the process's VmHWM; on a CUDA device peak_device_mb is the most memory in live tensors at once
-- (lmkit.device_memory: model, optimizer state and the step). Prints one JSON line with
-- impl = "lmkit.train".
-- head: softmax and mos (the heads the yardstick has), and sigsoftmax, gss, plif (K = plif_K knots)
-- and mixtape (K = mixtape_K) for lmkit's own head-vs-Softmax comparison (scripts/bench_heads.sh);
-- every head but mos uses Softmax's sizes, dropouts and batch size.
-- device=cuda moves the model there (lmkit.train follows the model's device). A step never waits for
-- the device: on a GPU its numbers come back while the next step runs, and on_step is called for it
-- then (once its values have landed, so the step has ended): per step the clock readings are shifted
-- by about a step, the total over the timed steps is not.
local cfg = lmkit.configure({size = "tiny", head = "softmax", K = 15, plif_K = 100000, mixtape_K = 4, bptt = 70, bsz = 0, steps = 20, warmup = 3,
                             threads = 2, torch_threads = 0, blas_threads = 0, lr = 20.0, seed = 141, dir = "", device = "cpu",
                             cuda_graphs = "off"})
-- threads: the cores lmkit gets (lmkit.set_threads: OpenBLAS n, Torch 1); torch_threads /
-- blas_threads > 0 set one pool explicitly (docs/benchmarks.md's thread study)
lmkit.set_threads(cfg.threads, {torch = cfg.torch_threads, blas = cfg.blas_threads})
local head_of = {
  softmax = function() return lmkit.heads.softmax() end,
  sigsoftmax = function() return lmkit.heads.sigsoftmax() end,
  gss = function() return lmkit.heads.gss() end,
  plif = function() return lmkit.heads.plif{K = cfg.plif_K} end,
  mos = function() return lmkit.heads.mos{K = cfg.K, dropoutl = 0.29} end,
  mixtape = function() return lmkit.heads.mixtape{K = cfg.mixtape_K} end,
}
assert(head_of[cfg.head], "head must be softmax, sigsoftmax, gss, plif, mos or mixtape, got " .. tostring(cfg.head))
-- the clock starts at the end of the last warm-up step, so there must be one
assert(cfg.warmup >= 1, "warmup must be ≥ 1: the timed steps start at the end of the last warm-up step")
assert(cfg.steps >= 1, "steps must be ≥ 1")
assert(cfg.size == "tiny" or cfg.size == "ptb" or cfg.size == "wt2", "size must be tiny, ptb or wt2")
local mos = cfg.head == "mos"
-- The paper's model and batch size (SPEC Table 4.3, from recipes/presets, as bench_train.lua and the
-- yardstick); tiny: the PTB model's dropouts at N = 1000, d = 32, batch 20.
local presets = require "presets.awd_lstm"
local o, paper = presets.paper_model(mos and "mos" or "awd", cfg.size == "wt2" and "wikitext-2" or "ptb")
if cfg.size == "tiny" then o.vocab_size, o.emb, o.nhid, o.nhidlast = 1000, 32, 64, 32 end
local bsz = cfg.bsz > 0 and cfg.bsz or (cfg.size == "tiny" and 20 or paper.train.batch_size)
o.head = head_of[cfg.head]()

-- The corpus: the yardstick's stream, long enough for the steps at any drawn window length
-- (≤ bptt + 40 at most windows; 2·bptt per step is ample), plus short valid/test splits.
local dir = cfg.dir ~= "" and cfg.dir or os.tmpname() .. ".d"
os.execute(("mkdir -p '%s'"):format(dir:gsub("'", "'\\''")))
local function write_split(name, rows, seed)
  local words, x = {}, seed
  for i = 1, rows * bsz do
    x = x * 6364136223846793005 + 1442695040888963407
    local id = (x >> 33) % o.vocab_size
    words[i] = id == 0 and "\n" or ("w" .. id .. " ")
  end
  -- every word of the vocabulary once, so that the vocabulary is exactly N words whatever the draw
  for id = 1, o.vocab_size - 1 do words[#words + 1] = "w" .. id .. " " end
  lmkit.write_file(dir .. "/" .. name .. ".txt", table.concat(words) .. "\n")
end
local total = cfg.warmup + cfg.steps
write_split("train", total * 2 * cfg.bptt + 1, cfg.seed)
write_split("valid", 2 * cfg.bptt, cfg.seed + 1)
write_split("test", 2 * cfg.bptt, cfg.seed + 2)
local corpus = lmkit.data.corpus{name = "bench", path = dir, cache = false}
o.vocab_size = corpus.vocab:size()

lmkit.seed(cfg.seed)
local model = lmkit.model(o)
if cfg.device ~= "cpu" then model:to(cfg.device) end
local clock = lmkit.clock
local ends, tokens = {}, {}
local run = lmkit.train{
  model = model, corpus = corpus, run_dir = dir .. "/run", lr = cfg.lr, batch_size = bsz, bptt = cfg.bptt,
  epochs = 1, switch = "none", clip = 0.25, wdecay = 1.2e-6, log_interval = 1000000, seed = cfg.seed, test = false,
  cuda_graphs = cfg.cuda_graphs,
  on_step = function(info, control)
    ends[#ends + 1] = clock()
    tokens[#tokens + 1] = info.seq_len * bsz
    if #ends >= total then control:stop("benchmark: " .. total .. " steps") end
  end,
}
assert(#ends >= total, ("lmkit.train ran %d steps, fewer than the %d asked (a longer train split is needed)"):format(#ends, total))

local timed_tokens, step_times = 0, {}
for i = cfg.warmup + 1, total do
  timed_tokens = timed_tokens + tokens[i]
  step_times[#step_times + 1] = ends[i] - ends[i - 1]
end
local seconds = ends[total] - ends[cfg.warmup]
table.sort(step_times)
local n = #step_times
local median = n % 2 == 1 and step_times[(n + 1) // 2] or (step_times[n // 2] + step_times[n // 2 + 1]) / 2
local peak_kib = 0
local status = io.open("/proc/self/status")
if status then
  for line in status:lines() do
    local kib = line:match("^VmHWM:%s*(%d+)")
    if kib then peak_kib = tonumber(kib) end
  end
  status:close()
end
-- The most bytes in host tensors at once (lmkit's counting allocator): on the CPU the measure of what
-- a step holds, without the allocator's and the libraries' own memory that RSS also counts.
local peak_host_tensor_mb = lmkit.tensor_memory().peak_host / 2^20
-- -1 where the allocator's counts cannot be read (a build without its CUDA side): the timing stands.
local peak_device_mb = 0
if cfg.device ~= "cpu" then
  local ok, memory = pcall(lmkit.device_memory, cfg.device)
  peak_device_mb = ok and memory.peak_allocated / 2^20 or -1
  if not ok then io.stderr:write("bench_lmkit_train.lua: no peak device memory: ", tostring(memory), "\n") end
end
local v = lmkit.version()
local summary = run:summary()
local graphs = summary.cuda_graphs or {}
print(("{\"impl\": \"lmkit.train\", \"size\": %q, \"head\": %q, \"bsz\": %d, \"bptt\": %d, \"steps\": %d, \"warmup\": %d, " ..
       "\"threads\": %d, \"torch_threads\": %d, \"blas_threads\": %d, \"device\": %q, \"parameters\": %d, \"tokens_per_s\": %.1f, \"step_ms\": %.2f, \"step_ms_mean\": %.2f, " ..
       "\"peak_rss_mb\": %.0f, \"peak_host_tensor_mb\": %.0f, \"peak_device_mb\": %.0f, \"status\": %q, \"cuda_graphs\": %q, \"graphs_captured\": %d, " ..
       "\"graphs_replayed\": %d, \"graphs_eager_because\": %s, \"torch\": %q, \"lmkit\": %q}"):format(
  cfg.size, cfg.head, bsz, cfg.bptt, cfg.steps, cfg.warmup, cfg.threads, lmkit.get_threads(), select(2, lmkit.get_threads()), cfg.device,
  model:parameter_count().total, timed_tokens / seconds, 1000 * median, 1000 * seconds / n, peak_kib / 1024, peak_host_tensor_mb, peak_device_mb, summary.status,
  cfg.cuda_graphs, graphs.captured or 0, graphs.replayed or 0, lmkit.json_encode(graphs.eager_because or ""), tostring(v.torch), tostring(v.lmkit)))
if cfg.dir == "" then os.execute(("rm -rf '%s'"):format(dir:gsub("'", "'\\''"))) end
