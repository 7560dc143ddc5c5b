// The AWD-LSTM encoder (Merity, Keskar, Socher 2018; SPEC §1; thesis §2.3):
//   x = embedding_dropout(E, ids, dropoute)              [T, B, emb]
//   x = x + N(0, emb_noise²) (training, optional: AdvSoft's "embedding noise")
//   x = locked_dropout(x, dropouti)
//   for layer l = 1..nlayers: x = LSTM_l(x; W_hh dropped by DropConnect wdrop, fresh mask each
//       forward, shared over time); between layers locked_dropout(x, dropouth)
//   raw = x (undropped last output, for TAR);  out = locked_dropout(raw, dropout)   [T, B, nhidlast]
// Layer sizes: emb → nhid → … → nhid → nhidlast. Each layer runs through at::lstm with its
// (dropped) weights passed functionally, so CUDA keeps the fused cuDNN kernel.
// cuDNN wants a layer's four tensors as one contiguous chunk in its order [w_ih | w_hh | b_ih | b_hh]
// starting its storage; otherwise it allocates and fills such a chunk on every call (and Torch
// warns each time). So each layer's parameters are views of one flat buffer of their own — kept so
// after construction, to(device/dtype) and checkpoint loads (which copy in place) — and on CUDA a
// training forward with DropConnect assembles the dropped w_hh with the others into one fresh flat
// buffer (contiguous_layer_weights: the copy cuDNN would make anyway; the same random draws, the
// same gradients). The CPU's LSTM reads the tensors where they are and needs no such copy.
// Init: embedding U(−0.1, 0.1); LSTM weights and biases U(−1/√h, 1/√h) (Torch's default).
// Parameters per layer: 4h·(in + h) + 8h.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/config/option_schema.h"
#include "runtime/core/torch.h"

namespace lmkit {

struct AwdLstmOptions {
  TORCH_ARG(int64_t, vocab_size) = 10000;
  TORCH_ARG(int64_t, emb) = 400;
  TORCH_ARG(int64_t, nhid) = 1150;
  TORCH_ARG(int64_t, nhidlast) = 400;
  TORCH_ARG(int64_t, nlayers) = 3;
  TORCH_ARG(double, dropout) = 0.4;
  TORCH_ARG(double, dropouth) = 0.3;
  TORCH_ARG(double, dropouti) = 0.4;
  TORCH_ARG(double, dropoute) = 0.1;
  TORCH_ARG(double, wdrop) = 0.5;
  TORCH_ARG(double, emb_noise) = 0.0;
};

// The encoder's options declared once (owner "AWD-LSTM": "AWD-LSTM option 'dropout' must be in
// [0, 1), got 1.5"), their JSON round trip (from_json: keys in `ignored` skipped, the rest checked,
// missing ones at their defaults); AwdLstm checks the options it is built with through it.
const config::OptionSchema& awd_lstm_options_schema();
nlohmann::json to_json(const AwdLstmOptions& options);
AwdLstmOptions awd_lstm_options_from_json(const nlohmann::json& json, const std::vector<std::string>& ignored = {});

// One (h, c) pair per layer, each [1, B, size].
using LstmState = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

struct AwdLstmOutput {
  torch::Tensor output;  // [T, B, nhidlast], after `dropout`
  torch::Tensor raw;     // [T, B, nhidlast], before it (TAR)
  LstmState hidden;      // the state after the last step (not detached)
};

class AwdLstmImpl : public torch::nn::Module {
 public:
  explicit AwdLstmImpl(AwdLstmOptions options);
  // ids: int64 [T, B] of token ids (0-based values); hidden from init_hidden or a previous call.
  AwdLstmOutput forward(const torch::Tensor& ids, const LstmState& hidden);
  LstmState init_hidden(int64_t batch_size) const;
  int64_t layer_size(int64_t layer) const;  // output width of layer (0-based)
  void reset_parameters();

  // Module::to moves each parameter on its own; these put each layer back into one flat buffer.
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Device device, bool non_blocking = false) override;
  // Whether layer `layer`'s four tensors are views of one buffer, in cuDNN's order, from its start.
  bool layer_is_flat(std::size_t layer) const;

  AwdLstmOptions options;
  torch::Tensor embedding;  // [N, emb]
  struct Layer {
    torch::Tensor w_ih, w_hh, b_ih, b_hh;
  };
  std::vector<Layer> layers;

 private:
  void flatten_layers();
};

TORCH_MODULE(AwdLstm);

// One fresh buffer [w_ih | w_hh | b_ih | b_hh] (cuDNN's order) and its four views in that order,
// shaped as the arguments; differentiable: the views' gradients reach the arguments (one cat back).
std::vector<torch::Tensor> contiguous_layer_weights(const torch::Tensor& w_ih, const torch::Tensor& w_hh,
                                                    const torch::Tensor& b_ih, const torch::Tensor& b_hh);

// The state with its history cut (carried across batches without backpropagating into them).
LstmState detach_state(const LstmState& state);

// Token ids must lie in [0, vocab_size): an id outside is a UsageError naming `what`, the id, its
// 1-based position and the vocabulary size (Torch's own message is "index out of range in self").
void check_token_ids(const torch::Tensor& ids, int64_t vocab_size, const std::string& what);

}  // namespace lmkit
