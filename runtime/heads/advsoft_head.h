// Adversarial Softmax (Wang et al. 2019; thesis §3.2.3 and appendix .1). During training the
// target word's output embedding is moved against the context, e_t + δ with the closed-form
// inner solution δ* = −ε_t·h/‖h‖ (eq. 3.23), so the target logit becomes l_t − ε_t·‖h‖ while
// every other logit is unchanged:
//   nll = logsumexp(l') − l'_t,   l' = l with l'_t = l_t + h·δ* = l_t − ε_t·‖h‖
// Two readings of ε_t (SPEC §1):
//   thesis eq. 3.23 (default):      ε_t = eps, everywhere;
//   the code behind Tables A.1–A.3: ε_t = eps·‖e_t‖ (relative, eps = 0.005), and only where
//                                   cos(h, e_t) > 0 (aligned_only).
// The perturbation δ is held constant in the backward pass, ĥ and ‖e_t‖ alike (Danskin: the inner
// minimizer is a constant of the outer gradient): the target logit's gradient in h is δ, and no
// gradient reaches e_t through its norm. Two ways to place δ (`perturbation`):
//   "reference" (default): as the thesis's code and the original AdvSoft code do, δ is written into
//       a noise matrix with one row per word, so all occurrences of a word in a batch share one
//       occurrence's δ: here, deterministically, the last occurrence's in row order (the reference's
//       index assignment leaves the winner to the backend). Row i's target logit is
//       l_t + h_i·δ_{last(t)}, with δ_j = −ε_j·ĥ_j;
//   "per_token": each row its own δ_i = −ε_i·ĥ_i, so l_t + h_i·δ_i = l_t − ε_i·‖h_i‖ (eq. 3.23 per token).
// Evaluation and log_probs() are plain Softmax. The "embedding noise" of the ablation (Gaussian
// noise on the LSTM inputs) is the model option emb_noise. h [..., d] → [M, N].
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

struct AdvSoftHeadOptions {
  TORCH_ARG(double, eps) = 0.01;
  // ε_t = eps·‖e_t‖ instead of eps.
  TORCH_ARG(bool, relative) = false;
  // Perturb only rows where cos(h, e_t) > 0.
  TORCH_ARG(bool, aligned_only) = false;
  // "reference" (one δ per word in a batch) or "per_token".
  TORCH_ARG(std::string, perturbation) = "reference";
};
// The options a config and lmkit.heads.<kind>{...} set (bound_options.h).
const config::BoundOptions<AdvSoftHeadOptions>& declared_options(config::Tag<AdvSoftHeadOptions>);

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
