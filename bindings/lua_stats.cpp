// lmkit.stats: scipy.stats-shaped statistics over Lua arrays or 1-D tensors.
#include <string>
#include <vector>

#include "bindings/entry_point.h"
#include "bindings/lua_call.h"
#include "bindings/lua_stats.h"
#include "bindings/lua_tensor.h"
#include "runtime/stats/correlation.h"
#include "runtime/stats/descriptive.h"
#include "runtime/stats/rank_sum_tests.h"
#include "runtime/stats/t_tests.h"

namespace lmkit::lua {
namespace {

std::vector<double> check_sample(lua_State* L, int position) { return entry_detail::read_numbers(L, position); }

int push_result(lua_State* L, const stats::TestResult& r) {
  lua_pushnumber(L, r.statistic);
  lua_pushnumber(L, r.pvalue);
  return 2;
}

int stats_mean(lua_State* L) {
  lua_pushnumber(L, stats::mean(check_sample(L, 1)));
  return 1;
}

int stats_sd(lua_State* L) {
  lua_pushnumber(L, stats::sd(check_sample(L, 1)));
  return 1;
}

int stats_pearsonr(lua_State* L) { return push_result(L, stats::pearsonr(check_sample(L, 1), check_sample(L, 2))); }
int stats_spearmanr(lua_State* L) { return push_result(L, stats::spearmanr(check_sample(L, 1), check_sample(L, 2))); }
int stats_ranksums(lua_State* L) { return push_result(L, stats::ranksums(check_sample(L, 1), check_sample(L, 2))); }

int stats_mannwhitneyu(lua_State* L) {
  const auto a = check_sample(L, 1);
  const auto b = check_sample(L, 2);
  Options options(L, 3, {"method"});
  const auto method = stats::parse_mann_whitney_method(options.string("method").value_or("auto"));
  return push_result(L, stats::mannwhitneyu(a, b, method));
}

int stats_ttest_ind(lua_State* L) {
  const auto a = check_sample(L, 1);
  const auto b = check_sample(L, 2);
  Options options(L, 3, {"equal_var"});
  const auto r = stats::ttest_ind(a, b, options.boolean("equal_var").value_or(true));
  lua_pushnumber(L, r.statistic);
  lua_pushnumber(L, r.pvalue);
  lua_pushnumber(L, r.df);
  return 3;
}

const Function kFunctions[] = {
    {"mean", stats_mean, "lmkit.stats.mean(x) -> number\nArithmetic mean of an array or 1-D tensor."},
    {"sd", stats_sd, "lmkit.stats.sd(x) -> number\nSample standard deviation (n − 1), as 'mean ± sd' over seeds is reported."},
    {"pearsonr", stats_pearsonr, "lmkit.stats.pearsonr(x, y) -> r, p\nPearson correlation and its two-sided p-value (t-test with n − 2 df), as scipy.stats.pearsonr."},
    {"spearmanr", stats_spearmanr, "lmkit.stats.spearmanr(x, y) -> rho, p\nSpearman's rank correlation (ties get average ranks) and its two-sided p-value, as scipy.stats.spearmanr."},
    {"ranksums", stats_ranksums, "lmkit.stats.ranksums(a, b) -> z, p\nWilcoxon rank-sum test, normal approximation without tie correction (the thesis's test), two-sided, as scipy.stats.ranksums."},
    {"mannwhitneyu", stats_mannwhitneyu, "lmkit.stats.mannwhitneyu(a, b[, {method=\"auto\"|\"exact\"|\"asymptotic\"}]) -> U, p\nMann-Whitney U of a and its two-sided p-value: exact for small samples without ties, else the tie- and continuity-corrected normal approximation, as scipy.stats.mannwhitneyu."},
    {"ttest_ind", stats_ttest_ind, "lmkit.stats.ttest_ind(a, b[, {equal_var=true}]) -> t, p, df\nUnpaired two-sample t-test (Student, or Welch with equal_var=false), two-sided, as scipy.stats.ttest_ind."},
};

}  // namespace

void open_stats(lua_State* L, int module_index) {
  lua_newtable(L);
  set_functions(L, -1, "lmkit.stats", kFunctions);
  register_doc(L, -1, "lmkit.stats", "lmkit.stats — statistics for comparing runs, with scipy.stats' names, arguments and return order.");
  lua_setfield(L, module_index, "stats");
}

}  // namespace lmkit::lua
