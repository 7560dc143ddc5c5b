// Generalized SigSoftmax GSS(c, k) (thesis §4.2.2, eq. 4.16–4.18; conference paper eq. 3–4):
//   log P = log_softmax(k(l − c) + c − (k − 1)·softplus(l − c))
// the smooth version of the two-piece linear map PL(x; c, k) = x for x > c, k(x − c) + c below.
// GSS(0, 2) = SigSoftmax, GSS(c, 1) = Softmax. Fused op: ops::gss_log_softmax.
// h [..., d] → [M, N]. c, k are hyperparameters, not parameters.
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

struct GssHeadOptions {
  TORCH_ARG(double, c) = 0.0;
  TORCH_ARG(double, k) = 2.0;
};
// The options a config and lmkit.heads.<kind>{...} set (bound_options.h).
const config::BoundOptions<GssHeadOptions>& declared_options(config::Tag<GssHeadOptions>);

class GssHeadImpl : public HeadImpl {
 public:
  explicit GssHeadImpl(GssHeadOptions options = {});
  std::string kind() const override { return "gss"; }
  nlohmann::json config() const override;
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor f_logits(const torch::Tensor& h, const Decoder& decoder) override;
  GssHeadOptions options;
};

TORCH_MODULE(GssHead);

// The GSS transform of the logits, k(l − c) + c − (k − 1)·softplus(l − c): the f-logits of GSS and
// of SigSoftmax (c = 0, k = 2).
torch::Tensor gss_transform(const torch::Tensor& l, double c, double k);

}  // namespace lmkit
