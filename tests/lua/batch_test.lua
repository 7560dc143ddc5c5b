-- lmkit.batch from Lua: the options of `lmkit batch` as a table, checked as the command line's are;
-- several tasks sharing GPUs at once (the pieces alone: tests/runtime/batch/batch_test.cpp).
local T = require "lmkit.testing"
local batch = require "lmkit.batch"

T.test("status of a folder without a manifest names it and how to make one", function()
  local dir = os.tmpname()
  os.remove(dir)
  T.raises(function() batch.status{dir = dir} end, "is not a batch folder")
end)

-- A recipe of `n` cells whose result is the CUDA_VISIBLE_DEVICES its task was given; each cell
-- waits until every cell has started, so a passing run proves that they all ran at once.
local function gpu_recipe(dir, n)
  local path = dir .. "/gpu_recipe.lua"
  lmkit.write_file(path, ([[
local recipe = require "lmkit.recipe"
return recipe.define{
  name = "gpus",
  settings = {scale = recipe.setting("tiny", "names the output folder")},
  grid = function() local cells = {} for i = 1, %d do cells[i] = {i = i} end return cells end,
  run = function(cell)
    local started = %q .. "/started-" .. cell.i
    lmkit.write_file(started, "")
    for _ = 1, 12000 do  -- up to 2 minutes: six processes starting on two cores under a sanitizer
      local all = true
      for i = 1, %d do
        local f = io.open(%q .. "/started-" .. i)
        if f then f:close() else all = false end
      end
      if all then return {gpu = os.getenv("CUDA_VISIBLE_DEVICES") or "unset"} end
      lmkit.process.sleep(0.01)
    end
    error("the other tasks never started: they did not run at once")
  end,
  report = function() end,
}
]]):format(n, dir, n, dir))
  return path
end

local function task_gpus(out, n)
  local gpus = {}
  for i = 1, n do
    local f = assert(io.open(("%s/cells/i=%d/result.json"):format(out, i)))
    gpus[i] = lmkit.json_decode(f:read("a")).gpu
    f:close()
  end
  return gpus
end

T.test("tasks_per_gpu runs k tasks at once on each GPU, going round the GPUs", function()
  local dir = os.tmpname()
  os.remove(dir)
  lmkit.fs.mkdir(dir)
  local path = gpu_recipe(dir, 6)
  T.eq(batch.submit{recipe = path, gpus = 2, tasks_per_gpu = 3, threads = 1,
                     sets = {"out=" .. dir .. "/out"}}, 0)
  T.eq(task_gpus(dir .. "/out", 6), {"0", "1", "0", "1", "0", "1"})
  os.execute(("rm -rf '%s'"):format(dir))
end)

T.test("tasks_per_gpu is refused with jobs, on Slurm, without a GPU, and when not a count", function()
  local dir = os.tmpname()
  os.remove(dir)
  lmkit.fs.mkdir(dir)
  local path = gpu_recipe(dir, 2)
  local sets = {"out=" .. dir .. "/out"}
  -- each is refused before any task runs, naming the option
  T.raises(function() batch.submit{recipe = path, gpus = 1, tasks_per_gpu = 2, jobs = 2, sets = sets} end,
           "give --jobs or --tasks-per-gpu, not both")
  T.raises(function() batch.submit{recipe = path, tasks_per_gpu = 2, backend = "slurm", sets = sets} end,
           "--tasks-per-gpu is the local backend's")
  T.raises(function() batch.submit{recipe = path, gpus = 0, tasks_per_gpu = 2, sets = sets} end, "sees no CUDA device")
  T.raises(function() batch.submit{recipe = path, gpus = 1, tasks_per_gpu = 0, sets = sets} end,
           "option 'tasks_per_gpu' must be in [1, 256], got 0")
  T.raises(function() batch.submit{recipe = path, gpus = 1, tasks_per_gpu = 1.5, sets = sets} end,
           "option 'tasks_per_gpu' must be an integer")
  T.raises(function() batch.submit{recipe = path, gpus = 1, tasks_per_gpus = 2, sets = sets} end,
           "did you mean 'tasks_per_gpu'")
  local f = io.open(dir .. "/started-1")
  T.eq(f, nil, "no task ran")
  os.execute(("rm -rf '%s'"):format(dir))
end)

T.run()
