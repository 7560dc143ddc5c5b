// Mixture of SigSoftmaxes MoSS(K) (Kanai et al. 2018, §5): MoS with SigSoftmax components,
//   log P = logsumexp_k(log π_k + log_softmax(2z_k − softplus(z_k))),  z_k = h_k·Eᵀ + b
// everything else (latents, priors, dropoutl, parameter count) as MoS (mos_head.h).
#pragma once
#include "runtime/heads/mos_head.h"

namespace lmkit {

class MossHeadImpl : public MosHeadImpl {
 public:
  explicit MossHeadImpl(MosHeadOptions options);
  std::string kind() const override { return "moss"; }
};

TORCH_MODULE(MossHead);

}  // namespace lmkit
