-- Time of lmkit.analysis.argmaxable on a random softmax layer of vocabulary size (docs/benchmarks.md):
--   ./build/lmkit run scripts/bench_argmaxable.lua --set n=10000 --set d=400 --set region=box
-- W ~ N(0, 0.1²), b ~ N(0, 0.5²), seed 1. Prints how many words the scan certified, how many went to
-- linear programs, the simplex runs, the largest LP and the wall time.
lmkit.seed(1)
local cfg = lmkit.configure{n = 10000, d = 400, region = "box"}
local w = lmkit.randn(cfg.n, cfg.d) * 0.1
local b = lmkit.randn(cfg.n) * 0.5
local t0 = lmkit.clock()
local r = lmkit.analysis.argmaxable(w, b, {region = cfg.region})
print(("N=%d d=%d region=%s: %d unargmaxable, scan %d, LP %d words, %d solves, largest LP %d rows, %.1f s")
  :format(cfg.n, cfg.d, cfg.region, #r.unargmaxable, r.by_scan, r.by_lp, r.lp_solves, r.lp_rows_max, lmkit.clock() - t0))
