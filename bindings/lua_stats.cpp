// lmkit.stats: scipy.stats-shaped statistics over Lua arrays or 1-D tensors.
#include "bindings/lua_stats.h"

#include "bindings/entry_point.h"
#include "runtime/stats/correlation.h"
#include "runtime/stats/descriptive.h"
#include "runtime/stats/rank_sum_tests.h"
#include "runtime/stats/t_tests.h"

namespace lmkit::lua {

void open_stats(lua_State* L, int module_index) {
  static const Function functions[] = {
      entry<&stats::mean>("lmkit.stats", "mean", "x", "Arithmetic mean of an array or 1-D tensor."),
      entry<&stats::sd>("lmkit.stats", "sd", "x", "Sample standard deviation (n − 1), as 'mean ± sd' over seeds is reported."),
      entry<&stats::pearsonr>("lmkit.stats", "pearsonr", "x, y", "Pearson correlation r and its two-sided p-value (t-test with n − 2 df), as scipy.stats.pearsonr."),
      entry<&stats::spearmanr>("lmkit.stats", "spearmanr", "x, y", "Spearman's rank correlation ρ (ties get average ranks) and its two-sided p-value, as scipy.stats.spearmanr."),
      entry<&stats::ranksums>("lmkit.stats", "ranksums", "a, b", "Wilcoxon rank-sum test z, normal approximation without tie correction (the thesis's test), two-sided, as scipy.stats.ranksums."),
      entry<&stats::mannwhitneyu>("lmkit.stats", "mannwhitneyu", "a, b", "Mann-Whitney U of a and its two-sided p-value: exact for small samples without ties, else the tie- and continuity-corrected normal approximation, as scipy.stats.mannwhitneyu."),
      entry<&stats::ttest_ind>("lmkit.stats", "ttest_ind", "a, b", "Unpaired two-sample t-test (Student, or Welch with equal_var=false), two-sided, as scipy.stats.ttest_ind."),
  };
  lua_newtable(L);
  set_functions(L, -1, "lmkit.stats", functions);
  register_doc(L, -1, "lmkit.stats", "lmkit.stats — statistics for comparing runs, with scipy.stats' names, arguments and return order.");
  lua_setfield(L, module_index, "stats");
}

}  // namespace lmkit::lua
