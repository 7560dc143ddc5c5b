#include "runtime/analysis/spectra.h"

#include <cmath>
#include <random>
#include <string>

#include "runtime/analysis/matrix_rank.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/dtype_option.h"

namespace lmkit::analysis {
namespace {

void check_vector(const torch::Tensor& sv, const char* what) {
  if (!sv.defined() || sv.dim() != 1 || sv.numel() == 0) throw UsageError(std::string(what) + ": expects a non-empty 1-D tensor of singular values");
}

void check_matrix(const torch::Tensor& m, const char* what) {
  if (!m.defined() || m.dim() != 2 || m.numel() == 0) throw UsageError(std::string(what) + ": expects a non-empty 2-D tensor");
  if (!m.is_floating_point()) throw UsageError(std::string(what) + ": expects a floating-point matrix");
}

// Checked before every SVD that computes singular vectors: given an infinity, LAPACK's gesdd (as
// OpenBLAS ships it) iterates forever instead of failing (a NaN at least fails to converge).
void check_finite(const torch::Tensor& m, const char* what) {
  if (!torch::isfinite(m).all().item<bool>()) {
    throw UsageError(std::string(what) + ": the matrix contains nan or inf (its SVD is undefined)");
  }
}

// U·diag(S with all but the top `keep` zeroed)·Vᵀ.
torch::Tensor truncated(const torch::Tensor& matrix, std::int64_t keep, const char* what) {
  check_finite(matrix, what);
  auto usv = torch::linalg_svd(matrix, /*full_matrices=*/false);
  auto s = std::get<1>(usv).clone();
  if (keep < s.size(0)) s.narrow(0, keep, s.size(0) - keep).zero_();
  return torch::matmul(std::get<0>(usv) * s.unsqueeze(0), std::get<2>(usv));
}

}  // namespace

torch::Tensor normalized_spectrum(const torch::Tensor& sv) {
  check_vector(sv, "normalized_spectrum");
  const auto top = sv.max();
  if (top.item<double>() <= 0) throw UsageError("normalized_spectrum: all singular values are zero");
  return sv / top;
}

torch::Tensor cumulative_share(const torch::Tensor& sv) {
  check_vector(sv, "cumulative_share");
  const auto total = sv.sum();
  if (total.item<double>() <= 0) throw UsageError("cumulative_share: all singular values are zero");
  return sv.cumsum(0) / total;
}

std::pair<torch::Tensor, torch::Tensor> normalized_cdf(const torch::Tensor& sv) {
  check_vector(sv, "normalized_cdf");
  const auto values = sv.to(torch::kFloat64);
  const double largest = values.max().item<double>();
  if (!(largest > 0)) throw UsageError("normalized_cdf: the largest singular value must be > 0");
  const auto sorted = std::get<0>((values / largest).sort());
  const auto n = sorted.numel();
  const auto fractions = torch::arange(1, n + 1, values.options()) / static_cast<double>(n);
  return {sorted, fractions};
}

torch::Tensor projection_2d(const torch::Tensor& matrix) {
  check_matrix(matrix, "projection_2d");
  if (matrix.size(1) < 2) throw UsageError("projection_2d: the matrix needs at least 2 columns");
  // Two directions need two singular vectors: min(rows, columns) of them exist.
  if (matrix.size(0) < 2) {
    throw UsageError("projection_2d: the matrix needs at least 2 rows (the points to project), got " +
                     integer_text(matrix.size(0)));
  }
  check_finite(matrix, "projection_2d");
  const auto centered = matrix - matrix.mean(0, true);
  const auto v = std::get<2>(torch::linalg_svd(centered, /*full_matrices=*/false));
  // A singular vector's sign is the LAPACK build's choice: orient each direction so that its entry
  // of largest magnitude is positive, and the same matrix plots the same way everywhere.
  auto directions = v.narrow(0, 0, 2);
  const auto signs = directions.gather(1, directions.abs().argmax(1, true)).sign();
  directions = directions * torch::where(signs == 0, torch::ones_like(signs), signs);
  return torch::matmul(centered, directions.t());
}

const config::BoundOptions<PairwiseKlOptions>& declared_options(config::Tag<PairwiseKlOptions>) {
  using config::Range;
  static const config::BoundOptions<PairwiseKlOptions> options(
      "pairwise_kl", {{"pairs", &PairwiseKlOptions::pairs, Range::at_least(1), "context pairs to draw"},
                      {"seed", &PairwiseKlOptions::seed, Range::non_negative(), "the draws' seed"}});
  return options;
}

const config::BoundOptions<RefactorizationOptions>& declared_options(config::Tag<RefactorizationOptions>) {
  using config::Range;
  static const config::BoundOptions<RefactorizationOptions> options(
      "refactorization_robustness",
      {{"keep", &RefactorizationOptions::keep, Range::at_least(1), "the singular values A₀ keeps"},
       {"iterations", &RefactorizationOptions::iterations, Range::at_least(1), "reconstructions after A₀"},
       float_dtype_option("eps_dtype", &RefactorizationOptions::eps_dtype, "the eps of the Press rank's tolerance")});
  return options;
}

const config::BoundOptions<NoiseOptions>& declared_options(config::Tag<NoiseOptions>) {
  using config::Range;
  static const config::BoundOptions<NoiseOptions> options(
      "noise_robustness",
      {{"keep", &NoiseOptions::keep, Range::at_least(1), "the singular values A₀ keeps"},
       {"seed", &NoiseOptions::seed, Range::non_negative(), "the noise's seed"},
       float_dtype_option("eps_dtype", &NoiseOptions::eps_dtype, "the eps of the Press rank's tolerance")});
  return options;
}

PairwiseKl pairwise_kl(const torch::Tensor& log_probs, const PairwiseKlOptions& options) {
  const std::int64_t pairs = options.pairs;
  const std::uint64_t seed = options.seed;
  check_matrix(log_probs, "pairwise_kl");
  const auto m = log_probs.size(0);
  if (m < 2) throw UsageError("pairwise_kl: needs at least two contexts");
  if (pairs < 1) throw UsageError("pairwise_kl: pairs must be ≥ 1");
  std::mt19937_64 engine(seed);
  std::uniform_int_distribution<std::int64_t> pick(0, m - 1);
  // Tensors, not std::vectors: an absurd count fails in Torch's allocator with an error that says
  // how much was asked (a std::vector's operator new aborts under ASan, and says little otherwise).
  // host: drawn here through data_ptr, then moved to the matrix's device below
  auto first = torch::empty({pairs}, torch::kInt64);
  auto second = torch::empty({pairs}, torch::kInt64);  // host: as first
  auto* first_ids = first.data_ptr<std::int64_t>();
  auto* second_ids = second.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < pairs; ++i) {
    first_ids[i] = pick(engine);
    do second_ids[i] = pick(engine); while (second_ids[i] == first_ids[i]);
  }
  torch::NoGradGuard no_grad;
  const auto q = log_probs.to(torch::kFloat64);
  // KL(p‖q) is defined for distributions: each row must be log-probabilities (logsumexp 0).
  const auto mass = torch::logsumexp(q, 1).abs().max(0);
  const double off = std::get<0>(mass).item<double>();
  if (!(off <= 1e-3)) {
    const auto row = std::get<1>(mass).item<std::int64_t>() + 1;
    throw UsageError("pairwise_kl: row " + integer_text(row) + " is not a log-probability distribution (its " +
                     "logsumexp is " + describe_number(torch::logsumexp(q[row - 1], 0).item<double>()) +
                     ", not 0); pass log P, e.g. log_softmax of the logits or lmkit.analysis.logp_matrix");
  }
  first = first.to(q.device());
  second = second.to(q.device());
  constexpr std::int64_t kChunk = 4096;  // bounds memory at 2·chunk·vocab doubles
  std::vector<torch::Tensor> kls;
  for (std::int64_t start = 0; start < pairs;) {
    const auto n = std::min(kChunk, pairs - start);
    auto a = q.index_select(0, first.narrow(0, start, n));
    auto b = q.index_select(0, second.narrow(0, start, n));
    kls.push_back((a.exp() * (a - b)).sum(1));
    start += n;  // never past pairs: start + kChunk would overflow near 2^63
  }
  const auto kl = torch::cat(kls);
  PairwiseKl result;
  result.pairs = pairs;
  result.mean = kl.mean().item<double>();
  result.standard_error = pairs > 1 ? kl.std().item<double>() / std::sqrt(static_cast<double>(pairs)) : 0.0;
  return result;
}

