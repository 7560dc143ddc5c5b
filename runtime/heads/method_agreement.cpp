#include "runtime/heads/method_agreement.h"

#include <fmt/format.h>

#include "runtime/core/error.h"
#include "runtime/core/host_read.h"
#include "runtime/core/number_text.h"

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

}  // namespace lmkit
