// Adversarial Softmax (Wang et al. 2019; thesis §3.2.3 and appendix .1). During training the
// target word's output embedding is moved against the context, e_t + δ with the closed-form
// inner solution δ* = −ε·h/‖h‖ (eq. 3.23), so the target logit becomes l_t − ε·‖h‖ while every
// other logit is unchanged:
//   nll = logsumexp(l') − l'_t,   l' = l with l'_t = l_t + h·δ*
// δ* is treated as a constant when differentiating (Danskin: the gradient of max_θ min_δ is the
// gradient at the minimizer). Evaluation and log_probs() are plain Softmax. The "embedding
// noise" of the ablation (Gaussian noise on the LSTM inputs) is the model option emb_noise.
// h [..., d] → [M, N].
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

struct AdvSoftHeadOptions {
  TORCH_ARG(double, eps) = 0.01;
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
