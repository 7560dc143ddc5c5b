#include "runtime/heads/method_agreement.h"

#include <fmt/format.h>

#include "runtime/core/error.h"
#include "runtime/core/host_read.h"
#include "runtime/core/number_text.h"
#include "runtime/tensor/tensor_format.h"

namespace lmkit {

void check_nll_matches_log_probs(const torch::Tensor& nll, const torch::Tensor& log_probs, const torch::Tensor& targets,
                                 const std::string& what) {
  if (nll.numel() == 0) return;
  torch::NoGradGuard no_grad;
  const auto reference = -log_probs.detach().to(torch::kFloat64).gather(1, targets.reshape({-1, 1})).reshape({-1});
  const auto difference = (nll.detach().to(torch::kFloat64) - reference).abs();
  const auto worst_row = difference.argmax();
  // One read: the worst difference, its row's two values, the largest |ref| and the target id.
  const auto facts = read_to_host(torch::stack({difference.max(), nll.detach().to(torch::kFloat64)[worst_row],
                                                reference[worst_row], reference.abs().max(),
                                                targets.reshape({-1})[worst_row].to(torch::kFloat64),
                                                worst_row.to(torch::kFloat64)}));
  const double largest = facts[0], given = facts[1], expected = facts[2], scale = facts[3];
  const double tolerance = (nll.scalar_type() == torch::kFloat64 ? 1e-8 : 1e-4) * (1 + scale);
  if (largest <= tolerance) return;  // NaN fails too
  throw UsageError(fmt::format(
      "{} disagrees with the head's forward: at row {} (target {}) nll gives {:.6g} but −forward(h)[target] is "
      "{:.6g} (largest difference {:.3g} over {} rows; tolerance {:.3g}). Fix nll, or leave it out and the "
      "model gathers the targets' log-probabilities from forward.",
      what, integer_text(static_cast<std::int64_t>(facts[5]) + 1), integer_text(static_cast<std::int64_t>(facts[4])),
      given, expected, largest, integer_text(nll.numel()), tolerance));
}

namespace {

constexpr double kNormalizationTolerance = 1e-3;

std::string shape_text(torch::IntArrayRef sizes) {
  std::string text = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + integer_text(sizes[i]);
  return text + "]";
}

}  // namespace

void check_head_output(const torch::Tensor& result, const std::vector<std::int64_t>& sizes, torch::ScalarType dtype,
                       const std::string& what) {
  if (result.sizes() != torch::IntArrayRef(sizes) || result.scalar_type() != dtype) {
    throw UsageError(what + " must return a " + dtype_name(dtype) + " Tensor of size " + shape_text(sizes) + ", got " +
                     dtype_name(result.scalar_type()) + " of size " + shape_text(result.sizes()));
  }
}

void check_log_probabilities(const torch::Tensor& log_probs, const std::string& what, std::int64_t call) {
  if (log_probs.numel() == 0) return;
  torch::NoGradGuard no_grad;
  auto checked = log_probs.detach();
  torch::Tensor rows;  // the rows checked, when a sample (undefined: all)
  const auto M = checked.size(0);
  if (call > 0 && M > kSampledRows) {
    const auto stride = (M + kSampledRows - 1) / kSampledRows;
    const auto offset = call % stride;
    rows = torch::arange(offset, M, stride, torch::TensorOptions().dtype(torch::kInt64).device(checked.device()));
    checked = checked.index_select(0, rows);
  }
  const auto deviation = checked.logsumexp(1).abs();
  const auto [worst, at] = deviation.max(0);
  const auto row = rows.defined() ? rows.index_select(0, at.reshape({1})).reshape({}) : at;
  const auto values = read_to_host(torch::stack({worst.to(torch::kFloat64), row.to(torch::kFloat64)}));
  if (!(values[0] <= kNormalizationTolerance)) {  // NaN fails too
    const auto r = static_cast<std::int64_t>(values[1]);
    const auto lse = read_to_host(log_probs.detach()[r].logsumexp(0).to(torch::kFloat64).reshape({1}))[0];
    throw UsageError(what + " must return log-probabilities (each row's logsumexp = 0, within " +
                     fmt::format("{:g}", kNormalizationTolerance) + "), but row " + integer_text(r + 1) + " has logsumexp " +
                     fmt::format("{:.6g}", lse) + "; normalize with :log_softmax() (docs/lua-heads.md)");
  }
}

void check_nll_values(const torch::Tensor& nll, const std::string& what) {
  if (nll.numel() == 0) return;
  torch::NoGradGuard no_grad;
  const double lowest = read_to_host(nll.detach().min().to(torch::kFloat64).reshape({1}))[0];
  if (!(lowest >= -kNormalizationTolerance)) {
    throw UsageError(what + " must return negative log-likelihoods (≥ 0), got " + fmt::format("{:.6g}", lowest) +
                     "; are its log-probabilities normalized?");
  }
}

void check_user_head_parameter(const torch::Tensor& parameter, const std::string& what) {
  if (!parameter.requires_grad()) {
    throw UsageError(what + " does not require grad, so it would be counted but never trained: make it with "
                     "{requires_grad = true} (or call :requires_grad_()), or keep it out of parameters as a constant "
                     "of your functions");
  }
  if (!parameter.is_leaf()) {
    throw UsageError(what + " is computed from other tensors (not a leaf), so the optimizer cannot update it: list "
                     "the tensors it is made from, or make it a leaf with :detach():requires_grad_()");
  }
}

}  // namespace lmkit
