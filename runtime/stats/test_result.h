// The (statistic, p-value) pair every test returns, in scipy.stats' order.
#pragma once

namespace lmkit::stats {

struct TestResult {
  double statistic;
  double pvalue;
};

}  // namespace lmkit::stats
