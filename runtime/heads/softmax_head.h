// Softmax: log P = log_softmax(l), l = h·Eᵀ + b (the AWD-LSTM baseline; Merity et al. 2018).
// h [..., d] with d the decoder width → [M, N]. No parameters of its own. The rank of the
// log-probability matrix is at most d + 2 (d + 1 without b): the softmax bottleneck.
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

class SoftmaxHeadImpl : public HeadImpl {
 public:
  std::string kind() const override { return "softmax"; }
  nlohmann::json config() const override { return {{"kind", kind()}}; }
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor f_logits(const torch::Tensor& h, const Decoder& decoder) override;
  // logsumexp(l) − l_t: never forms the [M, N] log-probabilities.
  torch::Tensor nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) override;
};

TORCH_MODULE(SoftmaxHead);

}  // namespace lmkit
