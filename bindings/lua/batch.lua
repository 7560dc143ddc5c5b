-- lmkit.batch: a recipe's grid as a batch of tasks, on this machine or on a Slurm cluster.
--
--   lmkit batch recipes/gss_grid.lua --backend local --jobs 2 --set scale=tiny
--   lmkit batch recipes/gss_grid.lua --backend slurm --partition gpu --gpus-per-task 1 --time 04:00:00 --requeue
--   lmkit status runs/gss_grid-tiny
--   lmkit report runs/gss_grid-tiny
--
-- Task i is cell i of the grid: `lmkit run RECIPE --set out=OUT --set task=i` plus the batch's own
-- --set options. The batch itself — its options, the folder's record, the tasks' states, the local pool and
-- the Slurm job array — is runtime/batch/batch_*.h, the same for `lmkit batch` and for these
-- functions; this file computes what only Lua can: the recipe's grid.
local lmkit = require "lmkit"
local recipe = require "lmkit.recipe"
local batch = {}

-- A mistake in the recipe or its settings: its message alone (the batch has not started; the tasks'
-- logs keep tracebacks of what they run).
local function mistake(message)
  error(setmetatable({}, {__tostring = function() return message end}), 0)
end

-- The recipe's grid as the batch's tasks: {path=, name=, description=, out=, cells={id, ...}}, with
-- o.sets ({"key=value", ...}: out=DIR names the folder) as its settings.
function batch.grid(o)
  if type(o) ~= "table" or type(o.recipe) ~= "string" or o.recipe == "" then
    error("lmkit.batch.grid{recipe=, sets=}: recipe must be a script's path", 2)
  end
  local sets = type(o.sets) == "string" and {o.sets} or o.sets or {}
  local path = lmkit.process.absolute(o.recipe)
  local not_a_recipe = ("%s is not a grid recipe: it does not return lmkit.recipe.define{...} " ..
                        "(docs/recipes.md). `lmkit run %s` runs plain scripts."):format(path, o.recipe)
  -- A script that never mentions define is not run at all: running it only to find that out would
  -- train, print or fail on the batch's own settings (a configure script: "unknown setting 'out'").
  local file, why = io.open(path, "r")
  if not file then mistake(("cannot open %s: %s"):format(path, why)) end
  local text = file:read("a")
  file:close()
  if not text or not text:find("define", 1, true) then mistake(not_a_recipe) end
  local ok, value = pcall(dofile, path)
  if not ok then mistake(tostring(value)) end
  if not recipe.is_recipe(value) then mistake(not_a_recipe) end
  local configured, grid = pcall(function()
    local cfg = value:configure(nil, sets)
    local cells = {}
    local planned = value:cells(cfg)
    for i, cell in ipairs(planned) do cells[i] = cell.id end
    -- What the tasks still to run need (the recipe's `needs`): run_batch shows it on a dry run, and
    -- data that is missing stops a local batch before its tasks fail one by one.
    local plan, problems = value:plan(cfg, planned)
    return {path = path, name = value.name, description = value.description,
            out = lmkit.process.absolute(cfg.out), cells = cells, plan = plan, problems = problems,
            settings = lmkit.json_encode(value:result_settings(cfg)), defaults = lmkit.json_encode(value.settings)}
  end)
  if not configured then mistake(tostring(grid)) end
  return grid
end

-- `lmkit batch RECIPE ...` with the options of `lmkit batch` as keys (help(lmkit.process.run_batch)):
-- each option, and those that do not go together, are checked before the recipe is loaded (the GPUs
-- this process sees, after). Returns the exit status; a mistake is an error.
function batch.submit(o)
  lmkit.process.check_batch_options(o)
  return lmkit.process.run_batch(batch.grid(o), o)
end

-- `lmkit status DIR`: the per-task table; 0 all done, 1 a task failed or was lost, 3 some to finish.
function batch.status(o)
  lmkit.check_options(o, {dir = true}, "lmkit.batch.status", 2)
  return lmkit.process.batch_status(o.dir)
end

-- `lmkit report DIR`: the batch's recipe run on its folder with report_only=true; its exit status.
function batch.report(o)
  lmkit.check_options(o, {dir = true}, "lmkit.batch.report", 2)
  return lmkit.process.batch_report(o.dir)
end

return batch
