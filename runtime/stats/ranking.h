// Ranks with ties averaged (scipy.stats.rankdata's default "average" method): the values
// {10, 20, 20, 30} get ranks {1, 2.5, 2.5, 4}.
#pragma once
#include <vector>

namespace lmkit::stats {

std::vector<double> average_ranks(const std::vector<double>& values);

// Σ (t³ − t) over the groups of tied values, t = group size: the tie term of rank-test variances.
double tie_correction_term(const std::vector<double>& values);

}  // namespace lmkit::stats
