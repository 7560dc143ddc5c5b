#include "runtime/stats/distributions.h"

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::stats {

double normal_sf(double z) {
  return boost::math::cdf(boost::math::complement(boost::math::normal_distribution<double>(0.0, 1.0), z));
}

double student_t_sf(double t, double df) {
  if (!(df > 0)) throw UsageError("Student's t needs positive degrees of freedom, got " + describe_number(df));
  if (std::isinf(t)) return t > 0 ? 0.0 : 1.0;
  return boost::math::cdf(boost::math::complement(boost::math::students_t_distribution<double>(df), t));
}

double student_t_two_sided(double t, double df) {
  if (std::isnan(t)) return std::nan("");
  return std::fmin(1.0, 2.0 * student_t_sf(std::fabs(t), df));
}

}  // namespace lmkit::stats
