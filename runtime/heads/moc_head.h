// Mixture of Contexts MoC(K) (Yang et al. 2018, §2.5; Tables 5 and 6): the mixture moved inside
// the softmax, which keeps the bottleneck:
//   log P = log_softmax((Σ_k π_k h_k)·Eᵀ + b)
// with h_k, π, dropoutl and parameters exactly as MoS (mos_head.h). When one prior dominates
// (π_j → 1) MoC and MoS agree. h [..., nhidlast] → [M, N].
#pragma once
#include "runtime/heads/mos_head.h"

namespace lmkit {

class MocHeadImpl : public MosHeadImpl {
 public:
  explicit MocHeadImpl(MosHeadOptions options);
  std::string kind() const override { return "moc"; }
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) override;
};

TORCH_MODULE(MocHead);

}  // namespace lmkit