std::vector<RefactorStep> refactorization_robustness(const torch::Tensor& matrix, const RefactorizationOptions& options) {
  const auto [keep, iterations, eps_dtype] = options;
  check_matrix(matrix, "refactorization_robustness");
  if (keep < 1 || iterations < 1) throw UsageError("refactorization_robustness: keep and iterations must be ≥ 1");
  torch::NoGradGuard no_grad;
  const auto m = matrix.size(0), n = matrix.size(1);
  const auto original = truncated(matrix, keep, "refactorization_robustness");
  auto current = original;
  std::vector<RefactorStep> steps;
  for (std::int64_t i = 1; i <= iterations; ++i) {
    check_finite(current, "refactorization_robustness (a reconstruction overflowed)");
    auto usv = torch::linalg_svd(current, /*full_matrices=*/false);
    current = torch::matmul(std::get<0>(usv) * std::get<1>(usv).unsqueeze(0), std::get<2>(usv));
    RefactorStep step;
    step.iteration = i;
    step.press_rank = press_rank(svdvals(current), m, n, eps_dtype);
    step.error = (current - original).pow(2).sum().item<double>() / static_cast<double>(m * n);
    steps.push_back(step);
  }
  return steps;
}

std::vector<NoiseStep> noise_robustness(const torch::Tensor& matrix, const std::vector<double>& ladder,
                                        const NoiseOptions& options) {
  const auto [keep, seed, eps_dtype] = options;
  check_matrix(matrix, "noise_robustness");
  if (keep < 1) throw UsageError("noise_robustness: keep must be ≥ 1");
  if (ladder.empty()) throw UsageError("noise_robustness: the ladder of c values is empty");
  torch::NoGradGuard no_grad;
  const auto m = matrix.size(0), n = matrix.size(1);
  const auto base = truncated(matrix, keep, "noise_robustness");
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<NoiseStep> steps;
  for (double c : ladder) {
    if (!(c >= 0)) throw UsageError("noise_robustness: every c must be ≥ 0");
    NoiseStep step;
    step.c = c;
    step.noise_sd = std::sqrt(c) / static_cast<double>(n);  // variance c/n²
    // host: drawn by the seeded CPU generator (the same noise on every device), then moved to base's device
    auto noise = torch::randn({m, n}, generator, torch::TensorOptions().dtype(torch::kFloat64)) * step.noise_sd;
    const auto sv = svdvals(base + noise.to(base.device(), base.scalar_type()));
    step.press_rank = press_rank(sv, m, n, eps_dtype);
    step.effective = effective_ranks(sv);
    steps.push_back(step);
  }
  return steps;
}

}  // namespace lmkit::analysis
