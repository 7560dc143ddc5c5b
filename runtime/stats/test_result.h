// The (statistic, p-value) pair every test returns, in scipy.stats' order.
#pragma once
#include "runtime/config/declared_result.h"

namespace lmkit::stats {

struct TestResult {
  double statistic;
  double pvalue;
};
inline auto declared_result(config::Tag<TestResult>) {
  return config::result_values(config::result_field("statistic", &TestResult::statistic, "the test's statistic"),
                               config::result_field("pvalue", &TestResult::pvalue, "its two-sided p-value"));
}

}  // namespace lmkit::stats
