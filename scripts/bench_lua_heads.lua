-- What a head written in Lua costs against the built-in one it computes (docs/benchmarks.md, "Lua
-- heads"): the AWD-LSTM of a new user's ablation (2 layers, nhid 64, nhidlast = emb = 32) trained
-- on ptb-mini (docs/data.md; the data folder from LMKIT_DATA or path=) for `epochs` epochs with
-- the settings of the run that found the cost (batch 20, bptt 70, lr 30; issue 53), then
-- evaluated on the test split. One head per process, so that the peak resident memory is the head's:
--   LMKIT_DATA=../shared/data ./build/lmkit run scripts/bench_lua_heads.lua --set head=custom
-- head: softmax (built in), custom (lmkit.heads.custom computing log_softmax(h·Wᵀ + b)), pointwise
-- (lmkit.heads.pointwise(l ↦ l), the same Softmax), sigsoftmax (built in) and pointwise_sigsoftmax
-- (l ↦ 2l − softplus(l) in Lua). Prints one JSON line: tokens/s over the epochs, the test
-- evaluation's seconds, the process's resident memory after each epoch and its peak (VmHWM), the
-- peak of host tensor bytes, the test perplexity, and lmkit.tensor_memory()'s collections.
-- collector=incremental switches Lua's collector back to its incremental mode (lmkit sets the
-- generational one), to measure what that choice is worth.
local cfg = lmkit.configure({head = "custom", epochs = 3, threads = 2, lr = 30.0, seed = 141, path = "",
                             batch_size = 20, bptt = 70, collector = "generational"})
lmkit.set_threads(cfg.threads)
assert(cfg.collector == "generational" or cfg.collector == "incremental", "collector must be generational or incremental")
collectgarbage(cfg.collector)
local heads = {
  softmax = function() return lmkit.heads.softmax() end,
  sigsoftmax = function() return lmkit.heads.sigsoftmax() end,
  custom = function()
    return lmkit.heads.custom{name = "softmax in Lua", forward = function(h, weight, bias)
      return (h:matmul(weight:transpose(1, 2)) + bias):log_softmax()
    end}
  end,
  pointwise = function() return lmkit.heads.pointwise(function(l) return l end) end,
  pointwise_sigsoftmax = function() return lmkit.heads.pointwise(function(l) return l * 2 - l:softplus() end) end,
}
assert(heads[cfg.head], "head must be softmax, custom, pointwise, sigsoftmax or pointwise_sigsoftmax, got " .. tostring(cfg.head))

-- lmkit.tensor_memory, or what /proc/self/status says where a build before it runs this script (the
-- "before" column of docs/benchmarks.md): resident memory only, host tensor bytes unknown (-1).
local tensor_memory = lmkit.tensor_memory or function()
  local m = {host = -1, peak_host = -1, resident = 0, peak_resident = 0, collections = 0}
  local status = io.open("/proc/self/status")
  for line in status:lines() do
    local key, kib = line:match("^(Vm%u%u%u?):%s*(%d+)")
    if key == "VmRSS" then m.resident = tonumber(kib) * 1024 elseif key == "VmHWM" then m.peak_resident = tonumber(kib) * 1024 end
  end
  status:close()
  return m
end

local corpus = lmkit.data.corpus{name = "ptb", protocol = "mini", path = cfg.path ~= "" and cfg.path or nil}
lmkit.seed(cfg.seed)
local model = lmkit.model{vocab_size = corpus.vocab:size(), emb = 32, nhid = 64, nhidlast = 32, nlayers = 2,
                          head = heads[cfg.head]()}
local dir = os.tmpname()
os.remove(dir)
local clock = lmkit.clock
local resident_after, epoch_seconds, started = {}, {}, clock()
lmkit.train{
  model = model, corpus = corpus, run_dir = dir, epochs = cfg.epochs, lr = cfg.lr, batch_size = cfg.batch_size,
  bptt = cfg.bptt, switch = "none", seed = cfg.seed, test = false, log_interval = 1000000,
  on_epoch_end = function(info)
    resident_after[#resident_after + 1] = tensor_memory().resident / 2^20
    epoch_seconds[#epoch_seconds + 1] = info.epoch_seconds
  end,
}
local train_seconds = 0
for _, s in ipairs(epoch_seconds) do train_seconds = train_seconds + s end
local train_tokens = corpus.train:numel() * #epoch_seconds
local t0 = clock()
local test = lmkit.evaluate(model, corpus.test, {batch_size = 10})
local test_seconds = clock() - t0
local m = tensor_memory()
local rss = {}
for i, r in ipairs(resident_after) do rss[i] = ("%.0f"):format(r) end
print(("{\"head\": %q, \"epochs\": %d, \"tokens_per_s\": %.0f, \"epoch_seconds\": [%s], \"test_seconds\": %.2f, " ..
       "\"test_ppl\": %.2f, \"resident_mb_after_epoch\": [%s], \"peak_resident_mb\": %.0f, \"peak_host_tensor_mb\": %.0f, " ..
       "\"collections\": %d, \"threads\": %d, \"collector\": %q}"):format(
  cfg.head, #epoch_seconds, train_tokens / train_seconds,
  table.concat((function() local t = {} for i, s in ipairs(epoch_seconds) do t[i] = ("%.1f"):format(s) end return t end)(), ", "),
  test_seconds, test.ppl, table.concat(rss, ", "), m.peak_resident / 2^20, m.peak_host / 2^20, m.collections, cfg.threads, cfg.collector))
os.execute(("rm -rf '%s'"):format(dir:gsub("'", "'\\''")))
