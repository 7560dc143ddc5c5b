-- lmkit.recipe: the shape every experiment recipe has, and the runner that executes it.
--
--   local recipe = require "lmkit.recipe"
--   return recipe.define{
--     name = "gss_grid",
--     description = "GSS(c, k) grid on PTB (thesis Table 4.4)",
--     settings = {                                                   -- overridable with --set
--       scale = recipe.setting("tiny", "tiny | small | paper"),       -- each with its default and doc
--       seeds = recipe.setting(1, "seeds per cell"),
--     },
--     grid = function(cfg) return {{c = 0, k = 2, seed = 1}, ...} end, -- the cells
--     run = function(cell, ctx) ... return {test_ppl = ..., rank = ...} end,
--     report = function(results, ctx) ... end,                        -- results[i] = {cell=, result=}
--   }
--
-- `lmkit run recipes/gss_grid.lua` runs every cell in order, then the report. Each cell has its own
-- folder <out>/cells/<id> (ctx.dir: give it to lmkit.train as run_dir) and leaves result.json there;
-- a cell whose result.json exists is never run again, so an interrupted recipe continues where it
-- stopped. Beside it, settings.json records the settings the result was made with: a run (or report)
-- with other settings that meets such a cell is refused, naming what differs, instead of serving
-- another configuration's numbers as its own. `--set task=I` runs only cell I (1-based; what a batch system's array task does), and
-- `--set report_only=true` renders the report from whatever cells have finished, marking the rest.
-- The output folder is `--set out=DIR` (default runs/<name>-<scale>).
local lmkit = require "lmkit"
local recipe = {}

-- lmkit.recipe_folder's refusals in lmkit's words alone, as the recipe's own: without the Lua
-- position and the function's name that a binding's error carries.
local function folder(name, ...)
  local ok, result = pcall(lmkit.recipe_folder[name], ...)
  if ok then return result end
  if type(result) ~= "string" then error(result, 0) end
  error((result:gsub("^.-lmkit%.recipe_folder%." .. name .. ": ", "")), 0)
end

local Recipe = {}
Recipe.__index = Recipe
recipe.Recipe = Recipe

local function check(spec, key, kind)
  if type(spec[key]) ~= kind then
    error(("recipe.define: '%s' must be a %s, got %s"):format(key, kind, type(spec[key])), 3)
  end
end

-- A setting declared with its doc: recipe.setting(default, doc). Every setting of a recipe is
-- declared so (the shared block of presets.settings is too); `lmkit run NAME --help` shows the docs.
local Setting = {}
Setting.__index = Setting

-- `choices` (optional): the values it may take, checked before anything runs or is written.
function recipe.setting(default, doc, choices)
  if default == nil then error("recipe.setting: a setting needs a default (its type)", 2) end
  if type(doc) ~= "string" then error("recipe.setting: the doc must be a string", 2) end
  if choices ~= nil and type(choices) ~= "table" then error("recipe.setting: choices must be a list of values", 2) end
  return setmetatable({default = default, doc = doc, choices = choices}, Setting)
end

function recipe.is_setting(value)
  return getmetatable(value) == Setting
end

