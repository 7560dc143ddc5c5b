-- The loop of a script that makes tensors and never calls collectgarbage (docs/benchmarks.md, "Lua
-- heads"): x = randn(rows, 500); y = x·w, tanh, sum, with w [500, 500] requiring grad, `iterations`
-- times. One iteration's live tensors are x, x·w and tanh(x·w) (3·rows·500·4 bytes; the sum holds
-- the graph behind them). Prints one JSON line: that size, the peak of host tensor bytes over the
-- loop (above what was held before it) and their ratio, the process's peak resident memory, the
-- seconds, and the full collections lmkit ran.
--   ./build/lmkit run scripts/bench_lua_loop.lua --set iterations=400
local cfg = lmkit.configure({iterations = 400, rows = 2000, threads = 2, seed = 1, collector = "generational"})
lmkit.set_threads(cfg.threads)
assert(cfg.collector == "generational" or cfg.collector == "incremental", "collector must be generational or incremental")
collectgarbage(cfg.collector)
lmkit.seed(cfg.seed)
-- lmkit.tensor_memory, or what /proc/self/status says where a build before it runs this script (the
-- "before" column of docs/benchmarks.md): resident memory only, host tensor bytes unknown (0).
local tensor_memory = lmkit.tensor_memory or function()
  local m = {host = 0, peak_host = 0, resident = 0, peak_resident = 0, collections = 0}
  local status = io.open("/proc/self/status")
  for line in status:lines() do
    local key, kib = line:match("^(Vm%u%u%u?):%s*(%d+)")
    if key == "VmRSS" then m.resident = tonumber(kib) * 1024 elseif key == "VmHWM" then m.peak_resident = tonumber(kib) * 1024 end
  end
  status:close()
  return m
end
local w = lmkit.randn(500, 500, {requires_grad = true})
local start = tensor_memory()
if lmkit.reset_peak_tensor_memory then lmkit.reset_peak_tensor_memory() end
local t0 = lmkit.clock()
for _ = 1, cfg.iterations do
  local x = lmkit.randn(cfg.rows, 500)
  local y = x:matmul(w):tanh():sum()
end
local seconds = lmkit.clock() - t0
local m = tensor_memory()
local iteration = 3 * cfg.rows * 500 * 4
print(("{\"iterations\": %d, \"iteration_live_mb\": %.1f, \"peak_host_tensor_mb\": %.1f, \"peak_over_iteration\": %.2f, " ..
       "\"peak_resident_mb\": %.0f, \"resident_before_mb\": %.0f, \"seconds\": %.2f, \"collections\": %d, \"collector\": %q}"):format(
  cfg.iterations, iteration / 2^20, (m.peak_host - start.host) / 2^20, (m.peak_host - start.host) / iteration,
  m.peak_resident / 2^20, start.resident / 2^20, seconds, m.collections - start.collections, cfg.collector))
