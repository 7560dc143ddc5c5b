// The interface every encoder implements: the part of a language model below the head (SPEC §1),
// token ids [T, B] → h [T, B, d], the head's input. The AWD-LSTM (awd_lstm.h) and the causal
// Transformer (transformer_encoder.h) are two; a new one is one file with one
// LMKIT_REGISTER_ENCODER (encoder_registry.h), as a head is.
//
// An encoder reads a stream window by window and carries its own state between windows (the
// caller keeps it; scripts see it as a table of tensor lists): the AWD-LSTM's {h, c} per layer, a
// Transformer's {previous tokens}. initial_state(B) starts a stream.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/core/torch.h"

namespace lmkit {

// What an encoder carries from one window to the next: a list of tensors per part (layer). The state
// encode returns has the parts and tensors of initial_state's (a resumed run restores it by that shape).
using EncoderState = std::vector<std::vector<torch::Tensor>>;

// The kind a model config without "encoder" has.
inline constexpr const char* kDefaultEncoderKind = "awd-lstm";

struct EncoderOutput {
  torch::Tensor output;  // h [T, B, d]: the head's input (after the encoder's output dropout, if any)
  torch::Tensor raw;     // [T, B, d] before that dropout (the AWD-LSTM's TAR reads it)
  EncoderState state;    // the state after the last position (not detached)
};

// The terms an encoder adds to the training loss (the AWD-LSTM's AR and TAR); scalars, 0 by default.
struct EncoderRegularizers {
  torch::Tensor ar, tar;
};

// What the rest of lmkit may assume about a kind without building one (declared at registration).
struct EncoderCapabilities {
  // Every coordinate of h lies in [−1, 1] (an LSTM's tanh): the argmaxable analysis's box region
  // is the set of outputs the encoder can reach; otherwise only the free region applies.
  bool bounded_output = false;
  // 1ᵀn = 0 before a final affine map (a LayerNorm's output): a Softmax head's log P has rank ≤ d + 1,
  // not d + 2 (analysis/rank_bound.h).
  bool centred_output = false;
  // Training reads each window alone, from no earlier tokens (a Transformer's fixed contexts; its
  // exact sliding context would cost a pass per position); otherwise the state is carried across
  // windows, detached.
  bool separate_windows = false;
};

class EncoderImpl : public torch::nn::Module {
 public:
  ~EncoderImpl() override = default;

  // "awd-lstm", "transformer", ...: the value of a model config's "encoder".
  virtual std::string kind() const = 0;
  // Its options as JSON (every declared option, without "encoder"); the registry rebuilds it from them.
  virtual nlohmann::json config() const = 0;
  // ids: int64 [T, B] (0-based); state from initial_state or an earlier call of the same batch size.
  virtual EncoderOutput encode(const torch::Tensor& ids, const EncoderState& state) = 0;
  virtual EncoderState initial_state(std::int64_t batch_size) const = 0;
  // The input embedding [N, emb], the parameter itself (the decoder when tied).
  virtual const torch::Tensor& embedding() const = 0;
  // The width of h.
  virtual std::int64_t output_width() const = 0;
  std::int64_t vocab_size() const { return embedding().size(0); }
  std::int64_t embedding_width() const { return embedding().size(1); }

  // The training loss's extra terms for one output; zeros unless the encoder regularizes its output.
  virtual EncoderRegularizers regularizers(const EncoderOutput& out) const;
  // The training protocol the encoder needs for each option a script leaves unset (`given`: the
  // train options it set; keys of train_options.h); {} keeps TrainOptions' own (the AWD-LSTM's).
  virtual nlohmann::json training_defaults(const nlohmann::json& given) const;
  // The most tokens one position reads at once (a window longer than it cannot be trained on);
  // 0: no limit (a recurrent state).
  virtual std::int64_t longest_window() const { return 0; }
  // Its weights under the names of the reference code's state_dict (Merity et al.'s awd-lstm-lm:
  // encoder.weight, rnns.L[.module].weight_hh_l0[_raw], ...; weight_drop: the WeightDrop wrapper's
  // names); an encoder the reference code does not have refuses (UsageError).
  virtual std::vector<std::pair<std::string, torch::Tensor>> reference_entries(bool weight_drop) const;

  // Its kind's declared capabilities (encoder_registry.h).
  const EncoderCapabilities& capabilities() const;
};

TORCH_MODULE(Encoder);

// An Encoder holding a new T (derived from EncoderImpl).
template <typename T, typename... Args>
Encoder make_encoder_of(Args&&... args) {
  return Encoder(std::shared_ptr<EncoderImpl>(std::make_shared<T>(std::forward<Args>(args)...)));
}

// The state with its history cut (carried across windows without backpropagating into them).
EncoderState detach_state(const EncoderState& state);

}  // namespace lmkit
