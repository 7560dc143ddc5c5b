#include "runtime/stats/descriptive.h"

#include <cmath>
#include <string>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::stats {

void require_sample(const std::vector<double>& x, std::size_t minimum, const char* what) {
  if (x.size() < minimum) {
    throw UsageError(std::string(what) + " needs at least " + integer_text(minimum) + " values, got " +
                     integer_text(x.size()));
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) {
      throw UsageError(std::string(what) + ": value " + integer_text(i + 1) + " is not finite (" +
                       describe_number(x[i]) + ")");
    }
  }
}

double mean(const std::vector<double>& x) {
  require_sample(x, 1, "mean");
  // Two passes: the correction term removes most of the rounding of the first.
  double sum = 0.0;
  for (double v : x) sum += v;
  const double m = sum / static_cast<double>(x.size());
  double correction = 0.0;
  for (double v : x) correction += v - m;
  return m + correction / static_cast<double>(x.size());
}

double variance(const std::vector<double>& x) {
  require_sample(x, 2, "sample variance");
  const double m = mean(x);
  double ss = 0.0, compensation = 0.0;
  for (double v : x) {
    ss += (v - m) * (v - m);
    compensation += v - m;
  }
  const double n = static_cast<double>(x.size());
  return (ss - compensation * compensation / n) / (n - 1.0);
}

double sd(const std::vector<double>& x) { return std::sqrt(variance(x)); }

}  // namespace lmkit::stats
