#include "runtime/stats/correlation.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/stats/descriptive.h"
#include "runtime/stats/distributions.h"
#include "runtime/stats/ranking.h"

namespace lmkit::stats {
namespace {

void require_pairs(const std::vector<double>& x, const std::vector<double>& y, const char* what) {
  if (x.size() != y.size()) {
    throw UsageError(std::string(what) + ": x has " + integer_text(x.size()) + " values but y has " +
                     integer_text(y.size()));
  }
  require_sample(x, 2, what);
  require_sample(y, 2, what);
}

}  // namespace

TestResult pearsonr(const std::vector<double>& x, const std::vector<double>& y) {
  require_pairs(x, y, "pearsonr");
  const double mx = mean(x), my = mean(y);
  double sxy = 0.0, sxx = 0.0, syy = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0.0 || syy == 0.0) {
    throw UsageError("pearsonr: an input is constant, so the correlation is undefined");
  }
  const double r = std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
  const double n = static_cast<double>(x.size());
  if (x.size() == 2) return {r, 1.0};  // two points always lie on a line
  if (std::fabs(r) == 1.0) return {r, 0.0};
  const double t = r * std::sqrt((n - 2.0) / ((1.0 - r) * (1.0 + r)));
  return {r, student_t_two_sided(t, n - 2.0)};
}

TestResult spearmanr(const std::vector<double>& x, const std::vector<double>& y) {
  require_pairs(x, y, "spearmanr");
  return pearsonr(average_ranks(x), average_ranks(y));
}

}  // namespace lmkit::stats
