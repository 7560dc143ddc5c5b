-- Singular values of a PTB-shaped float32 matrix with lmkit (LAPACK gesdd through Torch), the
-- lmkit side of scripts/bench_svd.sh:
--   ./build/lmkit run scripts/bench_svd.lua --set rows=82430 --set cols=10000 --set threads=2
-- The matrix is a log-softmax of random rank-400 logits (like a Softmax model's Q), built first
-- and not timed; the time is the median wall time of `repeats` calls of svdvals + press_rank.
local cfg = lmkit.configure({rows = 20000, cols = 2500, rank = 400, threads = 2, repeats = 3, seed = 1})
lmkit.set_threads(cfg.threads)
lmkit.seed(cfg.seed)
local logits = lmkit.randn(cfg.rows, cfg.rank):matmul(lmkit.randn(cfg.rank, cfg.cols) * 0.3)
local q = logits:log_softmax(2)
logits = nil
collectgarbage()
local times, rank = {}, nil
for i = 1, cfg.repeats do
  local start = lmkit.clock()
  local sv = lmkit.analysis.svdvals(q)
  rank = lmkit.analysis.press_rank(sv, cfg.rows, cfg.cols)
  times[i] = lmkit.clock() - start
end
table.sort(times)
print(("lmkit svdvals %dx%d float32, %d threads: median %.2f s (runs: %s), Press rank %d"):format(
  cfg.rows, cfg.cols, cfg.threads, times[(#times + 1) // 2], table.concat(
    (function() local t = {} for i, v in ipairs(times) do t[i] = ("%.2f"):format(v) end return t end)(), " "), rank))
