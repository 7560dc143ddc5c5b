#include "runtime/analysis/matrix_rank.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit::analysis {
namespace {

double machine_epsilon(torch::ScalarType type) {
  switch (type) {
    case torch::kFloat64: return std::numeric_limits<double>::epsilon();
    case torch::kFloat32: return std::numeric_limits<float>::epsilon();
    case torch::kFloat16: return 9.765625e-4;  // 2^-10
    case torch::kBFloat16: return 7.8125e-3;   // 2^-7
    default: throw UsageError("no machine epsilon for dtype " + dtype_name(type));
  }
}

torch::Tensor check_singular_values(const torch::Tensor& sv) {
  if (sv.dim() != 1) throw UsageError("singular values must be a 1-D tensor, got size " + format_shape(sv.sizes()));
  auto values = sv.detach().to(torch::kCPU).to(torch::kFloat64);
  if (values.numel() > 0 && !torch::isfinite(values).all().item<bool>()) {
    throw UsageError("singular values contain nan or inf (was the matrix finite?)");
  }
  if (values.numel() > 0) {
    const auto smallest = values.min(0);
    const double low = std::get<0>(smallest).item<double>();
    if (low < 0) {
      throw UsageError("singular values are never negative, got " + describe_number(low) + " at position " +
                       integer_text(std::get<1>(smallest).item<std::int64_t>() + 1) +
                       " (pass σ from svdvals, not eigenvalues or a difference of spectra)");
    }
  }
  return values;
}

}  // namespace

const config::BoundOptions<SvdOptions>& declared_options(config::Tag<SvdOptions>) {
  static const config::BoundOptions<SvdOptions> options(
      "svdvals", {{"float64", &SvdOptions::float64, "compute in float64 whatever the matrix's dtype"}});
  return options;
}

torch::Tensor svdvals(const torch::Tensor& matrix, const SvdOptions& options) {
  if (matrix.dim() != 2) throw UsageError("svdvals needs a matrix, got size " + format_shape(matrix.sizes()));
  if (!torch::isFloatingType(matrix.scalar_type())) {
    throw UsageError("svdvals needs a floating-point matrix, got " + dtype_name(matrix.scalar_type()));
  }
  auto m = matrix.detach();
  if (options.float64) m = m.to(torch::kFloat64);
  if (!torch::isfinite(m).all().item<bool>()) throw UsageError("svdvals: the matrix contains nan or inf");
  return torch::linalg_svdvals(m);
}

double press_tolerance(double sigma_max, std::int64_t rows, std::int64_t cols, torch::ScalarType eps_dtype) {
  if (rows < 0 || cols < 0) {
    throw UsageError("the matrix's rows and cols must be non-negative, got " + integer_text(rows) + " and " +
                     integer_text(cols));
  }
  // Summed as doubles: rows + cols + 1 overflows int64 near 2^63.
  const double size = static_cast<double>(rows) + static_cast<double>(cols) + 1.0;
  return 0.5 * std::sqrt(size) * sigma_max * machine_epsilon(eps_dtype);
}

std::int64_t press_rank(const torch::Tensor& singular_values, std::int64_t rows, std::int64_t cols,
                        std::optional<torch::ScalarType> eps) {
  const auto eps_dtype = eps.value_or(torch::kFloat32);
  const auto sv = check_singular_values(singular_values);
  if (sv.numel() == 0) return 0;
  const double tol = press_tolerance(sv.max().item<double>(), rows, cols, eps_dtype);
  return (sv > tol).sum().item<std::int64_t>();
}

bool has_float32_noise_floor(const torch::Tensor& singular_values, std::int64_t rows, std::int64_t cols) {
  const auto sv = check_singular_values(singular_values);
  if (rows < 0 || cols < 0 || sv.numel() > std::min(rows, cols)) {
    throw UsageError("has_float32_noise_floor: " + integer_text(sv.numel()) + " singular values of a " + integer_text(rows) +
                     " × " + integer_text(cols) + " matrix: a matrix has at most min(rows, cols) of them");
  }
  const auto float32_rank = press_rank(sv, rows, cols, torch::kFloat32);
  if (press_rank(sv, rows, cols, torch::kFloat64) <= float32_rank) return false;
  // The values between the two tolerances (sv may come in any order): rounding noise is a floor,
  // high (within 1e5 of float32's tolerance) and flat (within 4 decades); a spectrum that decays
  // smoothly through float32's tolerance towards float64's is neither.
  const double sigma_max = sv.max().item<double>();
  const double tolerance = press_tolerance(sigma_max, rows, cols, torch::kFloat32);
  const auto between = sv.masked_select((sv <= tolerance) & (sv > press_tolerance(sigma_max, rows, cols, torch::kFloat64)));
  if (between.numel() == 0) return false;
  const double highest = between.max().item<double>(), lowest = between.min().item<double>();
  return highest >= 1e-5 * tolerance && highest < 1e4 * lowest;
}

std::int64_t effective_rank(const torch::Tensor& singular_values, double epsilon) {
  if (!(epsilon > 0.0 && epsilon < 1.0)) throw UsageError("ε must lie in (0, 1), got " + describe_number(epsilon));
  const auto sv = check_singular_values(singular_values);
  if (sv.numel() == 0) return 0;
  const auto energy = sv.square().sort(/*dim=*/0, /*descending=*/true);
  const auto cumulative = std::get<0>(energy).cumsum(0);
  const double total = cumulative[-1].item<double>();
  if (total == 0.0) return 0;
  const auto reached = (cumulative >= (1.0 - epsilon) * total).nonzero();
  return reached[0][0].item<std::int64_t>() + 1;
}

std::vector<EffectiveRank> effective_ranks(const torch::Tensor& singular_values) {
  std::vector<EffectiveRank> ranks;
  for (double eps : {1e-3, 1e-4, 1e-5}) ranks.push_back({eps, effective_rank(singular_values, eps)});
  return ranks;
}

RankReport rank_report(const torch::Tensor& matrix, std::optional<torch::ScalarType> eps) {
  const auto eps_dtype = eps.value_or(torch::kFloat32);
  RankReport report;
  report.rows = matrix.size(0);
  report.cols = matrix.dim() == 2 ? matrix.size(1) : 0;
  report.eps_dtype = eps_dtype;
  const auto sv = svdvals(matrix);
  report.sigma_max = sv.numel() ? sv.max().item<double>() : 0.0;
  report.tolerance = press_tolerance(report.sigma_max, report.rows, report.cols, eps_dtype);
  report.press = press_rank(sv, report.rows, report.cols, eps_dtype);
  report.effective = effective_ranks(sv);
  return report;
}

}  // namespace lmkit::analysis