function recipe.define(spec)
  if type(spec) ~= "table" then error("recipe.define expects a table", 2) end
  check(spec, "name", "string")
  check(spec, "grid", "function")
  check(spec, "run", "function")
  check(spec, "report", "function")
  local declared = spec.settings or {}
  for _, runner in ipairs(lmkit.recipe_folder.runner_settings()) do
    if declared[runner.key] ~= nil then
      error(("recipe.define: setting '%s' is the runner's; choose another name"):format(runner.key), 2)
    end
  end
  -- Every setting is declared with its doc: the defaults go to settings, the docs to setting_docs
  -- (new tables: the declaring one is left as it was). Keys in order, so that a recipe with several
  -- undocumented settings always names the same one.
  local keys = {}
  for key in pairs(declared) do keys[#keys + 1] = key end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  spec.settings, spec.setting_docs, spec.setting_choices = {}, {}, {}
  for _, key in ipairs(keys) do
    local value = declared[key]
    if not recipe.is_setting(value) then
      local shown = type(value) == "string" and ("%q"):format(value) or tostring(value)
      error(("recipe %s: setting '%s' has no doc: declare it as recipe.setting(%s, \"...\")")
        :format(spec.name, tostring(key), shown), 2)
    end
    spec.settings[key] = value.default
    spec.setting_docs[key] = value.doc
    spec.setting_choices[key] = value.choices
  end
  if spec.needs ~= nil and type(spec.needs) ~= "function" then
    error(("recipe %s: needs must be a function(cell, cfg) returning what the cell needs"):format(spec.name), 2)
  end
  spec.description = spec.description or spec.name
  return setmetatable(spec, Recipe)
end

function recipe.is_recipe(value)
  return getmetatable(value) == Recipe
end

-- A cell's scalar fields (numbers, strings, booleans): what its id and its results.csv columns are
-- made of. `runner`: with the runner's own index and id.
local function scalar_fields(cell, runner)
  local fields = {}
  for k, v in pairs(cell) do
    if type(k) == "string" and type(v) ~= "table" and type(v) ~= "function" and (runner or (k ~= "index" and k ~= "id")) then
      fields[k] = v
    end
  end
  return fields
end

-- A stable, readable id for a cell ("c=0,k=2,seed=1"): lmkit.recipe_folder.cell_id's rule.
function recipe.cell_id(cell)
  return lmkit.recipe_folder.cell_id(scalar_fields(cell, true))
end

-- The resolved settings: the recipe's defaults (then `overrides`, e.g. from a test) with --set
-- overrides on top (strict: unknown keys are errors), plus the runner's own settings. `settings`
-- ({"key=value", ...}) stands for the command line's --set values (lmkit.batch.grid's).
function Recipe:configure(overrides, settings)
  local defaults = {}
  for _, runner in ipairs(lmkit.recipe_folder.runner_settings()) do defaults[runner.key] = runner.default end
  for k, v in pairs(self.settings) do defaults[k] = v end
  for k, v in pairs(overrides or {}) do
    if defaults[k] == nil then error(("recipe %s: unknown setting '%s'"):format(self.name, k), 2) end
    defaults[k] = v
  end
  -- lmkit.configure's refusal (an unknown or mistyped --set) names the recipe, not this file's line.
  local configured, cfg = pcall(lmkit.configure, defaults, settings and {settings = settings} or nil)
  if not configured then
    error(("recipe %s: %s"):format(self.name, tostring(cfg):gsub("^[^\n]-:%d+: ", ""):gsub("^lmkit%.configure: ", "")), 0)
  end
  -- A value outside a setting's choices stops the run before any folder or cell.
  folder("check_choices", self.name, self:result_settings(cfg), self.setting_choices or {})
  if cfg.out == "" then
    -- Only a declared setting is read (the settings table refuses any other name).
    cfg.out = lmkit.recipe_folder.default_out(self.name, self.settings.scale ~= nil and tostring(cfg.scale) or "")
  end
  return cfg
end

-- The cells, each with .index and .id; errors for an empty grid or duplicate ids (recipe_cells.h).
function Recipe:cells(cfg)
  local cells = self.grid(cfg)
  if type(cells) ~= "table" then cells = {} end
  local ids = {}
  for i, cell in ipairs(cells) do
    if type(cell) ~= "table" then error(("recipe %s: cell %d is not a table"):format(self.name, i), 2) end
    ids[i] = recipe.cell_id(cell)
  end
  folder("check_cells", self.name, ids)
  for i, cell in ipairs(cells) do cell.index, cell.id = i, ids[i] end
  return cells
end



-- A cell's result.json as the table its run() returned (NaN and infinities numbers again), nil
-- when it has none (recipe_cells.h).
local function read_result(cfg, cell)
  return lmkit.recipe_folder.read_result(cfg.out, cell.id)
end

function Recipe:context(cfg, cell)
  local dir = cell and (cfg.out .. "/cells/" .. cell.id) or cfg.out
  return {cfg = cfg, dir = dir, out = cfg.out, recipe = self}
end

-- The recipe's declared settings as this run resolved them: what a cell's result depends on (the
-- runner's own settings are never declared).
function Recipe:result_settings(cfg)
  local values = {}
  for key in pairs(self.settings) do values[key] = cfg[key] end
  return values
end

-- Refuses finished cells whose settings.json records other settings than `cfg`'s, but for those
-- that only choose the grid's cells (lmkit.recipe_folder.check_settings, recipe_cells.h). What only
-- the recipe can say is given to it: the grid's cell ids with one setting changed (nil when the
-- grid cannot be made so).
function Recipe:check_cells_settings(cfg, cells)
  local ids = {}
  for i, cell in ipairs(cells) do ids[i] = cell.id end
  folder("check_settings", self.name, cfg.out, ids, self:result_settings(cfg), self.settings, cfg.report_only,
    function(key, value)
      local variant = {}
      for k, v in pairs(cfg) do variant[k] = v end
      variant[key] = value
      local ok, grid = pcall(self.grid, variant)
      if not ok or type(grid) ~= "table" then return nil end
      local grid_ids = {}
      for i, cell in ipairs(grid) do
        if type(cell) ~= "table" then return nil end
        grid_ids[i] = recipe.cell_id(cell)
      end
      return grid_ids
    end)
