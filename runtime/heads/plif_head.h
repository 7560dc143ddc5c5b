// LMS-PLIF (Ganea et al. 2019; thesis §3.1.4, §5.6): log P = log_softmax(f(l)) with f the
// piecewise linear increasing function of ops/plif.h on K equal intervals of [−T, T].
// Parameters: v [K], slopes s = softplus(v) > 0, initialized v ~ N(0, σ²) + log(e − 1) so the
// slopes start near 1 (f near the identity). The slopes train with their own learning rate
// (0.02 in the thesis): own_lr_parameters() returns {v}. freeze = true keeps v at its initial value
// (LMS-PLIF†, Table 5.16): v stays a parameter (counted, saved) but requires no gradient.
// h [..., d] → [M, N].
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

struct PlifHeadOptions {
  TORCH_ARG(int64_t, K) = 100000;
  TORCH_ARG(double, T) = 20.0;
  TORCH_ARG(double, sigma) = 0.01;
  TORCH_ARG(bool, freeze) = false;
};

class PlifHeadImpl : public HeadImpl {
 public:
  explicit PlifHeadImpl(PlifHeadOptions options = {});
  std::string kind() const override { return "plif"; }
  nlohmann::json config() const override;
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor f_logits(const torch::Tensor& h, const Decoder& decoder) override;
  std::vector<torch::Tensor> own_lr_parameters() override;
  torch::Tensor slopes() const { return torch::softplus(v); }
  PlifHeadOptions options;
  torch::Tensor v;  // [K]
};

TORCH_MODULE(PlifHead);

}  // namespace lmkit
