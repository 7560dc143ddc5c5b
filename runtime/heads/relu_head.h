// ReLU-based head (Kanai et al. 2018, "Sigsoftmax", §4 and appendix B.1, the stabilized form):
//   P ∝ relu(l) + ε, computed in log space as u − logsumexp(u), u = log(relu(l) + ε)
// ε = 1e−8 by default. h [..., d] → [M, N]. No parameters.
// The paper's eq. 34, (relu(l)+ε)/(Σ relu(l) + ε), is not normalized (ε enters the denominator
// once but the numerators N times); normalizing by Σ(relu(l)+ε) is a deliberate choice
// (docs/models.md), so that perplexities and ranks compare with the other heads'.
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

struct ReluHeadOptions {
  TORCH_ARG(double, eps) = 1e-8;
};
// The options a config and lmkit.heads.<kind>{...} set (bound_options.h).
const config::BoundOptions<ReluHeadOptions>& declared_options(config::Tag<ReluHeadOptions>);

class ReluHeadImpl : public HeadImpl {
 public:
  explicit ReluHeadImpl(ReluHeadOptions options = {});
  std::string kind() const override { return "relu"; }
  nlohmann::json config() const override;
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor f_logits(const torch::Tensor& h, const Decoder& decoder) override;
  ReluHeadOptions options;
};

TORCH_MODULE(ReluHead);

}  // namespace lmkit
