// Two-sample rank tests, two-sided, following scipy.stats:
//
// ranksums(a, b) — Wilcoxon rank-sum, normal approximation without tie or continuity correction
//   (the statistic of the thesis's tool): z = (R_a − n_a(n+1)/2) / sqrt(n_a n_b (n+1)/12),
//   R_a = sum of a's average ranks in the pooled sample, n = n_a + n_b; p = 2 P(Z > |z|).
//
// mannwhitneyu(a, b) — returns U_a = R_a − n_a(n_a+1)/2 and the p-value:
//   exact: p = 2 P(U ≥ max(U_a, U_b)) under H0 (every split of the ranks equally likely), capped at 1;
//   asymptotic: z = (max(U_a, U_b) − n_a n_b/2 − 1/2) / σ_U with the tie-corrected
//   σ_U² = n_a n_b/12 · ((n+1) − Σ(t³−t)/(n(n−1))); p = 2 P(Z > z).
//   Method "auto" is exact when there are no ties and one sample has at most 8 values.
#pragma once
#include <string>
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/stats/test_result.h"

namespace lmkit::stats {

TestResult ranksums(const std::vector<double>& a, const std::vector<double>& b);

struct MannWhitneyOptions {
  std::string method = "auto";  // "auto", "exact" or "asymptotic"
};
const config::BoundOptions<MannWhitneyOptions>& declared_options(config::Tag<MannWhitneyOptions>);

TestResult mannwhitneyu(const std::vector<double>& a, const std::vector<double>& b,
                        const MannWhitneyOptions& options = {});

// P(U ≥ u) for the Mann–Whitney U of samples of sizes n_a, n_b without ties (exact counting).
double mann_whitney_exact_sf(long u, int n_a, int n_b);

}  // namespace lmkit::stats
