// The interface every output head implements (thesis ch. 3–5: the "softmax layer" of an LM).
//
// A head turns the encoder's output h into next-token log-probabilities over the vocabulary,
// using the model's decoder (E [N, d], tied to the embedding, and bias b [N]; logits l = h·Eᵀ + b).
// Shapes: h is [..., d_in] (usually [T, B, d_in]; heads with locked dropout use the time axis
// when it is there); every result is per row of h flattened to M = T·B rows:
//   log_probs(h)        → [M, N]   log P(·|context), each row logsumexp = 0 (analysis, Q matrix)
//   nll(h, targets)     → [M]      −log P(target|context) (training; may avoid the [M, N] log-probs)
//   top_k(h, k)         → ([M, k] log-probs, [M, k] token ids)   (inspection)
// Heads are LibTorch modules: their own parameters (if any) register under the model's "head".
#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/core/torch.h"

namespace lmkit {

// The output embedding the head projects onto: weight [N, d], bias [N] or undefined.
struct Decoder {
  torch::Tensor weight;
  torch::Tensor bias;
  torch::Tensor logits(const torch::Tensor& h2d) const {
    return bias.defined() ? torch::addmm(bias, h2d, weight.t()) : torch::mm(h2d, weight.t());
  }
};

class HeadImpl : public torch::nn::Module {
 public:
  ~HeadImpl() override = default;

  // "softmax", "gss", "mos", ...: the key of config() and of lmkit.heads.*.
  virtual std::string kind() const = 0;
  // The head's options as JSON ({"kind": ..., ...}); make_head(config()) rebuilds it.
  virtual nlohmann::json config() const = 0;
  // True when the head maps h (width nhidlast) to its own latent space of the decoder's width, so
  // the decoder width is the embedding size regardless of nhidlast (MoS, MoSS, MoC): the
  // capability its kind declares (head_registry.h); false for kinds not registered (Lua heads).
  bool projects() const;

  virtual torch::Tensor log_probs(const torch::Tensor& h, const Decoder& decoder) = 0;
  // [M, N] "f-logits": the pointwise-transformed logits f(l) that log_softmax normalizes, for heads
  // of that form (Softmax: l; SS/GSS, PLIF, ReLU, Sigmoid: their f). Undefined for the others
  // (mixtures have no single logit matrix). The analysis compares their rank with log P's.
  virtual torch::Tensor f_logits(const torch::Tensor& h, const Decoder& decoder);
  // Default: gathers from log_probs. Heads override it where the target alone is cheaper.
  virtual torch::Tensor nll(const torch::Tensor& h, const torch::Tensor& targets, const Decoder& decoder);
  std::tuple<torch::Tensor, torch::Tensor> top_k(const torch::Tensor& h, const Decoder& decoder, int64_t k);

  // Parameters trained with their own learning rate (PLIF's slopes); empty for most heads. The
  // rate is the head's own_lr() unless the training options set one.
  virtual std::vector<torch::Tensor> own_lr_parameters() { return {}; }
  virtual std::optional<double> own_lr() const { return std::nullopt; }
};

TORCH_MODULE(Head);

// A Head holding a new T (T derived from HeadImpl). Spelled out because ModuleHolder's forwarding
// constructor would otherwise take a shared_ptr<T> as constructor arguments for the abstract base.
template <typename T, typename... Args>
Head make_head_of(Args&&... args) {
  return Head(std::shared_ptr<HeadImpl>(std::make_shared<T>(std::forward<Args>(args)...)));
}

// h [..., d] → [M, d].
inline torch::Tensor rows_of(const torch::Tensor& h) { return h.reshape({-1, h.size(-1)}); }
// Targets of any shape as one column [M, 1] (for gather along the vocabulary).
inline torch::Tensor target_column(const torch::Tensor& targets) { return targets.reshape({-1, 1}); }

// Builds a head from its config ({"kind": "gss", "c": 0, "k": 2}) through its kind's declaration
// (head_registry.h); unknown kinds or keys, wrong types and values out of range throw ConfigError.
// in_dim: width of h (nhidlast); latent_dim: the embedding width d.
Head make_head(const nlohmann::json& config, int64_t in_dim, int64_t latent_dim);
// The kinds make_head knows, sorted by name.
std::vector<std::string> head_kinds();

}  // namespace lmkit
