-- A two-cell recipe for the command-line tests: `lmkit run` runs what the script returns, and
-- `lmkit batch` runs its cells as tasks. TINY_FAIL=x in the environment makes the cell x fail.
local recipe = require "lmkit.recipe"
return recipe.define{
  name = "tiny",
  settings = {scale = recipe.setting("tiny", "names the output folder"),
               base = recipe.setting(1, "x of the first cell (the second: base + 1)"),
               offset = recipe.setting(0, "added to each square: a setting that changes results, not cells")},
  grid = function(cfg) return {{x = cfg.base}, {x = cfg.base + 1}} end,
  run = function(cell, ctx)
    if os.getenv("TINY_FAIL") == tostring(cell.x) then error("cell x=" .. cell.x .. " fails on purpose (TINY_FAIL)") end
    return {square = cell.x * cell.x + ctx.cfg.offset}
  end,
  report = function(results)
    local parts = {}
    for _, r in ipairs(results) do parts[#parts + 1] = r.result and tostring(r.result.square) or "-" end
    print("squares: " .. table.concat(parts, " "))
  end,
}
