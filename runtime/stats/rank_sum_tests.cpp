#include "runtime/stats/rank_sum_tests.h"

#include <algorithm>
#include <cmath>

#include "runtime/core/error.h"
#include "runtime/stats/descriptive.h"
#include "runtime/stats/distributions.h"
#include "runtime/stats/ranking.h"

namespace lmkit::stats {
namespace {

struct PooledRanks {
  double rank_sum_a;
  double tie_term;
  bool has_ties;
};

PooledRanks pool(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  require_sample(a, 1, what);
  require_sample(b, 1, what);
  std::vector<double> all(a);
  all.insert(all.end(), b.begin(), b.end());
  const auto ranks = average_ranks(all);
  double r = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) r += ranks[i];
  const double ties = tie_correction_term(all);
  return {r, ties, ties > 0.0};
}

}  // namespace

TestResult ranksums(const std::vector<double>& a, const std::vector<double>& b) {
  const auto pooled = pool(a, b, "ranksums");
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double expected = na * (na + nb + 1.0) / 2.0;
  const double z = (pooled.rank_sum_a - expected) / std::sqrt(na * nb * (na + nb + 1.0) / 12.0);
  return {z, std::fmin(1.0, 2.0 * normal_sf(std::fabs(z)))};
}

const config::BoundOptions<MannWhitneyOptions>& declared_options(config::Tag<MannWhitneyOptions>) {
  static const config::BoundOptions<MannWhitneyOptions> options(
      "mannwhitneyu", {{"method", &MannWhitneyOptions::method, config::OneOf{{"auto", "exact", "asymptotic"}},
                        "exact: the exact distribution (no ties); asymptotic: the normal approximation; auto: "
                        "exact when there are no ties and a sample has at most 8 values"}});
  return options;
}

double mann_whitney_exact_sf(long u, int n_a, int n_b) {
  // counts[k] = number of rank splits with U = k, built one observation at a time:
  // f(m, n, k) = f(m−1, n, k−n) + f(m, n−1, k) (the largest value belongs to a or to b).
  const int max_u = n_a * n_b;
  if (u <= 0) return 1.0;
  if (u > max_u) return 0.0;
  // table[m][k] for the current n, updated as n grows.
  std::vector<std::vector<double>> table(n_a + 1, std::vector<double>(max_u + 1, 0.0));
  for (int m = 0; m <= n_a; ++m) table[m][0] = 1.0;  // n = 0: only U = 0
  for (int n = 1; n <= n_b; ++n) {
    for (int m = 1; m <= n_a; ++m) {
      // table[m] currently holds f(m, n−1, ·); table[m−1] already holds f(m−1, n, ·).
      for (int k = m * n; k >= 0; --k) {
        const double with_a_largest = k - n >= 0 ? table[m - 1][k - n] : 0.0;
        table[m][k] = table[m][k] + with_a_largest;
      }
    }
  }
  const auto& counts = table[n_a];
  double total = 0.0, tail = 0.0;
  for (int k = 0; k <= max_u; ++k) {
    total += counts[k];
    if (k >= u) tail += counts[k];
  }
  return tail / total;
}

TestResult mannwhitneyu(const std::vector<double>& a, const std::vector<double>& b, const MannWhitneyOptions& options) {
  const auto checked = declared_options(config::Tag<MannWhitneyOptions>{}).schema().check("method", options.method);
  std::string method = checked.get<std::string>();
  const auto pooled = pool(a, b, "mannwhitneyu");
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  const double u_a = pooled.rank_sum_a - na * (na + 1.0) / 2.0;
  const double u_b = na * nb - u_a;
  const double u = std::max(u_a, u_b);
  if (method == "auto") method = (!pooled.has_ties && (a.size() <= 8 || b.size() <= 8)) ? "exact" : "asymptotic";
  if (method == "exact") {
    if (pooled.has_ties) {
      throw UsageError("mannwhitneyu: the exact distribution assumes no ties; the samples have ties "
                       "(use method \"asymptotic\")");
    }
    const double p = 2.0 * mann_whitney_exact_sf(std::lround(u), static_cast<int>(a.size()), static_cast<int>(b.size()));
    return {u_a, std::fmin(1.0, p)};
  }
  const double n = na + nb;
  const double variance = na * nb / 12.0 * ((n + 1.0) - pooled.tie_term / (n * (n - 1.0)));
  if (variance <= 0.0) return {u_a, 1.0};  // every value tied
  const double z = (u - na * nb / 2.0 - 0.5) / std::sqrt(variance);
  return {u_a, std::fmin(1.0, 2.0 * normal_sf(z))};
}

}  // namespace lmkit::stats
