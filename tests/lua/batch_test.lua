-- lmkit.batch: the pieces the command-line tests do not reach (Slurm's --array syntax for gaps).
local T = require "lmkit.testing"
local batch = require "lmkit.batch"

T.test("index_ranges writes Slurm's --array syntax, runs collapsed, in order", function()
  T.eq(batch.index_ranges{1, 2, 3, 5, 7, 8, 9}, "1-3,5,7-9")
  T.eq(batch.index_ranges{9, 1, 8, 2, 7}, "1-2,7-9")
  T.eq(batch.index_ranges{4}, "4")
  T.eq(batch.index_ranges{2, 4, 6}, "2,4,6")
end)

T.test("status of a folder without a manifest names it and how to make one", function()
  local dir = os.tmpname()
  os.remove(dir)
  T.eq(batch.status{dir = dir}, 2)
end)

T.run()
