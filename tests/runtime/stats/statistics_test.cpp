// Statistics against independent truths: published table values, closed forms, brute-force
// enumeration, and the documented outputs of scipy.stats and R on classic datasets.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "runtime/core/error.h"
#include "runtime/stats/correlation.h"
#include "runtime/stats/descriptive.h"
#include "runtime/stats/distributions.h"
#include "runtime/stats/rank_sum_tests.h"
#include "runtime/stats/ranking.h"
#include "runtime/stats/t_tests.h"

namespace lmkit::stats {
namespace {

// Student's sleep data (Cushny & Peebles), as in R's `sleep`: extra hours of sleep per drug.
const std::vector<double> kSleep1 = {0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0};
const std::vector<double> kSleep2 = {1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4};

double relative_error(double got, double want) { return std::fabs(got - want) / std::fabs(want); }

TEST(DistributionsTest, NormalQuantileTableValues) {
  EXPECT_LT(relative_error(normal_sf(1.959963984540054), 0.025), 1e-12);
  EXPECT_LT(relative_error(normal_sf(2.5758293035489), 0.005), 1e-11);
  EXPECT_LT(relative_error(normal_sf(-1.6448536269514722), 0.95), 1e-12);
  EXPECT_LT(relative_error(normal_sf(8.0), 6.220960574271785e-16), 1e-9);  // deep tail, no cancellation
}

TEST(DistributionsTest, StudentTCriticalValuesFromTables) {
  // t_{0.975, df} (two-sided 5%) and t_{0.95, 5}, as printed in statistics tables.
  EXPECT_NEAR(student_t_sf(12.706205, 1), 0.025, 1e-7);
  EXPECT_NEAR(student_t_sf(4.302653, 2), 0.025, 1e-7);
  EXPECT_NEAR(student_t_sf(2.015048, 5), 0.05, 1e-7);
  EXPECT_NEAR(student_t_sf(2.228139, 10), 0.025, 1e-7);
  EXPECT_NEAR(student_t_sf(2.042272, 30), 0.025, 1e-7);
}

TEST(DistributionsTest, StudentTClosedFormsForOneAndTwoDegreesOfFreedom) {
  const double pi = std::acos(-1.0);
  for (double t : {-3.0, -0.4, 0.0, 0.7, 2.5, 40.0}) {
    EXPECT_NEAR(student_t_sf(t, 1), 0.5 - std::atan(t) / pi, 1e-14) << t;  // Cauchy
    EXPECT_NEAR(student_t_sf(t, 2), 0.5 - t / (2.0 * std::sqrt(2.0 + t * t)), 1e-14) << t;
  }
  EXPECT_THROW(student_t_sf(1.0, 0.0), UsageError);
}

TEST(DescriptiveTest, MeanAndSampleSd) {
  EXPECT_DOUBLE_EQ(mean({2, 4, 4, 4, 5, 5, 7, 9}), 5.0);
  EXPECT_DOUBLE_EQ(sd({2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7.0));
  // Large offsets do not destroy the variance (a naive Σx² − n x̄² would).
  EXPECT_NEAR(variance({1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16}), 30.0, 1e-6);
  EXPECT_THROW(sd({1.0}), UsageError);
  EXPECT_THROW(mean({1.0, NAN}), UsageError);
}

TEST(RankingTest, TiesShareTheirAverageRank) {
  EXPECT_EQ(average_ranks({10, 20, 20, 30}), (std::vector<double>{1, 2.5, 2.5, 4}));
  EXPECT_EQ(average_ranks({3, 1, 3, 3}), (std::vector<double>{3, 1, 3, 3}));
  EXPECT_DOUBLE_EQ(tie_correction_term({1, 2, 2, 3, 3, 3}), (8 - 2) + (27 - 3));
}

TEST(CorrelationTest, PearsonMatchesScipyDocumentation) {
  const auto r = pearsonr({1, 2, 3, 4, 5}, {10, 9, 2.5, 6, 4});
  EXPECT_LT(relative_error(r.statistic, -0.7426106572325057), 1e-12);
  EXPECT_LT(relative_error(r.pvalue, 0.1505558088534455), 1e-9);
}

TEST(CorrelationTest, PearsonPValueIsTheTTestOfR) {
  // n = 3 → df = 1: p = 2·(1/2 − atan(|t|)/π) with t = r·sqrt(1/(1−r²)).
  const auto r = pearsonr({1, 2, 3}, {1, 3, 2});
  EXPECT_DOUBLE_EQ(r.statistic, 0.5);
  const double t = 0.5 * std::sqrt(1.0 / 0.75);
  EXPECT_NEAR(r.pvalue, 2.0 * (0.5 - std::atan(t) / std::acos(-1.0)), 1e-14);
  EXPECT_THROW(pearsonr({1, 1, 1}, {1, 2, 3}), UsageError);
  EXPECT_THROW(pearsonr({1, 2}, {1, 2, 3}), UsageError);
}

TEST(CorrelationTest, SpearmanWithTiesMatchesScipyDocumentation) {
  const auto rho = spearmanr({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7});
  EXPECT_LT(relative_error(rho.statistic, 0.8207826816681233), 1e-12);
  EXPECT_LT(relative_error(rho.pvalue, 0.08858700531354381), 1e-9);
}

TEST(TTestTest, SleepDataAsRReportsIt) {
  // R: t.test(extra ~ group, data = sleep)  → t = -1.8608, df = 17.776, p-value = 0.07939
  const auto welch = ttest_ind(kSleep1, kSleep2, {/*equal_var=*/false});
  EXPECT_NEAR(welch.statistic, -1.8608, 5e-5);
  EXPECT_NEAR(welch.df, 17.776, 5e-4);
  EXPECT_NEAR(welch.pvalue, 0.07939, 5e-6);
  // R: t.test(extra ~ group, data = sleep, var.equal = TRUE) → df = 18, p-value = 0.07919
  const auto student = ttest_ind(kSleep1, kSleep2, {/*equal_var=*/true});
  EXPECT_NEAR(student.statistic, -1.8608, 5e-5);
  EXPECT_DOUBLE_EQ(student.df, 18.0);
  EXPECT_NEAR(student.pvalue, 0.07919, 5e-6);
}

TEST(TTestTest, StatisticFromFirstPrinciples) {
  // Means 2 and 5, both variances 1, n = 3 each: t = −3/sqrt(2/3), df = 4.
  const auto r = ttest_ind({1, 2, 3}, {4, 5, 6});
  EXPECT_NEAR(r.statistic, -3.0 / std::sqrt(2.0 / 3.0), 1e-14);
  EXPECT_NEAR(r.pvalue, 2.0 * student_t_sf(3.0 / std::sqrt(2.0 / 3.0), 4.0), 1e-15);
  EXPECT_THROW(ttest_ind({1, 1}, {2, 2}), UsageError);
}

TEST(MannWhitneyTest, ExactMatchesScipyDocumentation) {
  const auto r = mannwhitneyu({19, 22, 16, 29, 24}, {20, 11, 17, 12});
  EXPECT_DOUBLE_EQ(r.statistic, 17.0);
  EXPECT_NEAR(r.pvalue, 1.0 / 9.0, 1e-15);
}

TEST(MannWhitneyTest, ExactDistributionEqualsBruteForceEnumeration) {
  // Enumerate every way to give 4 of 9 ranks to sample a; count U = #pairs (a > b).
  const int na = 4, nb = 5, n = na + nb;
  std::vector<int> count(na * nb + 1, 0);
  int total = 0;
  for (int mask = 0; mask < (1 << n); ++mask) {
    if (__builtin_popcount(mask) != na) continue;
    int u = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if ((mask >> i & 1) && !(mask >> j & 1) && i > j) ++u;
    ++count[u];
    ++total;
  }
  for (int u = 0; u <= na * nb; ++u) {
    double tail = 0.0;
    for (int k = u; k <= na * nb; ++k) tail += count[k];
    EXPECT_NEAR(mann_whitney_exact_sf(u, na, nb), tail / total, 1e-15) << "u = " << u;
  }
}

TEST(MannWhitneyTest, AsymptoticWithTiesMatchesR) {
  // R: wilcox.test(extra ~ group, data = sleep) → W = 25.5, p-value = 0.06933 (ties: normal
  // approximation with continuity and tie corrections, as scipy's asymptotic method).
  const auto r = mannwhitneyu(kSleep1, kSleep2);
  EXPECT_DOUBLE_EQ(r.statistic, 25.5);
  EXPECT_NEAR(r.pvalue, 0.06933, 5e-6);
  EXPECT_THROW(mannwhitneyu(kSleep1, kSleep2, {"exact"}), UsageError);
}

TEST(RankSumsTest, NormalStatisticWithoutCorrections) {
  // a holds ranks 1..3 of 6: R_a = 6, E = 3·7/2 = 10.5, σ = sqrt(3·3·7/12).
  const auto r = ranksums({1, 2, 3}, {4, 5, 6});
  const double z = (6.0 - 10.5) / std::sqrt(9.0 * 7.0 / 12.0);
  EXPECT_NEAR(r.statistic, z, 1e-14);
  EXPECT_NEAR(r.pvalue, 2.0 * normal_sf(std::fabs(z)), 1e-15);
  EXPECT_NEAR(ranksums({4, 5, 6}, {1, 2, 3}).statistic, -z, 1e-14);
}

}  // namespace
}  // namespace lmkit::stats
