-- lmkit.stats from Lua: arrays and tensors in, scipy's return order out.
local T = require "lmkit.testing"

T.test("mean and sd over arrays and tensors", function()
  T.eq(lmkit.stats.mean({2, 4, 4, 4, 5, 5, 7, 9}), 5.0)
  T.near(lmkit.stats.sd(lmkit.tensor({2, 4, 4, 4, 5, 5, 7, 9})), math.sqrt(32 / 7), 1e-14)
end)

T.test("tests return statistic then p-value", function()
  local r, p = lmkit.stats.spearmanr({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7})
  T.near(r, 0.8207826816681233, 1e-12)
  T.near(p, 0.08858700531354381, 1e-10)
  local u, pu = lmkit.stats.mannwhitneyu({19, 22, 16, 29, 24}, {20, 11, 17, 12})
  T.eq(u, 17.0)
  T.near(pu, 1 / 9, 1e-15)
  local t, pt, df = lmkit.stats.ttest_ind({1, 2, 3}, {4, 5, 6}, {equal_var = false})
  T.near(t, -3 / math.sqrt(2 / 3), 1e-14)
  T.eq(df, 4.0)
  T.truthy(pt > 0 and pt < 0.05)
end)

T.test("bad input is named", function()
  T.raises(function() lmkit.stats.mean({1, "x"}) end, "entry 2 is not a number")
  T.raises(function() lmkit.stats.pearsonr({1, 2}, {1, 2, 3}) end, "x has 2 values but y has 3")
  T.raises(function() lmkit.stats.ttest_ind({1, 2}, {3, 4}, {equal_variance = true}) end, "option 'equal_variance' is unknown")
  T.raises(function() lmkit.stats.mannwhitneyu({1}, {2}, {method = "magic"}) end, "option 'method' must be one of \"auto\", \"exact\", \"asymptotic\", got \"magic\"")
  T.raises(function() lmkit.stats.sd(lmkit.ones(2, 2)) end, "must be 1-D")
end)

T.run()
