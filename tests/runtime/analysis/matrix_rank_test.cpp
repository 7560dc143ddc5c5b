// Ranks of matrices whose rank is known by construction.
#include "runtime/analysis/matrix_rank.h"

#include <gtest/gtest.h>

#include "runtime/core/error.h"

namespace lmkit::analysis {
namespace {

// U·diag(s)·Vᵀ with orthonormal U, V from QR of Gaussian matrices: singular values exactly s.
torch::Tensor with_singular_values(const torch::Tensor& s, std::int64_t rows, std::int64_t cols) {
  auto u = std::get<0>(torch::linalg_qr(torch::randn({rows, s.numel()}, torch::kFloat64)));
  auto v = std::get<0>(torch::linalg_qr(torch::randn({cols, s.numel()}, torch::kFloat64)));
  return u.matmul(torch::diag(s)).matmul(v.t());
}

TEST(MatrixRankTest, PressRankCountsAboveTheFloat32Threshold) {
  torch::manual_seed(0);
  const std::int64_t m = 300, n = 200;
  const double tol_ratio = 0.5 * std::sqrt(m + n + 1.0) * std::numeric_limits<float>::epsilon();
  // 10 clear values, 5 just above the float32 threshold, 5 just below it.
  auto s = torch::cat({torch::linspace(10, 1, 10, torch::kFloat64),
                       torch::full({5}, 10 * tol_ratio * 1.5, torch::kFloat64),
                       torch::full({5}, 10 * tol_ratio * 0.5, torch::kFloat64)});
  const auto q = with_singular_values(s, m, n);
  const auto sv = svdvals(q);  // float64: the tiny values are resolved exactly
  EXPECT_EQ(press_rank(sv, m, n, torch::kFloat32), 15);
  EXPECT_EQ(press_rank(sv, m, n, torch::kFloat64), 20);  // float64 eps: all 20 count
}

TEST(MatrixRankTest, RankOfAProductWithTinyNoise) {
  torch::manual_seed(1);
  const auto q = torch::randn({500, 12}, torch::kFloat64).matmul(torch::randn({12, 400}, torch::kFloat64));
  const auto noisy = q + 1e-13 * torch::randn({500, 400}, torch::kFloat64);
  EXPECT_EQ(press_rank(svdvals(noisy), 500, 400, torch::kFloat32), 12);
  EXPECT_EQ(press_rank(svdvals(q.to(torch::kFloat32)), 500, 400, torch::kFloat32), 12);
}

// The log-probabilities of a rank-d softmax layer, computed once in float32 and once in float64, both
// stored as float64: only the first carries float32's rounding noise, and its float64 Press rank
// counts that noise (every column) where float32's counts d + 2.
TEST(MatrixRankTest, AFloat32ComputationStoredAsFloat64ShowsFloat32sNoiseFloor) {
  torch::manual_seed(3);
  const std::int64_t m = 60, n = 50, d = 8;
  const auto h = torch::randn({m, d}, torch::kFloat64), e = torch::randn({n, d}, torch::kFloat64);
  const auto b = torch::randn({n}, torch::kFloat64);
  const auto exact = torch::log_softmax(h.matmul(e.t()) + b, 1);
  const auto via_float32 =
      torch::log_softmax(h.to(torch::kFloat32).matmul(e.to(torch::kFloat32).t()) + b.to(torch::kFloat32), 1).to(torch::kFloat64);
  const auto noisy = svdvals(via_float32), clean = svdvals(exact);
  EXPECT_EQ(press_rank(noisy, m, n, torch::kFloat32), d + 2);
  EXPECT_EQ(press_rank(noisy, m, n, torch::kFloat64), n);
  EXPECT_TRUE(has_float32_noise_floor(noisy, m, n));
  EXPECT_EQ(press_rank(clean, m, n, torch::kFloat64), d + 2);
  EXPECT_FALSE(has_float32_noise_floor(clean, m, n));
  // Values between the two tolerances far under float32's rounding: signal, not float32's noise.
  const double tol_ratio = 0.5 * std::sqrt(m + n + 1.0) * std::numeric_limits<float>::epsilon();
  const auto s = torch::cat({torch::linspace(10, 1, 10, torch::kFloat64), torch::full({3}, 10 * tol_ratio * 1e-7, torch::kFloat64)});
  const auto fine = svdvals(with_singular_values(s, m, n));
  EXPECT_EQ(press_rank(fine, m, n, torch::kFloat64), 13);
  EXPECT_FALSE(has_float32_noise_floor(fine, m, n));
  // A spectrum decaying smoothly from 1 to 1e-13: values just under float32's tolerance, but no floor.
  const auto smooth = svdvals(with_singular_values(torch::logspace(0, -13, 50, 10, torch::kFloat64), m, n));
  EXPECT_GT(press_rank(smooth, m, n, torch::kFloat64), press_rank(smooth, m, n, torch::kFloat32));
  EXPECT_FALSE(has_float32_noise_floor(smooth, m, n));
  // The square case, where rounding noise's smallest values reach 1e-5 of float32's tolerance.
  const auto square_h = torch::randn({200, d}, torch::kFloat64), square_e = torch::randn({200, d}, torch::kFloat64);
  const auto square = torch::log_softmax(square_h.to(torch::kFloat32).matmul(square_e.to(torch::kFloat32).t()), 1).to(torch::kFloat64);
  EXPECT_TRUE(has_float32_noise_floor(svdvals(square), 200, 200));
  // More singular values than the matrix can have: a mistake, said.
  EXPECT_THROW(has_float32_noise_floor(noisy, 2, n), UsageError);
}

TEST(MatrixRankTest, NegativeSingularValuesAreRefused) {
  // Eigenvalues of a symmetric matrix, or a difference of two spectra, are not singular values.
  const auto values = torch::tensor({3.0, 1.0, -0.5, 0.25}, torch::kFloat64);
  try {
    press_rank(values, 10, 4, torch::kFloat32);
    ADD_FAILURE() << "negative singular values must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("never negative, got -0.5 at position 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(press_rank(torch::tensor({3.0, 0.0}, torch::kFloat64), 10, 2, torch::kFloat32), 1);
}

TEST(MatrixRankTest, EffectiveRankIsTheEnergyShare) {
  // σ² = {0.9, 0.09, 0.009, 0.001}: 1 − ε = 0.999 needs 3 values, 0.99 needs 2, 0.9 needs 1.
  const auto sv = torch::tensor({0.9, 0.09, 0.009, 0.001}, torch::kFloat64).sqrt();
  EXPECT_EQ(effective_rank(sv, 1e-3 * 0.999), 4);
  EXPECT_EQ(effective_rank(sv, 1e-3 + 1e-12), 3);
  EXPECT_EQ(effective_rank(sv, 1e-2 + 1e-12), 2);
  EXPECT_EQ(effective_rank(sv, 0.1 + 1e-12), 1);
  EXPECT_THROW(effective_rank(sv, 0.0), UsageError);
}

TEST(MatrixRankTest, ReportAndBadInput) {
  torch::manual_seed(2);
  const auto q = torch::randn({60, 5}).matmul(torch::randn({5, 40}));
  const auto report = rank_report(q);
  EXPECT_EQ(report.press, 5);
  EXPECT_EQ(report.effective.size(), 3u);
  EXPECT_LE(report.effective[0].rank, 5);
  EXPECT_THROW(svdvals(torch::ones({2, 2, 2})), UsageError);
  EXPECT_THROW(svdvals(torch::full({2, 2}, NAN)), UsageError);
  EXPECT_THROW(svdvals(torch::ones({2, 2}, torch::kInt64)), UsageError);
}

}  // namespace
}  // namespace lmkit::analysis
