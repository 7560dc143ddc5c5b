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
    settings = {scale = "tiny", width = 2},
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
  T.raises(function() r:main{out = root .. "/b", task = 4} end, "task 4 is outside 1..3")
end)

T.test("cell ids are readable and stable", function()
  T.eq(recipe.cell_id{seed = 3, head = "gss", c = 0.5}, "c=0.5,head=gss,seed=3")
  T.eq(recipe.cell_id{name = "a b/c"}, "name=a_b_c")
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
  T.eq(s.K, 15)
  T.raises(function() presets.settings{"scal"} end, "no shared setting 'scal' (shared: dataset, epochs, scale, seeds, switch, switch_epoch)")
  T.raises(function() recipe.setting(nil, "x") end, "a setting needs a default")
  local r = recipe.define{name = "declared", settings = s, grid = function() return {{a = 1}} end,
                          run = function() return {} end, report = function() end}
  -- define keeps the defaults as settings and the docs beside them: configure and --set see plain values.
  T.eq(r.settings.scale, "tiny")
  T.eq(r.settings.width, 3)
  T.eq(r.setting_docs.width, "the width of something")
  T.eq(r.setting_docs.epochs, "> 0 overrides the scale's epoch count")
  local cfg = r:configure({width = 5})
  T.eq({cfg.scale, cfg.width, cfg.switch}, {"tiny", 5, "nt"})
  -- Every recipe of lmkit that trains AWD-LSTMs takes the shared block: none retypes its doc.
  for _, name in ipairs({"compare_heads", "frozen_plif", "gss_grid", "flooding", "mixtape", "hidden_size"}) do
    local text = assert(io.open(source .. "/recipes/" .. name .. ".lua")):read("a")
    T.truthy(text:find("presets.settings{", 1, true), name .. " declares its shared settings by name")
    T.eq(text:find("tiny | small | paper", 1, true), nil, name .. " retypes the scale's doc")
  end
end)

T.run()
os.execute("rm -rf '" .. root .. "'")
