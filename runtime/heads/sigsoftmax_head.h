// SigSoftmax (Kanai et al. 2018): P ∝ exp(l)·σ(l), i.e. log P = log_softmax(2l − softplus(l)).
// Computed by the fused op ops::gss_log_softmax(l, 0, 2). h [..., d] → [M, N]. No parameters.
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

class SigSoftmaxHeadImpl : public HeadImpl {
 public:
  std::string kind() const override { return "sigsoftmax"; }
  nlohmann::json config() const override { return {{"kind", kind()}}; }
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor f_logits(const torch::Tensor& h, const Decoder& decoder) override;
};

TORCH_MODULE(SigSoftmaxHead);

}  // namespace lmkit
