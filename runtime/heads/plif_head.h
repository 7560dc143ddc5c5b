// LMS-PLIF (Ganea et al. 2019; thesis §3.1.4, §5.6): log P = log_softmax(f(l)) with f the
// piecewise linear increasing function of ops/plif.h on K equal intervals of [−T, T].
// Parameters: v [K], slopes s = softplus(v) > 0, initialized v ~ N(log(e − 1), σ²): the slopes
// scatter around 1 ("random positive values", §5.7.1). σ = 1, as the authors' code, so that frozen
// slopes (LMS-PLIF†) perturb the logits visibly; with σ → 0, f is the identity and LMS-PLIF† is
// Softmax. The slopes train with their own learning rate `lr` (0.02, thesis §4.3.2.1):
// own_lr_parameters() returns {v} and own_lr() the rate, which the trainer uses unless its
// own_lr option says otherwise. freeze = true keeps v at its initial value (LMS-PLIF†, Table
// 5.16): v stays a parameter (counted, saved) but requires no gradient.
// f-logits: ops::plif starts its curve at f(−T) = −T·s₀ (so f(0) = 0 only when every slope left of 0
// is 1; with σ = 1 the slopes scatter and f(0) lands ±14 logits away); authors_offset = true shifts them by T·s₀
// to the authors' f(−T) = 0 (b₀ = T·s₀), so that a Press rank of f-logits compares with theirs.
// The shift is the same for every word, so log-probabilities do not change.
// h [..., d] → [M, N].
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

struct PlifHeadOptions {
  TORCH_ARG(int64_t, K) = 100000;
  TORCH_ARG(double, T) = 20.0;
  TORCH_ARG(double, sigma) = 1.0;
  TORCH_ARG(bool, freeze) = false;
  TORCH_ARG(double, lr) = 0.02;
  TORCH_ARG(bool, authors_offset) = false;
};
// The options a config and lmkit.heads.<kind>{...} set (bound_options.h).
const config::BoundOptions<PlifHeadOptions>& declared_options(config::Tag<PlifHeadOptions>);

class PlifHeadImpl : public HeadImpl {
 public:
  explicit PlifHeadImpl(PlifHeadOptions options = {});
  std::string kind() const override { return "plif"; }
  nlohmann::json config() const override;
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor f_logits(const torch::Tensor& h, const Decoder& decoder) override;
  // ops::plif_nll: the loss in Softmax's memory (one full-size tensor in forward and in backward).
  torch::Tensor nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) override;
  std::vector<torch::Tensor> own_lr_parameters() override;
  std::optional<double> own_lr() const override { return options.lr(); }
  torch::Tensor slopes() const { return torch::softplus(v); }
  PlifHeadOptions options;
  torch::Tensor v;  // [K]
};

TORCH_MODULE(PlifHead);

}  // namespace lmkit
