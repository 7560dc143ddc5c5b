-- A grid whose cells are training runs of a fixed number of steps, for measuring how many cells an
-- hour `lmkit batch --tasks-per-gpu K` gets through (scripts/bench_sharing.sh). Each cell runs
-- scripts/bench_lmkit_train.lua (lmkit.train on the yardstick's token stream, AWD-LSTM at SIZE with
-- HEAD) as a child process and keeps its JSON line as the cell's result.
--   lmkit batch scripts/bench_sharing.lua --set cells=8 --set size=ptb --set device=cuda --tasks-per-gpu 4
local recipe = require "lmkit.recipe"
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
return recipe.define{
  name = "bench_sharing",
  settings = {
    scale = recipe.setting("tiny", "names the output folder"),
    cells = recipe.setting(4, "cells in the grid"),
    size = recipe.setting("tiny", "tiny, ptb or wt2 (bench_lmkit_train.lua)"),
    head = recipe.setting("softmax", "the head (bench_lmkit_train.lua)"),
    steps = recipe.setting(200, "timed training steps per cell"),
    warmup = recipe.setting(20, "untimed steps before them"),
    device = recipe.setting("cpu", "where each cell trains"),
  },
  grid = function(cfg)
    if math.type(cfg.cells) ~= "integer" or cfg.cells < 1 then error("--set cells must be an integer ≥ 1", 0) end
    local cells = {}
    for i = 1, cfg.cells do cells[i] = {cell = i} end
    return cells
  end,
  run = function(cell, ctx)
    local cfg = ctx.cfg
    local out = ctx.dir .. "/bench.jsonl"
    local log = ctx.dir .. "/bench.log"
    local argv = {lmkit.process.executable(), "run", here .. "/bench_lmkit_train.lua",
                  "--set", "size=" .. cfg.size, "--set", "head=" .. cfg.head, "--set", "steps=" .. cfg.steps,
                  "--set", "warmup=" .. cfg.warmup, "--set", "device=" .. cfg.device, "--set", "seed=" .. (140 + cell.cell),
                  "--set", "threads=" .. math.max(lmkit.get_threads())}  -- the cores the batch gave this task
    local result = lmkit.process.run_pool{tasks = {{argv = argv, log = log}}, jobs = 1}
    local exit = result.exits[1] and result.exits[1].exit_code
    if exit ~= 0 then
      error(("cell %d: bench_lmkit_train.lua failed (exit %s), see %s"):format(cell.cell, tostring(exit), log), 0)
    end
    local line
    for l in io.lines(log) do if l:sub(1, 1) == "{" then line = l end end
    if not line then error(("cell %d: no result line in %s"):format(cell.cell, log), 0) end
    lmkit.write_file(out, line .. "\n")
    return lmkit.json_decode(line)
  end,
  report = function(results)
    local done, tokens = 0, 0
    for _, r in ipairs(results) do
      if r.result then done = done + 1; tokens = tokens + r.result.tokens_per_s end
    end
    print(("%d cells done; their tokens/s, each while sharing: %.0f in all"):format(done, tokens))
  end,
}
