// Unpaired two-sample t-tests, two-sided, as scipy.stats.ttest_ind:
//   Student (equal variances): t = (x̄_a − x̄_b) / sqrt(s_p² (1/n_a + 1/n_b)),
//     s_p² = ((n_a−1)s_a² + (n_b−1)s_b²)/(n_a+n_b−2), df = n_a+n_b−2;
//   Welch: t = (x̄_a − x̄_b) / sqrt(s_a²/n_a + s_b²/n_b),
//     df = (s_a²/n_a + s_b²/n_b)² / ((s_a²/n_a)²/(n_a−1) + (s_b²/n_b)²/(n_b−1)).
// The conference paper's significance tests (e.g. LMS-PLIF vs Softmax over seeds).
#pragma once
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/stats/test_result.h"

namespace lmkit::stats {

struct TTestResult {
  double statistic;
  double pvalue;
  double df;
};
inline auto declared_result(config::Tag<TTestResult>) {
  return config::result_values(config::result_field("statistic", &TTestResult::statistic, "t"),
                               config::result_field("pvalue", &TTestResult::pvalue, "its two-sided p-value"),
                               config::result_field("df", &TTestResult::df, "the degrees of freedom"));
}

struct TTestOptions {
  bool equal_var = true;
};
const config::BoundOptions<TTestOptions>& declared_options(config::Tag<TTestOptions>);

TTestResult ttest_ind(const std::vector<double>& a, const std::vector<double>& b, const TTestOptions& options = {});

}  // namespace lmkit::stats
