// Adversarial Softmax (Wang et al. 2019; thesis §3.2.3 and appendix .1). During training the
// target word's output embedding is moved against the context, e_t + δ with the closed-form
// inner solution δ* = −ε_t·h/‖h‖ (eq. 3.23), so the target logit becomes l_t − ε_t·‖h‖ while
// every other logit is unchanged:
//   nll = logsumexp(l') − l'_t,   l' = l with l'_t = l_t + h·δ* = l_t − ε_t·‖h‖
// Two readings of ε_t (SPEC §1):
//   thesis eq. 3.23 (default):      ε_t = eps, everywhere;
//   the code behind Tables A.1–A.3: ε_t = eps·‖e_t‖ (relative, eps = 0.005), and only where
//                                   cos(h, e_t) > 0 (aligned_only).
// The gradient is that of the inner minimum's value l_t − ε_t·‖h‖ (Danskin: δ's direction is held at
// the minimizer; a radius that depends on ‖e_t‖ is differentiated). Evaluation and log_probs()
// are plain Softmax. The "embedding noise" of the ablation (Gaussian noise on the LSTM inputs)
// is the model option emb_noise. h [..., d] → [M, N].
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

struct AdvSoftHeadOptions {
  TORCH_ARG(double, eps) = 0.01;
  // ε_t = eps·‖e_t‖ instead of eps.
  TORCH_ARG(bool, relative) = false;
  // Perturb only rows where cos(h, e_t) > 0.
  TORCH_ARG(bool, aligned_only) = false;
};

class AdvSoftHeadImpl : public HeadImpl {
 public:
  explicit AdvSoftHeadImpl(AdvSoftHeadOptions options = {});
  std::string kind() const override { return "advsoft"; }
  nlohmann::json config() const override;
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor f_logits(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) override;
  AdvSoftHeadOptions options;
};

TORCH_MODULE(AdvSoftHead);

}  // namespace lmkit
