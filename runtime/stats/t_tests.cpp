#include "runtime/stats/t_tests.h"

#include <cmath>

#include "runtime/core/error.h"
#include "runtime/stats/descriptive.h"
#include "runtime/stats/distributions.h"

namespace lmkit::stats {

const config::BoundOptions<TTestOptions>& declared_options(config::Tag<TTestOptions>) {
  static const config::BoundOptions<TTestOptions> options(
      "ttest_ind", {{"equal_var", &TTestOptions::equal_var, "Student's test (true) or Welch's (false)"}});
  return options;
}

TTestResult ttest_ind(const std::vector<double>& a, const std::vector<double>& b, const TTestOptions& options) {
  const bool equal_var = options.equal_var;
  require_sample(a, 2, "ttest_ind");
  require_sample(b, 2, "ttest_ind");
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double va = variance(a), vb = variance(b);
  const double difference = mean(a) - mean(b);
  double se, df;
  if (equal_var) {
    df = na + nb - 2.0;
    const double pooled = ((na - 1.0) * va + (nb - 1.0) * vb) / df;
    se = std::sqrt(pooled * (1.0 / na + 1.0 / nb));
  } else {
    const double qa = va / na, qb = vb / nb;
    se = std::sqrt(qa + qb);
    df = (qa + qb) * (qa + qb) / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
  }
  if (se == 0.0) {
    throw UsageError("ttest_ind: both samples are constant, so the t statistic is undefined");
  }
  const double t = difference / se;
  return {t, student_t_two_sided(t, df), df};
}

}  // namespace lmkit::stats
