-- `lmkit run preempt_run.lua --set run_dir=DIR [--set preempt_at=STEP] [--set signal=TERM|INT]`:
-- the run of signalled_run.lua, signalled at step preempt_at (0: never).
local cfg = lmkit.configure({run_dir = "", preempt_at = 0, signal = "TERM"})
assert(cfg.run_dir ~= "", "--set run_dir=... is required")
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local train = dofile(here .. "signalled_run.lua")
local run = train(cfg.run_dir, {signal = cfg.signal, at = cfg.preempt_at})
print(("finished: test ppl %.6f"):format(run:summary().test_ppl))
