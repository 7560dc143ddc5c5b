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
// Training adds AR = α·mean(out²) on the dropped output and TAR = β·mean((raw_t − raw_{t−1})²) on the
// undropped one to the loss (Merity et al.'s regularizers; α = 2, β = 1).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/config/bound_options.h"
#include "runtime/config/option_schema.h"
#include "runtime/core/torch.h"
#include "runtime/models/encoder.h"

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
  TORCH_ARG(double, alpha) = 2.0;  // AR
  TORCH_ARG(double, beta) = 1.0;   // TAR
};
const config::BoundOptions<AwdLstmOptions>& declared_options(config::Tag<AwdLstmOptions>);
inline const char* encoder_kind_of(config::Tag<AwdLstmOptions>) { return "awd-lstm"; }
struct EncoderWidths;
EncoderWidths encoder_widths(const AwdLstmOptions& options);

// The options as JSON through their declaration above (owner "AWD-LSTM": "AWD-LSTM option 'dropout'
// must be in [0, 1), got 1.5"), which AwdLstm also checks the options it is built with against.
nlohmann::json to_json(const AwdLstmOptions& options);

// Its state: {h, c} per layer, each [1, B, size]. Its output: [T, B, nhidlast] after `dropout`, and
// raw before it (TAR).
class AwdLstmImpl : public EncoderImpl {
 public:
  explicit AwdLstmImpl(AwdLstmOptions options);
  // ids: int64 [T, B] of token ids (0-based values); hidden from init_hidden or a previous call.
  EncoderOutput forward(const torch::Tensor& ids, const EncoderState& hidden);
  EncoderState init_hidden(int64_t batch_size) const;

  std::string kind() const override { return "awd-lstm"; }
  nlohmann::json config() const override;
  EncoderOutput encode(const torch::Tensor& ids, const EncoderState& state) override { return forward(ids, state); }
  EncoderState initial_state(std::int64_t batch_size) const override { return init_hidden(batch_size); }
  const torch::Tensor& embedding() const override { return embedding_weight; }
  std::int64_t output_width() const override { return options.nhidlast(); }
  // AR and TAR (alpha, beta).
  EncoderRegularizers regularizers(const EncoderOutput& out) const override;
  std::vector<std::pair<std::string, torch::Tensor>> reference_entries(bool weight_drop) const override;
  int64_t layer_size(int64_t layer) const;  // output width of layer (0-based)
  void reset_parameters();

  // Module::to moves each parameter on its own; these put each layer back into one flat buffer.
  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Device device, bool non_blocking = false) override;
  // Whether layer `layer`'s four tensors are views of one buffer, in cuDNN's order, from its start.
  bool layer_is_flat(std::size_t layer) const;

  AwdLstmOptions options;
  torch::Tensor embedding_weight;  // [N, emb]
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


}  // namespace lmkit
