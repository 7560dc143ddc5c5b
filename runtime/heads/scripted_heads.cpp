#include "runtime/heads/scripted_heads.h"

#include "runtime/core/number_text.h"
#include "runtime/core/random_state.h"
#include "runtime/heads/method_agreement.h"

namespace lmkit {

torch::Tensor PointwiseHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  const auto l = decoder.logits(rows_of(h));
  const auto z = f_(l);
  check_head_output(z, l.sizes().vec(), l.scalar_type(), "the pointwise head's function (logits → f(logits))");
  return torch::log_softmax(z, 1);
}

CustomHeadImpl::CustomHeadImpl(CustomHeadFunctions functions)
    : functions_(std::move(functions)), check_nll_(functions_.check) {
  for (std::size_t i = 0; i < functions_.parameters.size(); ++i) {
    const auto number = integer_text(i + 1);
    check_user_head_parameter(functions_.parameters[i], "custom head '" + functions_.name + "': parameters[" + number + "]");
    register_parameter("p" + number, functions_.parameters[i], true);
  }
}

torch::Tensor CustomHeadImpl::log_probs(const torch::Tensor& h, const Decoder& decoder) {
  const std::string what = "custom head '" + functions_.name + "': forward(h, weight, bias)";
  auto log_probs = functions_.forward(rows_of(h), decoder.weight, decoder.bias);
  check_head_output(log_probs, {rows_of(h).size(0), decoder.weight.size(0)}, h.scalar_type(), what);
  check_log_probabilities(log_probs, what, calls_++);
  return log_probs;
}

torch::Tensor CustomHeadImpl::nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) {
  if (!functions_.nll) return HeadImpl::nll(h, targets, decoder);
  const std::string what = "custom head '" + functions_.name + "': nll(h, targets, weight, bias)";
  auto nll = functions_.nll(rows_of(h), targets.reshape({-1}), decoder.weight, decoder.bias);
  check_head_output(nll, {targets.numel()}, h.scalar_type(), what);
  if (nll.numel() == 0) return nll;
  check_nll_values(nll, what);
  if (check_nll_) {
    // The first batch's nll against forward's: once per head, with the random generators as they
    // were (the extra forward must not shift the run's draws).
    torch::Tensor log_probs;
    {
      PreservedRandomState keep(h.device());
      torch::NoGradGuard no_grad;
      log_probs = this->log_probs(h, decoder);
    }
    check_nll_matches_log_probs(nll, log_probs, targets, what);
    check_nll_ = false;
  }
  return nll;
}

}  // namespace lmkit
