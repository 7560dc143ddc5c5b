// Spectra and the robustness experiments of the thesis (SPEC §3; thesis §4.4, §5.5, §5.6; MoS paper
// appendix C.1).
//
//   normalized_spectrum(σ)  = σ / σ₁                                   (Fig. 5.11/5.12)
//   cumulative_share(σ)     = (Σ_{j≤i} σ_j) / Σ_j σ_j                 (share of Σσ up to index i)
//   normalized_cdf(σ)       = the empirical CDF of σ/σ₁: for each value t of σ/σ₁ (ascending),
//                             the fraction of singular values with σ_i/σ₁ ≤ t — the MoS paper's
//                             Fig. 1, "cumulative percentage of normalized singular values"
//   projection_2d(E)        = rows of E − mean, onto its top two right singular vectors (PCA)
//   pairwise_kl(Q, pairs)   = mean over sampled context pairs c ≠ c' of
//                             KL(P(·|c) ‖ P(·|c')) = Σ_w P(w|c)·(log P(w|c) − log P(w|c'))
//                             with Q's rows the log-probabilities; returns mean and standard error.
//
// Alg. 5.1 (reconstruction errors): A₀ = U·S_k·Vᵀ keeps the top-k singular values of Q (k = 10);
// then A_i = svd-reconstruction of A_{i−1} (U_i·S_i·V_iᵀ) for i = 1..iterations, reporting the Press
// rank of each A_i and its error ‖A_i − A₀‖²_F / (m·n) (mean squared).
// Alg. 5.2 (Gaussian noise): for each c of a ladder, the Press rank and ε-effective ranks of
// A₀ + Z with Z ~ N(0, c/n²) entrywise: c/n² is the variance, so the standard deviation is √c/n
// (n the number of columns). The thesis's ranks say so: from c = 1e-22 to 1e-20 the count of
// singular values below the tolerance falls tenfold (1000 → 101), as it does when the noise's
// sd grows tenfold; with sd = c/n² it would fall a hundredfold, and the 10 → ~n transition would
// span two decades of c instead of the four to five of Tables 5.12/5.13.
// Both run in Q's precision (pass float64 to follow the thesis's errors of order 1e−28); ranks use
// `eps_dtype`.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/analysis/matrix_rank.h"
#include "runtime/config/bound_options.h"
#include "runtime/config/declared_result.h"
#include "runtime/core/torch.h"

namespace lmkit::analysis {

torch::Tensor normalized_spectrum(const torch::Tensor& singular_values);
torch::Tensor cumulative_share(const torch::Tensor& singular_values);
// {values: σ/σ₁ ascending, fractions: i/n for i = 1..n} (float64); ties keep their last fraction
// when plotted as a step function.
std::pair<torch::Tensor, torch::Tensor> normalized_cdf(const torch::Tensor& singular_values);
torch::Tensor projection_2d(const torch::Tensor& matrix);

struct PairwiseKl {
  double mean = 0, standard_error = 0;
  std::int64_t pairs = 0;
};
inline auto declared_result(config::Tag<PairwiseKl>) {
  return config::result_table(config::result_field("mean", &PairwiseKl::mean, "the mean KL over the pairs (nats)"),
                              config::result_field("standard_error", &PairwiseKl::standard_error, "its standard error"),
                              config::result_field("pairs", &PairwiseKl::pairs, "the pairs drawn"));
}
struct PairwiseKlOptions {
  std::int64_t pairs = 10000;
  std::uint64_t seed = 0;
};
const config::BoundOptions<PairwiseKlOptions>& declared_options(config::Tag<PairwiseKlOptions>);
// Q: [contexts, vocab] log-probabilities (rows normalized). Pairs drawn uniformly with c ≠ c' from
// a generator seeded by `seed`.
PairwiseKl pairwise_kl(const torch::Tensor& log_probs, const PairwiseKlOptions& options = {});

struct RefactorStep {
  std::int64_t iteration = 0;
  std::int64_t press_rank = 0;
  double error = 0;
};
inline auto declared_result(config::Tag<RefactorStep>) {
  return config::result_table(
      config::result_field("iteration", &RefactorStep::iteration, "i (0: the rank-keep truncation A₀)"),
      config::result_field("press_rank", &RefactorStep::press_rank, "the Press rank of A_i"),
      config::result_field("error", &RefactorStep::error, "‖A_i − A₀‖²_F / (m·n)"));
}
struct RefactorizationOptions {
  std::int64_t keep = 10;
  std::int64_t iterations = 10;
  torch::ScalarType eps_dtype = torch::kFloat32;
};
const config::BoundOptions<RefactorizationOptions>& declared_options(config::Tag<RefactorizationOptions>);
std::vector<RefactorStep> refactorization_robustness(const torch::Tensor& matrix,
                                                     const RefactorizationOptions& options = {});

struct NoiseStep {
  double c = 0;
  double noise_sd = 0;
  std::int64_t press_rank = 0;
  std::vector<EffectiveRank> effective;  // for ε = 1e−3, 1e−4, 1e−5
};
inline auto declared_result(config::Tag<NoiseStep>) {
  return config::result_table(config::result_field("c", &NoiseStep::c, "the ladder's c"),
                              config::result_field("noise_sd", &NoiseStep::noise_sd, "the noise's sd √c/n"),
                              config::result_field("press_rank", &NoiseStep::press_rank, "the Press rank of A₀ + Z"),
                              config::result_field("effective", &NoiseStep::effective, "its ε-effective ranks"));
}
struct NoiseOptions {
  std::int64_t keep = 10;
  std::uint64_t seed = 0;
  torch::ScalarType eps_dtype = torch::kFloat32;
};
const config::BoundOptions<NoiseOptions>& declared_options(config::Tag<NoiseOptions>);
std::vector<NoiseStep> noise_robustness(const torch::Tensor& matrix, const std::vector<double>& ladder,
                                        const NoiseOptions& options = {});

}  // namespace lmkit::analysis
