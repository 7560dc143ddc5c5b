// Mixtape (Yang, Luong, Salakhutdinov & Le, NeurIPS 2019; thesis §3.1.5, eq. 3.8–3.13): one softmax
// over logits gated per word, so its log P is high-rank at close to one softmax's cost.
//   h_k = tanh(W_k·g + c_k)                        K latent contexts of the decoder's width d
//   h_k ← locked_dropout(h_k, dropoutl)
//   a_{x,j} = v_xᵀ·tanh(U_j·g) + u_jᵀ·g + b_{x,j}  j = 1..K−1: gate pre-activations of word x
//   π_{x,·} = sigmoid tree of a_{x,·}              K leaves, K−1 sigmoids (heap order: node j has
//                                                  children 2j (γ_j) and 2j+1 (1 − γ_j), leaves
//                                                  K..2K−1); K = 4 gives the paper's
//                                                  π₁ = γ₁γ₂, π₂ = γ₁(1−γ₂), π₃ = (1−γ₁)γ₃, π₄ = (1−γ₁)(1−γ₃)
//   f_x = Σ_k π_{x,k}·(h_kᵀ·e_x) + b_x             logit-space vector gating (Σ_k π = 1: b once)
//   log P = log_softmax(f)
// Gate sharing: the words with ids < S have their own v_x, b_{x,·}; every other word shares one row,
// so its priors depend on the context alone and its gated logit is (Σ_k π_k h_k)ᵀe_x — one
// product instead of K. (The paper gives the S most frequent words their own gates; here they are
// the S smallest ids, which are the most frequent ones only in a frequency-sorted vocabulary:
// lmkit's corpora keep the AWD-LSTM reader's order of first appearance.) S = 0: every word shares,
// and Mixtape is a Mixture of Contexts with sigmoid-tree priors (low rank); K = 1: Softmax on
// tanh(W·g + c). Log-space priors: log π = Σ_path log σ(±a), never a log of a product.
// Parameters: K·d·nhidlast + K·d + (K−1)·gate_dim·nhidlast + (K−1)·nhidlast + (S+1)·(gate_dim + K−1)
// (no gate parameters when K = 1). h [..., nhidlast] → [M, N].
#pragma once
#include "runtime/heads/head.h"

namespace lmkit {

struct MixtapeHeadOptions {
  MixtapeHeadOptions() = default;
  MixtapeHeadOptions(int64_t in_dim, int64_t latent_dim) : in_dim_(in_dim), latent_dim_(latent_dim) {}
  // The model's widths (set from the model, not options).
  TORCH_ARG(int64_t, in_dim) = 0;
  TORCH_ARG(int64_t, latent_dim) = 0;
  TORCH_ARG(int64_t, K) = 4;
  TORCH_ARG(int64_t, S) = 1000;
  TORCH_ARG(int64_t, gate_dim) = 64;
  TORCH_ARG(double, dropoutl) = 0.29;
};
// The options a config and lmkit.heads.<kind>{...} set (bound_options.h).
const config::BoundOptions<MixtapeHeadOptions>& declared_options(config::Tag<MixtapeHeadOptions>);

class MixtapeHeadImpl : public HeadImpl {
 public:
  explicit MixtapeHeadImpl(MixtapeHeadOptions options);
  std::string kind() const override { return "mixtape"; }
  nlohmann::json config() const override;
  torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) override;
  torch::Tensor nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder) override;

  // The dropped latents [M, K, d] for h.
  torch::Tensor latents(const torch::Tensor& h);
  // log π [M, K, rows] for gate rows `gate_rows` (int64, into v and b; S is the shared row), from g [M, nhidlast].
  torch::Tensor log_priors(const torch::Tensor& g, const torch::Tensor& gate_rows);
  // The gated logits f [M, N] (before log_softmax).
  torch::Tensor gated_logits(const torch::Tensor& h, const Decoder& decoder);

  MixtapeHeadOptions options;
  torch::nn::Linear latent{nullptr};      // W_k, c_k: nhidlast → K·d
  torch::nn::Linear gate_latent{nullptr}; // U_j: nhidlast → (K−1)·gate_dim, no bias (K > 1)
  torch::nn::Linear gate_linear{nullptr}; // u_j: nhidlast → K−1, no bias (K > 1)
  torch::Tensor gate_vectors;             // v: [S + 1, gate_dim] (row S: the shared gate)
  torch::Tensor gate_biases;              // b: [S + 1, K − 1]

 private:
  // The sigmoid tree as two [K−1, K] 0/1 matrices: leaf k's path takes γ_j (left) or 1 − γ_j (right).
  torch::Tensor left_, right_;
  // Their transposes on the gates' device and dtype, made on first use there: a copy to a GPU per
  // forward would wait for the device each time.
  torch::Tensor left_used_, right_used_;
};

TORCH_MODULE(MixtapeHead);

}  // namespace lmkit