end

-- <out>/recipe.json, the folder's one record (recipe_record.h): the recipe file, its settings and its
-- cells, so that `lmkit status OUT` can list the cells, `lmkit report OUT` render the report with
-- these settings and `lmkit batch` continue the folder. `task`: a single cell's run, which leaves a
-- batch's record alone.
function Recipe:write_record(cfg, cells, task)
  local ids = {}
  for i, cell in ipairs(cells) do ids[i] = cell.id end
  local args = rawget(_G, "arg")
  local path = type(args) == "table" and args[0] and lmkit.process.absolute(tostring(args[0])) or ""
  folder("record_run", cfg.out, path, self.name, self.description, lmkit.json_encode(self:result_settings(cfg)),
         lmkit.json_encode(self.settings), ids, task == true)
end

-- <out>/results.csv, the tidy long table beside the report's formatted one (recipe_cells.h).
function Recipe:write_tidy(cfg, results)
  local rows = {}
  for i, r in ipairs(results) do rows[i] = {id = r.cell.id, fields = scalar_fields(r.cell)} end
  folder("write_tidy", cfg.out, rows)
end

-- `lmkit report RUN_DIR`'s plot: the run's learning curve beside its files.
function recipe.plot_run(o)
  local out = o.dir .. "/learning_curve.png"
  lmkit.plot.learning_curve{out = out, run = o.dir, title = "Learning curve of " .. o.dir}
  print("plot: " .. out)
  return 0
end

-- `lmkit compare`'s plot: each run's curve of one number by epoch (`metric`, the validation
-- perplexity by default), the legend right of the data.
--   o = {out = "compare.png", metric = "valid_ppl", runs = {{label =, epochs = {...}, values = {...}}, ...}}
local COMPARED_NUMBERS = {valid_ppl = "validation perplexity", train_ppl = "training perplexity",
                          valid_loss = "validation loss", train_loss = "training loss",
                          epoch_seconds = "seconds per epoch"}
