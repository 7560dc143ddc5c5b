// Mean and sample standard deviation (n − 1), as papers report "mean ± sd" over seeds.
#pragma once
#include <vector>

namespace lmkit::stats {

double mean(const std::vector<double>& x);
// Sample standard deviation with Bessel's correction; needs at least two values.
double sd(const std::vector<double>& x);
double variance(const std::vector<double>& x);  // n − 1 in the denominator

// Throws UsageError naming `what` when x has fewer than `minimum` values or a non-finite one.
void require_sample(const std::vector<double>& x, std::size_t minimum, const char* what);

}  // namespace lmkit::stats
