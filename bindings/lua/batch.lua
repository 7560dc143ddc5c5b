-- lmkit.batch: a recipe's grid as a batch of tasks, on this machine or on a Slurm cluster.
--
--   lmkit batch recipes/gss_grid.lua --backend local --jobs 2 --set scale=tiny
--   lmkit batch recipes/gss_grid.lua --backend slurm --partition gpu --gpus-per-task 1 --time 04:00:00 --requeue
--   lmkit status runs/gss_grid-tiny
--   lmkit report runs/gss_grid-tiny
--
-- Task i is cell i of the grid: `lmkit run RECIPE --set out=OUT --set task=i` plus the batch's own
-- --set options. The batch itself — its options, manifest, the tasks' states, the local pool and
-- the Slurm job array — is runtime/training/batch_*.h, the same for `lmkit batch` and for these
-- functions; this file computes what only Lua can: the recipe's grid.
local lmkit = require "lmkit"
local recipe = require "lmkit.recipe"
local batch = {}

-- The recipe's grid as the batch's tasks: {recipe=, name=, description=, out=, cells={id, ...}}.
-- o = {recipe=, sets=}: out=DIR among the sets names the folder (the command line's --set values
-- reach the recipe's configure as settings too, and win).
function batch.grid(o)
  local path = lmkit.process.absolute(o.recipe)
  local not_a_recipe = ("lmkit batch: %s is not a grid recipe: it does not return lmkit.recipe.define{...} " ..
                        "(docs/recipes.md). `lmkit run %s` runs plain scripts."):format(path, o.recipe)
  -- A script that never mentions define is not run at all: running it only to find that out would
  -- train, print or fail on the batch's own settings (a configure script: "unknown setting 'out'").
  local file = io.open(path, "r")
  if not file then error(("lmkit batch: cannot open %s"):format(path), 0) end
  local text = file:read("a")
  file:close()
  if not text:find("define", 1, true) then error(not_a_recipe, 0) end
  local ok, value = pcall(dofile, path)
  if not ok then error(tostring(value), 0) end
  if not recipe.is_recipe(value) then error(not_a_recipe, 0) end
  local out
  for _, s in ipairs(o.sets or {}) do out = s:match("^out=(.+)$") or out end
  local cfg = value:configure(out and {out = out} or nil)
  local cells = {}
  for i, cell in ipairs(value:cells(cfg)) do cells[i] = cell.id end
  return {recipe = path, name = value.name, description = value.description,
          out = lmkit.process.absolute(cfg.out), cells = cells}
end

-- `lmkit batch RECIPE ...` with the options of `lmkit batch` as keys (help(lmkit.process.run_batch)):
-- the options are checked before the recipe is loaded. Returns the exit status.
function batch.submit(o)
  lmkit.process.check_batch_options(o)
  return lmkit.process.run_batch(batch.grid(o), o)
end

-- `lmkit status DIR`: the per-task table; 0 all done, 1 a task failed or was lost, 3 some to finish.
function batch.status(o)
  return lmkit.process.batch_status(o.dir)
end

-- `lmkit report DIR`: the batch's recipe run on its folder with report_only=true; its exit status.
function batch.report(o)
  return lmkit.process.batch_report(o.dir)
end

return batch
