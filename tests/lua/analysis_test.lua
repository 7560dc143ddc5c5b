-- lmkit.analysis from Lua: the rank of a constructed low-rank matrix.
local T = require "lmkit.testing"

T.test("Press and effective rank of a rank-7 product", function()
  lmkit.seed(3)
  local q = lmkit.randn(200, 7):matmul(lmkit.randn(7, 150))
  local sv = lmkit.analysis.svdvals(q)
  T.eq(sv:dtype(), "float32")
  T.eq(lmkit.analysis.press_rank(sv, 200, 150), 7)
  T.eq(lmkit.analysis.svdvals(q, {float64 = true}):dtype(), "float64")
  local report = lmkit.analysis.rank_report(q)
  T.eq(report.press, 7)
  T.eq(#report.effective, 3)
  T.truthy(report.effective[3].rank <= 7)
  T.truthy(lmkit.analysis.effective_rank(sv, 1e-3) <= 7)
end)

T.test("bad input is named", function()
  T.raises(function() lmkit.analysis.svdvals(lmkit.ones(3)) end, "needs a matrix")
  T.raises(function() lmkit.analysis.press_rank(lmkit.ones(3), 3, 3, "float33") end, "unknown dtype 'float33'")
end)

T.run()
