-- lmkit.recipe: grids, cell folders, results that are never recomputed, single tasks, reports.
local T = require "lmkit.testing"
local recipe = require "lmkit.recipe"

local root = os.tmpname()
os.remove(root)

local runs = {}
local function counting_recipe(name, cells)
  runs[name] = 0
  return recipe.define{
    name = name,
    settings = {scale = recipe.setting("tiny", "the scale"), width = recipe.setting(2, "added to every score")},
    grid = function(cfg)
      local out = {}
      for _, c in ipairs(cells) do out[#out + 1] = {head = c.head, seed = c.seed, width = cfg.width} end
      return out
    end,
    run = function(cell, ctx)
      runs[name] = runs[name] + 1
      T.truthy(ctx.dir:find("/cells/" .. cell.id, 1, true), "the cell runs in its own folder")
      return {score = cell.seed * 10 + cell.width, head = cell.head}
    end,
    report = function(results, ctx)
      local rows = {}
      for i, r in ipairs(results) do rows[i] = r.result and r.result.score or "missing" end
      return rows
    end,
  }
end

local cells = {{head = "softmax", seed = 1}, {head = "gss", seed = 1}, {head = "softmax", seed = 2}}

T.test("a recipe runs every cell once, then its report", function()
  local r = counting_recipe("a", cells)
  T.truthy(recipe.is_recipe(r))
  T.eq(r:main{out = root .. "/a"}, {12, 12, 22})
  T.eq(runs.a, 3)
  -- Run again: every result.json is there, nothing is recomputed.
  T.eq(r:main{out = root .. "/a"}, {12, 12, 22})
  T.eq(runs.a, 3)
end)

T.test("a task runs one cell; report_only marks the missing ones", function()
  local r = counting_recipe("b", cells)
  r:main{out = root .. "/b", task = 2}
  T.eq(runs.b, 1)
  T.eq(r:main{out = root .. "/b", report_only = true}, {"missing", 12, "missing"})
  T.eq(runs.b, 1)
  T.raises(function() r:main{out = root .. "/b", task = 4} end, "--set task=4 is not a task: give one of 1..3")
end)

T.test("a result.json that is no JSON object is no result: the cell runs again", function()
  local r = counting_recipe("arr", cells)
  r:main{out = root .. "/arr"}
  T.eq(runs.arr, 3)
  lmkit.write_file(root .. "/arr/cells/head=gss,seed=1,width=2/result.json", "[12]")
  T.eq(lmkit.recipe_folder.read_result(root .. "/arr", "head=gss,seed=1,width=2"), nil)
  T.eq(r:main{out = root .. "/arr"}, {12, 12, 22})
  T.eq(runs.arr, 4)
end)

T.test("a NaN or infinite result stays what it is in result.json, the report and results.csv", function()
  local seen = {}
  local r = recipe.define{
    name = "nonfinite",
    settings = {},
    grid = function() return {{x = 1}} end,
    -- A diverged run's perplexity, an unbounded ratio, a string that only reads like a number.
    run = function() return {ppl = 0 / 0, ratio = math.huge, low = -math.huge, rank = {press = 0 / 0, ok = 4},
                             word = "NaN", steps = 3} end,
    report = function(results)
      local v = results[1].result
      seen[#seen + 1] = v
      return {nan = v.ppl ~= v.ppl, ratio = v.ratio, low = v.low, press = v.rank.press ~= v.rank.press,
              word = v.word, ok = v.rank.ok, marker = v["$non_finite"]}
    end,
  }
  local out = root .. "/nonfinite"
  local expected = {nan = true, ratio = math.huge, low = -math.huge, press = true, word = "NaN", ok = 4}
  T.eq(r:main{out = out}, expected)
  -- Read back from result.json (the cell is not run again): the same values.
  T.eq(r:main{out = out, report_only = true}, expected)
  T.eq(#seen, 2)
  local stored = lmkit.json_decode(T.read_file(out .. "/cells/x=1/result.json"))
  T.eq(stored.ppl, "NaN")
  T.eq(stored.ratio, "Infinity")
  T.eq(stored["$non_finite"], {{"low"}, {"ppl"}, {"rank", "press"}, {"ratio"}})
  local csv = T.read_file(out .. "/results.csv")
  for _, row in ipairs{"x=1,1,ppl,nan", "x=1,1,ratio,inf", "x=1,1,low,-inf", "x=1,1,rank.press,nan", "x=1,1,word,NaN",
                       "x=1,1,rank.ok,4"} do
    T.truthy(csv:find(row, 1, true), row .. " in\n" .. csv)
  end
  T.truthy(not csv:find("non_finite", 1, true), csv)
  T.raises(function() lmkit.recipe_folder.store_result(out, "nonfinite", "x=1", {x = 1}, {}, {["$non_finite"] = 1}) end,
           "must not use the key '$non_finite'")
  T.raises(function() lmkit.recipe_folder.store_result(out, "nonfinite", "x=1", {x = 1}, {}, {1, 2}) end,
           "run() must return a table of named results for cell x=1")
end)

T.test("a recipe's plan: its needs by kind, the data they read, and needs that fail as a line, not a failure", function()
  local function planned(needs)
    local r = recipe.define{name = "planned", settings = {}, grid = function() return {{x = 1}, {x = 2}, {x = 3}} end,
                            run = function() return {} end, report = function() end, needs = needs}
    local cfg = r:configure{out = root .. "/planned"}
    return r:plan(cfg, r:cells(cfg))
  end
  local lines, problems = planned(function(cell)
    return {what = cell.x < 3 and "small" or "big", epochs = 4, estimate = {gpu_hours = 0.5, peak_mb = 100, from = "a test GPU"},
            corpus = {name = "no-such-corpus-here"}}  -- no protocol: the full one
  end)
  local text = table.concat(lines, "\n")
  T.truthy(text:find("plan: 3 of 3 cells to run", 1, true), text)
  T.truthy(text:find("2 × small: 4 epochs, about 0.50 GPU-hours, 100 MB on the device each", 1, true), text)
  T.truthy(text:find("in all about 1.5 GPU-hours (a test GPU)", 1, true), text)
  T.eq(#problems, 1)
  T.truthy(problems[1]:find("3 tasks need no-such-corpus-here's train.txt, valid.txt, test.txt (full protocol)", 1, true), problems[1])
  lines, problems = planned(function() error("a bug in needs") end)
  text = table.concat(lines, "\n")
  T.truthy(text:find("its needs failed: .*a bug in needs"), text)
  T.eq(problems, {})
  T.raises(function() recipe.define{name = "x", grid = function() end, run = function() end, report = function() end, needs = 3} end,
           "needs must be a function")
end)

T.test("cell ids are readable and stable", function()
  T.eq(recipe.cell_id{seed = 3, head = "gss", c = 0.5}, "c=0.5,head=gss,seed=3")
  T.eq(recipe.cell_id{name = "a b/c"}, "name=a_b_c")
  -- Values as Lua writes them, so that folders made by earlier versions keep their cells: 1.0 is
  -- not 1, 0.1 stays 0.1, large and small floats in %.14g, booleans, every non-ASCII byte one "_".
  T.eq(recipe.cell_id{x = 1.0, y = 2, z = -3}, "x=1.0,y=2,z=-3")
  T.eq(recipe.cell_id{a = 0.1, b = 1e20, c = 1 / 3, d = true}, "a=0.1,b=1e_20,c=0.33333333333333,d=true")
  T.eq(recipe.cell_id{w = "é"}, "w=__")
  T.eq(recipe.cell_id{paper = {1, 2}, run = print}, "cell")
end)

T.test("malformed recipes and cells are named", function()
  T.raises(function() recipe.define{name = "x", grid = function() end, run = function() end} end, "'report' must be a function")
  T.raises(function() recipe.define{name = "x", grid = function() end, run = function() end, report = function() end,
                                    settings = {task = 1}} end, "setting 'task' is the runner's")
  local dup = counting_recipe("dup", {{head = "a", seed = 1}, {head = "a", seed = 1}})
  T.raises(function() dup:main{out = root .. "/dup"} end, "cells 1 and 2 are the same")
  local empty = counting_recipe("empty", {})
  T.raises(function() empty:main{out = root .. "/empty"} end, "grid() returned no cells")
  local bad = recipe.define{name = "bad", grid = function() return {{x = 1}} end, run = function() return 42 end,
                            report = function() end}
  T.raises(function() bad:main{out = root .. "/bad"} end, "run() must return a table of results for cell x=1")
  T.raises(function() bad:main{out = root .. "/bad", nonsense = 1} end, "unknown setting 'nonsense'")
end)

T.test("declared settings: the shared block once, a recipe's own default keeps the shared doc", function()
  local source = os.getenv("LMKIT_SOURCE_DIR") or ".."
  package.path = source .. "/recipes/?.lua;" .. package.path
  local presets = require "presets.awd_lstm"
  local s = presets.settings{"scale", "epochs", switch = "nt", K = 15,
                              width = recipe.setting(3, "the width of something")}
  T.truthy(recipe.is_setting(s.scale) and s.scale.default == "tiny")
  T.eq(s.switch.default, "nt")
  T.eq(s.switch.doc, presets.SHARED_SETTINGS.switch.doc)  -- its own default, the shared doc
  T.eq(s.K, 15)  -- a plain default of the recipe's own passes through, and define refuses it (no doc)
  T.raises(function() presets.settings{"scal"} end, "no shared setting 'scal' (shared: corpus, dataset, epochs, init_from, scale, seeds, switch, switch_epoch)")
  T.raises(function() recipe.setting(nil, "x") end, "a setting needs a default")
  local function define(settings)
    return recipe.define{name = "declared", settings = settings, grid = function() return {{a = 1}} end,
                         run = function() return {} end, report = function() end}
  end
  T.raises(function() define(s) end, "recipe declared: setting 'K' has no doc: declare it as recipe.setting(15, \"...\")")
  s.K = recipe.setting(15, "mixture components")
  local r = define(s)
  T.truthy(recipe.is_setting(s.width), "define leaves the declaring table as it was")
  -- define keeps the defaults as settings and the docs beside them: configure and --set see plain values.
  T.eq(r.settings.scale, "tiny")
  T.eq(r.settings.width, 3)
  T.eq(r.setting_docs.width, "the width of something")
  T.eq(r.setting_docs.epochs, "> 0 overrides the scale's epoch count")
  T.eq(r.setting_docs.K, "mixture components")
  local cfg = r:configure({width = 5})
  T.eq({cfg.scale, cfg.width, cfg.switch}, {"tiny", 5, "nt"})
  -- Every recipe of lmkit that trains AWD-LSTMs takes the shared block: none retypes its doc.
  for _, name in ipairs({"compare_heads", "frozen_plif", "gss_grid", "flooding", "mixtape", "hidden_size"}) do
    local text = assert(io.open(source .. "/recipes/" .. name .. ".lua")):read("a")
    T.truthy(text:find("presets.settings{", 1, true), name .. " declares its shared settings by name")
    T.eq(text:find("tiny | small | paper", 1, true), nil, name .. " retypes the scale's doc")
  end
end)

T.test("a setting without a doc is named with its recipe and how to declare it", function()
  local function define(settings)
    return recipe.define{name = "undocumented", settings = settings, grid = function() return {{a = 1}} end,
                         run = function() return {} end, report = function() end}
  end
  T.raises(function() define{limit = 0} end,
           "recipe undocumented: setting 'limit' has no doc: declare it as recipe.setting(0, \"...\")")
  T.raises(function() define{cells = "paper"} end, "setting 'cells' has no doc: declare it as recipe.setting(\"paper\", \"...\")")
  -- several: the first by name, whatever the table's order
  T.raises(function() define{zeta = 1, alpha = true, mid = recipe.setting(2, "documented")} end, "setting 'alpha' has no doc")
  local ok = define{limit = recipe.setting(0, "> 0: only the first `limit` cells")}
  T.eq(ok.settings.limit, 0)
  T.eq(ok.setting_docs.limit, "> 0: only the first `limit` cells")
  T.eq(define(nil).settings, {})
end)

T.test("every recipe of lmkit declares every setting with its doc", function()
  local source = os.getenv("LMKIT_SOURCE_DIR") or ".."
  package.path = source .. "/recipes/?.lua;" .. package.path
  local files = {}
  for _, name in ipairs{"advsoft_ablation", "argmaxable", "asgd_switch", "compare_heads", "dataset_stats",
                        "embedding_spectrum", "evaluation_suite", "fair_mos_softmax", "flooding", "frozen_plif",
                        "gss_grid", "hidden_size", "known_rank", "mixtape", "mos_dropout", "mos_mixtures",
                        "pairwise_kl", "press_robustness", "qualitative", "word_similarity"} do
    files[#files + 1] = source .. "/recipes/" .. name .. ".lua"
  end
  for _, file in ipairs(files) do
    local rows, def = recipe.settings_of(file)  -- loading it runs define, which refuses an undocumented setting
    T.truthy(rows and def, file .. " is a recipe")
    for _, row in ipairs(rows) do T.truthy(row.doc ~= "", ("%s: setting '%s' has an empty doc"):format(file, row.key)) end
  end
end)

-- Every .lua file of lmkit's recipes folder (listed, not named here: a new recipe is covered).
local function catalog_files()
  local dir = (os.getenv("LMKIT_SOURCE_DIR") or "..") .. "/recipes"
  local files = {}
  local listing = io.popen("ls '" .. dir .. "'")
  for name in listing:lines() do
    if name:match("%.lua$") then files[#files + 1] = dir .. "/" .. name end
  end
  listing:close()
  return files
end

T.test("every recipe of the catalog starts with no setting given (a dry run plans it, writes nothing)", function()
  local started = 0
  local print_ = print
  for _, entry in ipairs(recipe.catalog(catalog_files())) do
    if entry.kind == "recipe" then
      local lines = {}
      print = function(...) lines[#lines + 1] = table.concat({...}, " ") end  -- luacheck: ignore
      local def = dofile(entry.file)
      local ok, err = pcall(def.main, def, {dry_run = true})
      print = print_  -- luacheck: ignore
      T.truthy(ok, ("lmkit run %s cannot start by default: %s"):format(entry.name, tostring(err)))
      if ok then
        started = started + 1
        T.truthy((lines[1] or ""):find(("recipe %s: %%d+ cells?, output folder runs/%s%%-"):format(entry.name, entry.name)),
                 entry.name .. ": " .. tostring(lines[1]))
        T.eq(lmkit.fs.exists("runs/" .. entry.name .. "-" .. tostring(def.settings.scale or "default")), false)
      end
    end
  end
  T.truthy(started >= 20, ("only %d recipes started"):format(started))
end)

T.test("hidden_size on a file without a matrix lists what the file holds", function()
  lmkit.fs.mkdir(root)
  local path = root .. "/cube.npy"
  lmkit.write_tensors(path, {logits = lmkit.zeros(2, 3, 4)})
  local def = dofile((os.getenv("LMKIT_SOURCE_DIR") or "..") .. "/recipes/hidden_size.lua")
  T.raises(function() def:main{logits = path, out = root .. "/hidden_size"} end,
           "holds no matrix (its entries: cube [2, 3, 4]): the analysis needs an N×V matrix")
end)

T.test("a setting with choices refuses another value before any folder is made", function()
  local r = recipe.define{
    name = "chosen",
    settings = {scale = recipe.setting("tiny", "the scale", {"tiny", "small", "paper"})},
    grid = function() return {{x = 1}} end,
    run = function() return {y = 1} end,
    report = function() end,
  }
  local out = root .. "/chosen"
  T.raises(function() r:main{out = out, scale = "tinyy"} end, "recipe chosen: --set scale=tinyy is not one of its values: tiny, small, paper")
  T.eq(lmkit.fs.exists(out), false)
  r:main{out = out, scale = "small"}
  T.eq(lmkit.fs.exists(out .. "/cells/x=1/result.json"), true)
  -- The shared settings of the presets carry theirs.
  local presets = require "presets.awd_lstm"
  T.eq(presets.settings{"scale", switch = "nt"}.switch.choices, {"et", "nt"})
end)

T.run()
os.execute("rm -rf '" .. root .. "'")
