// Correlation coefficients with two-sided p-values, as scipy.stats.pearsonr / spearmanr:
//   r = Σ(x−x̄)(y−ȳ) / sqrt(Σ(x−x̄)² Σ(y−ȳ)²),   t = r·sqrt((n−2)/(1−r²)) ~ Student t(n−2) under H0.
// Spearman's ρ is Pearson's r of the average ranks (ties share their mean rank).
// Used for rank↔perplexity (thesis Fig. 4.6/4.7) and word similarity (Tables 5.3/5.4).
#pragma once
#include <vector>

#include "runtime/stats/test_result.h"

namespace lmkit::stats {

TestResult pearsonr(const std::vector<double>& x, const std::vector<double>& y);
TestResult spearmanr(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace lmkit::stats
