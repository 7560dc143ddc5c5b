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

T.run()
os.execute("rm -rf '" .. root .. "'")
