// Numerical ranks of a log-probability matrix Q (m contexts × n words) from its singular values.
//
// Press rank (Numerical Recipes; the thesis's "rank"): the number of singular values above
//   tol = 0.5 · sqrt(m + n + 1) · σ_max · eps(dtype),
// with eps of the precision the SVD was computed in — float32 by default, as the reference computed
// it (so a Softmax model with a decoder bias shows rank d + 2, e.g. 402 on PTB).
//
// ε-effective rank: the smallest k whose leading singular values hold a share 1 − ε of the
// energy, Σ_{i≤k} σ_i² ≥ (1 − ε) Σ_i σ_i² (reported for ε = 1e-3, 1e-4, 1e-5).
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/config/declared_result.h"
#include "runtime/core/torch.h"

namespace lmkit::analysis {

// Singular values of a matrix, descending, never through the Gram matrix QᵀQ (squaring would lose
// every σ below sqrt(eps)·σ_max — exactly the ones Press rank counts). In the matrix's own precision
// unless `float64`. CPU: LAPACK gesdd (via Torch); CUDA: cuSOLVER (via Torch).
struct SvdOptions {
  bool float64 = false;
};
const config::BoundOptions<SvdOptions>& declared_options(config::Tag<SvdOptions>);
torch::Tensor svdvals(const torch::Tensor& matrix, const SvdOptions& options = {});

double press_tolerance(double sigma_max, std::int64_t rows, std::int64_t cols, torch::ScalarType eps_dtype);

// `singular_values` descending (any dtype); rows/cols of the matrix they came from; the eps of
// `eps_dtype` (default float32, as the reference computed it).
std::int64_t press_rank(const torch::Tensor& singular_values, std::int64_t rows, std::int64_t cols,
                        std::optional<torch::ScalarType> eps_dtype = std::nullopt);

std::int64_t effective_rank(const torch::Tensor& singular_values, double epsilon);

// Whether a float64 matrix's spectrum carries float32's rounding noise: singular values counted by
// float64's Press tolerance but not by float32's that form a floor — the largest within 1e5 of
// float32's tolerance, all within 4 decades of each other. A matrix computed in float32 (or from
// float32 logits) and stored as float64 has such a floor, 1e-2 to 1e-5 of float32's tolerance and
// 1e4 to 1e7 times float64's: its float64 Press rank counts rounding noise (min(m, n) where the
// float32 rank is d + 2). A matrix computed in float64 has its noise near float64's tolerance; a
// spectrum decaying smoothly past float32's tolerance spreads over many more decades.
bool has_float32_noise_floor(const torch::Tensor& singular_values, std::int64_t rows, std::int64_t cols);

struct EffectiveRank {
  double eps = 0;
  std::int64_t rank = 0;
};
inline auto declared_result(config::Tag<EffectiveRank>) {
  return config::result_table(config::result_field("eps", &EffectiveRank::eps, "ε"),
                              config::result_field("rank", &EffectiveRank::rank, "the ε-effective rank"));
}
// ε = 1e-3, 1e-4, 1e-5: the thesis's table columns.
std::vector<EffectiveRank> effective_ranks(const torch::Tensor& singular_values);

struct RankReport {
  std::int64_t rows = 0, cols = 0;
  torch::ScalarType eps_dtype = torch::kFloat32;
  double sigma_max = 0.0;
  double tolerance = 0.0;
  std::int64_t press = 0;
  std::vector<EffectiveRank> effective;  // for ε = 1e-3, 1e-4, 1e-5
};
inline auto declared_result(config::Tag<RankReport>) {
  using config::result_field;
  return config::result_table(result_field("press", &RankReport::press, "the Press rank"),
                              result_field("tolerance", &RankReport::tolerance, "its tolerance"),
                              result_field("sigma_max", &RankReport::sigma_max, "σ_max"),
                              result_field("rows", &RankReport::rows, "the matrix's rows"),
                              result_field("cols", &RankReport::cols, "its columns"),
                              result_field("effective", &RankReport::effective, "the ε-effective ranks, ε = 1e-3, 1e-4, 1e-5"));
}

// Press rank and ε-effective ranks of `matrix` (singular values in its own precision).
RankReport rank_report(const torch::Tensor& matrix, std::optional<torch::ScalarType> eps_dtype = std::nullopt);

}  // namespace lmkit::analysis