function recipe.plot_comparison(o)
  local series = {}
  for i, run in ipairs(o.runs) do
    series[i] = {x = run.epochs, y = run.values, label = run.label, with = "linespoints", pointsize = 0.6}
  end
  local last = 0
  for _, run in ipairs(o.runs) do last = math.max(last, run.epochs[#run.epochs] or 0) end
  local known = COMPARED_NUMBERS[o.metric]
  local what = known or o.metric
  lmkit.plot.line{out = o.out, series = series, title = known and (known:sub(1, 1):upper() .. known:sub(2)) or o.metric, xlabel = "epoch",
                  ylabel = what, key = "outside right top", width = 1000,
                  set = last <= 20 and {"set xtics 1"} or nil}
  print("plot: " .. o.out)
  return 0
end

-- Runs one cell unless its result.json is already there (made with these settings); returns the result.
function Recipe:run_cell(cfg, cell)
  local ctx = self:context(cfg, cell)
  local done = read_result(cfg, cell)
  if done then
    self:check_cells_settings(cfg, {cell})
    return done, true
  end
  lmkit.fs.mkdir(ctx.dir)
  print(("== %s: cell %d (%s)"):format(self.name, cell.index, cell.id))
  -- A failure leaves failed.json (its message and where it happened) for `lmkit status`, and goes
  -- on as lmkit.error_report made it (a message, with the cell's traceback where one helps). The
  -- report is made where the error was raised (its traceback is the recipe's own frames) and
  -- raised again as it is: `lmkit run` shows it unchanged.
  local ok, result = xpcall(self.run, function(e)
    local report = lmkit.error_report(e, 2)
    pcall(lmkit.recipe_folder.record_failure, cfg.out, cell.id, tostring(e), tostring(report))
    return report
  end, cell, ctx)
  if not ok then error(result, 0) end
  if type(result) ~= "table" then
    error(("recipe %s: run() must return a table of results for cell %s, got %s"):format(self.name, cell.id, type(result)))
  end
  folder("store_result", cfg.out, self.name, cell.id, scalar_fields(cell), self:result_settings(cfg), result)
  return result, false
end

-- The finished cells' results (missing ones as {cell=, result=nil}); main has checked their settings.
function Recipe:collect(cfg, cells)
  local results = {}
  for i, cell in ipairs(cells) do results[i] = {cell = cell, result = read_result(cfg, cell)} end
  return results
end

-- Runs cell `cell` as batch task cell.index, recorded (running → done | failed | preempted, with
-- the attempt number, host, pid, Slurm id and the error: runtime/batch/batch_task_state.h) so that
-- `lmkit status` can tell what happened even when the process is gone. run_cell's error is already
-- the report (the cell's own traceback where one helps).
function Recipe:run_task(cfg, cell)
  lmkit.process.run_task(cfg.out, cell.index, cell.id, self.name, function()
    local ok, err = xpcall(function() return self:run_cell(cfg, cell) end, lmkit.error_report)
    if not ok then error(err, 0) end
  end)
end

-- What the cells still to run need, from the recipe's `needs(cell, cfg)` ({what=, epochs=, corpus=
-- {name=, protocol=}, estimate={gpu_hours=, peak_mb=, from=}, no_estimate=}): the plan's lines (how
-- many tasks of each kind, their epochs and estimated cost, whether each corpus's files are where
-- a task will look) and the problems (missing data) that would fail tasks, as
-- runtime/batch/batch_plan.h makes them. What only the recipe can say is asked here.
function Recipe:plan(cfg, cells)
  local needs = {}
  for _, cell in ipairs(self.needs and cells or {}) do
    -- A finished cell (one with its result: recipe_cells.h) needs nothing; its needs are not asked.
    if not read_result(cfg, cell) then
      local entry = {id = cell.id}
      local ok, need = pcall(self.needs, cell, cfg)
      if not ok then
        entry.failed = tostring(need)
      elseif type(need) ~= "table" then
        entry.failed = "returned a " .. type(need)
      elseif pcall(lmkit.json_encode, need) then
        entry.need = need
      else
        entry.failed = "returned a table that JSON cannot hold"
      end
      needs[#needs + 1] = entry
    end
  end
  local plan = lmkit.process.plan{out = cfg.out, cells = #cells, declared = self.needs ~= nil, needs = needs}
  return plan.lines, plan.problems
end

function Recipe:main(overrides)
  local cfg = self:configure(overrides)
  local cells = self:cells(cfg)
  if cfg.dry_run then
    -- The start of a run without running anything: settings resolved, cells planned, nothing written.
    print(("recipe %s: %d cell%s, output folder %s"):format(self.name, #cells, #cells == 1 and "" or "s", cfg.out))
    for _, line in ipairs((self:plan(cfg, cells))) do print(line) end
    local width = #tostring(#cells)
    for _, cell in ipairs(cells) do print(("  %" .. width .. "d  %s"):format(cell.index, cell.id)) end
    return
  end
  if cfg.task ~= 0 then
    local cell = math.type(cfg.task) == "integer" and cells[cfg.task]
    if not cell then
      error(("recipe %s: --set task=%s is not a task: give one of 1..%d (its grid's cells)"):format(
        self.name, tostring(cfg.task), #cells), 0)
    end
    -- A hand-run task records the folder where nothing does yet (the first of concurrent tasks;
    -- a failure to write it costs only `lmkit status`'s view); a record there stays as it is.
    pcall(self.write_record, self, cfg, cells, true)
    self:run_task(cfg, cell)
    return
  end
  -- Every finished cell made with these settings, before anything is written or run: a run of
  -- other settings stops with nothing changed.
  self:check_cells_settings(cfg, cells)
  if not cfg.report_only then
    self:write_record(cfg, cells)
    for _, cell in ipairs(cells) do self:run_cell(cfg, cell) end
  end
  local results = self:collect(cfg, cells)
  self:write_tidy(cfg, results)
  local missing = 0
  for _, r in ipairs(results) do if not r.result then missing = missing + 1 end end
  if missing > 0 then print(("%d of %d cells have no result yet; the report marks them"):format(missing, #cells)) end
  return self.report(results, self:context(cfg, nil))
end

-- ---- the catalog: `lmkit recipes` and `lmkit run NAME --help` ----

local function read_text(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local text = f:read("a")
  f:close()
  return text
end

-- The text of a script's leading comment block, joined ("" when it has none).
local function leading_comment(text)
  local lines = {}
  for line in (text .. "\n"):gmatch("([^\n]*)\n") do
    local comment = line:match("^%-%-+%s?(.*)$")
    if not comment then break end
    lines[#lines + 1] = comment
  end
  return table.concat(lines, "\n")
end

-- Loads a recipe file's definition without running it: only files that call recipe.define are
-- executed (their top level only defines); other scripts (quickstart.lua) would run, so they are
-- described by their leading comment. Returns the definition or nil, and the file's text.
local function definition_of(path)
  local text = read_text(path)
  if not text then return nil, nil end
  if not text:find("recipe%.define") then return nil, text end
  local chunk, err = loadfile(path)
  if not chunk then error(("%s: %s"):format(path, err), 0) end
  local ok, value = pcall(chunk)
  if not ok then error(("%s: %s"):format(path, tostring(value)), 0) end
  return recipe.is_recipe(value) and value or nil, text
end

-- {name=, file=, description=, kind = "recipe"|"script"} for each .lua file in `files` (paths),
-- sorted by name.
function recipe.catalog(files)
  local entries = {}
  for _, file in ipairs(files) do
    local name = file:match("([^/]+)%.lua$")
    local def, text = definition_of(file)
    if def then
      entries[#entries + 1] = {name = name, file = file, description = def.description, kind = "recipe"}
    elseif text then
      -- the first sentence of the first paragraph of its leading comment
      local paragraph = (leading_comment(text) .. "\n\n"):match("^(.-)\n%s*\n"):gsub("%s*\n%s*", " ")
      local first = paragraph:match("^(.-%.)%s") or paragraph
      entries[#entries + 1] = {name = name, file = file, description = first, kind = "script"}
    end
  end
  table.sort(entries, function(a, b) return a.name < b.name end)
  return entries
end

-- The settings of the recipe in `file`: {{key=, default=, doc=}, ...} sorted by key, the runner's
-- own (out, task, report_only) last. The docs are the declared ones (recipe.setting).
function recipe.settings_of(file)
  local def = definition_of(file)
  if not def then return nil end
  local rows = {}
  for key, default in pairs(def.settings) do
    rows[#rows + 1] = {key = key, default = default, doc = def.setting_docs[key] or ""}
  end
  table.sort(rows, function(a, b) return a.key < b.key end)
  for _, runner in ipairs(lmkit.recipe_folder.runner_settings()) do
    local default = runner.key == "out" and lmkit.recipe_folder.default_out(def.name, "<scale>") or runner.default
    rows[#rows + 1] = {key = runner.key, default = default, doc = runner.doc}
  end
  return rows, def
end

-- `lmkit recipes`: prints the catalog of lmkit's recipes folder. options = {dir=, files={...}}.
function recipe.print_catalog(options)
  local entries = recipe.catalog(options.files)
  print(("Recipes in %s (lmkit run NAME [--set key=value ...]; lmkit run NAME --help for its settings):"):format(options.dir))
  local width = 0
  for _, e in ipairs(entries) do width = math.max(width, #e.name) end
  for _, e in ipairs(entries) do
    print(("  %-" .. width .. "s  %s%s"):format(e.name, e.description, e.kind == "script" and " (a script)" or ""))
  end
  return 0
end

-- `lmkit run NAME --help`: the recipe's description and settings. options = {file=}.
function recipe.print_help(options)
  local rows, def = recipe.settings_of(options.file)
  if not rows then
    local text = read_text(options.file) or error(("cannot read %s"):format(options.file), 0)
    print(leading_comment(text))
    print("\n(a script, not a recipe: it reads its settings through lmkit.configure)")
    return 0
  end
  print(("%s — %s\n%s\n"):format(def.name, def.description, options.file))
  print("Settings (--set key=value):")
  local kw, dw = 0, 0
  local function show(v) return type(v) == "string" and ("%q"):format(v) or tostring(v) end
  for _, r in ipairs(rows) do kw, dw = math.max(kw, #r.key), math.max(dw, #show(r.default)) end
  for _, r in ipairs(rows) do
    print(("  %-" .. kw .. "s = %-" .. dw .. "s  %s"):format(r.key, show(r.default), r.doc))
  end
  return 0
end

-- What `lmkit run` does with the value a script returns: a recipe is run, anything else ignored.
function recipe.run_returned(value)
  if not recipe.is_recipe(value) then return end
  -- A recipe takes its settings from --set only: an argument after its name would be ignored (and a
  -- run with "epochs=2" report the defaults' numbers as if it had taken it).
  local args = rawget(_G, "arg")
  if type(args) == "table" and args[1] ~= nil then
    local given = tostring(args[1])
    local hint = given:find("=", 1, true) and (" (did you mean --set %s?)"):format(given)
      or " (a recipe takes its settings as --set key=value)"
    error(("recipe %s: unexpected argument '%s'%s"):format(value.name, given, hint), 0)
  end
  value:main()
end

return recipe
