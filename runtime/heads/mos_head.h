// Mixture of Softmaxes MoS(K) (Yang et al. 2018, "Breaking the Softmax Bottleneck", eq. 3):
//   h_k = tanh(W_k·h + c_k)             latent, width d (the decoder width), W: nhidlast × K·d
//   h_k ← locked_dropout(h_k, dropoutl)  (mask shared over time when h is [T, B, ·])
//   π = softmax(U·h)                    U: nhidlast × K, no bias
//   log P = log Σ_k π_k softmax(h_k·Eᵀ + b)   = logsumexp_k(log π_k + log_softmax(h_k·Eᵀ + b))
// Never log of a sum of probabilities. nll() uses ops::mixture_nll, which never holds the
// [M, K, N] tensor. K = 1 is Softmax on tanh(W·h) (log π = 0). Parameters: K·d·nhidlast + K·d + K·nhidlast.
// floor > 0 computes log(P + floor) = logaddexp(log P, log floor) instead, as the MoS code does
// (zihangdai/mos model.py: log(prob + 1e-8)): every word's probability rises by `floor`, so they sum
// to 1 + N·floor, and log P never falls under log floor. Off (0) by default: the thesis's MoS and
// the paper's equation take log P exactly. The same option holds for MoSS and MoC.
// MoSS (mixture of SigSoftmaxes) is this head with GSS(0, 2) components (moss_head.h).
// h [..., nhidlast] → [M, N].
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

struct MosHeadOptions {
  MosHeadOptions() = default;
  MosHeadOptions(int64_t in_dim, int64_t latent_dim) : in_dim_(in_dim), latent_dim_(latent_dim) {}
  // The model's widths (set from the model, not options).
  TORCH_ARG(int64_t, in_dim) = 0;
  TORCH_ARG(int64_t, latent_dim) = 0;
  TORCH_ARG(int64_t, K) = 15;
  TORCH_ARG(double, dropoutl) = 0.29;
  TORCH_ARG(double, floor) = 0.0;
};
// The options a config and lmkit.heads.<kind>{...} set (bound_options.h).
const config::BoundOptions<MosHeadOptions>& declared_options(config::Tag<MosHeadOptions>);

class MosHeadImpl : public HeadImpl {
 public:
  explicit MosHeadImpl(MosHeadOptions options);
  std::string kind() const override { return "mos"; }
  nlohmann::json config() const override;
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) override;

  // The dropped latents [M, K, d] and log priors [M, K] for h.
  std::tuple<torch::Tensor, torch::Tensor> mixture(const torch::Tensor& h);
  // log(P + floor) from log P [M, N] (unchanged when floor is 0).
  torch::Tensor floored(const torch::Tensor& log_p) const;

  MosHeadOptions options;
  torch::nn::Linear latent{nullptr};  // W and its bias
  torch::nn::Linear prior{nullptr};   // U

 protected:
  // Component transform GSS(c, kappa); (0, 1) is plain softmax.
  double component_c_ = 0.0, component_kappa_ = 1.0;
};

TORCH_MODULE(MosHead);

}  // namespace lmkit
