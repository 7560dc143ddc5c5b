// Sigmoid-based head (Kanai et al. 2018, "Sigsoftmax", §3.2 and appendix B):
//   P ∝ σ(l), computed as log_sigmoid(l) − logsumexp(log_sigmoid(l)) so no probability is formed.
// h [..., d] → [M, N]. No parameters.
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

class SigmoidHeadImpl : public HeadImpl {
 public:
  std::string kind() const override { return "sigmoid"; }
  nlohmann::json config() const override { return {{"kind", kind()}}; }
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor f_logits(const torch::Tensor& h, const Decoder& decoder) override;
};

TORCH_MODULE(SigmoidHead);

}  // namespace lmkit
