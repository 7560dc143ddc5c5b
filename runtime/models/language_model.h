// A word-level language model: an encoder plus an output head (SPEC §1). The encoder is the
// AWD-LSTM (`encoder = "awd-lstm"`, the default) or a causal Transformer (`encoder = "transformer"`,
// runtime/models/transformer_encoder.h; its output width is emb, and its state is the previous tokens).
//   encoder: ids [T, B] → h [T, B, nhidlast]
//   decoder: weight E [N, d] (tied: the embedding itself, d = emb) and bias b [N]
//   head:    h → log-probabilities [T·B, N] / per-token NLL [T·B]
// With tied weights the decoder width is emb, so nhidlast must equal emb unless the head projects
// (MoS/MoSS/MoC map nhidlast → emb themselves). Untied: a separate E [N, d] (d = emb for projecting
// heads, nhidlast otherwise), initialized U(−0.1, 0.1). Decoder bias starts at 0.
// Training loss: mean NLL; AR = α·mean(out²) on the dropped last output and
// TAR = β·mean((raw_t − raw_{t−1})²) on the undropped one are returned beside it (α = 2, β = 1).
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/config/declared_result.h"
#include "runtime/heads/head.h"
#include "runtime/models/awd_lstm.h"
#include "runtime/models/transformer_encoder.h"

namespace lmkit {

struct LanguageModelOptions {
  TORCH_ARG(std::string, encoder_kind) = "awd-lstm";  // or "transformer" (the config's "encoder")
  TORCH_ARG(AwdLstmOptions, encoder);                 // encoder_kind "awd-lstm"
  TORCH_ARG(TransformerOptions, transformer);         // encoder_kind "transformer"
  TORCH_ARG(bool, tie_weights) = true;
  TORCH_ARG(bool, decoder_bias) = true;
  TORCH_ARG(double, alpha) = 2.0;
  TORCH_ARG(double, beta) = 1.0;
  TORCH_ARG(nlohmann::json, head) = nlohmann::json{{"kind", "softmax"}};
};

// The encoder's output width (the head's input: nhidlast, or a Transformer's emb), the embedding
// width and the vocabulary size.
std::int64_t encoder_output_width(const LanguageModelOptions& options);
std::int64_t embedding_width(const LanguageModelOptions& options);
std::int64_t vocabulary_size(const LanguageModelOptions& options);

// Config ⇄ JSON (every field of the model's encoder, head included; a Transformer's has "encoder":
// "transformer", an AWD-LSTM's no "encoder" key); unknown keys throw ConfigError, and so do the
// other encoder's options. A Transformer's alpha and beta default to 0 (AR/TAR are the AWD-LSTM's).
nlohmann::json to_json(const LanguageModelOptions& options);
LanguageModelOptions language_model_options_from_json(const nlohmann::json& config);
// The declared options of a model config: "encoder", both encoders' and the model's own (its "head"
// is a head config, declared by the head's kind).
std::vector<config::OptionSpec> language_model_option_specs();

struct LossOutput {
  torch::Tensor loss;  // mean NLL over the T·B tokens (scalar)
  torch::Tensor ar;    // α·mean(output²)
  torch::Tensor tar;   // β·mean((raw_t − raw_{t−1})²)
  LstmState hidden;
};

class LanguageModelImpl : public torch::nn::Module {
 public:
  // head: an already built head (e.g. one defined in Lua); nullptr builds options.head().
  explicit LanguageModelImpl(LanguageModelOptions options, Head head = nullptr);

  AwdLstmOutput encode(const torch::Tensor& ids, const LstmState& hidden);
  // [T·B, N] log-probabilities and the new state.
  std::pair<torch::Tensor, LstmState> log_probs(const torch::Tensor& ids, const LstmState& hidden);
  // targets: int64 [T, B] or [T·B].
  LossOutput loss(const torch::Tensor& ids, const torch::Tensor& targets, const LstmState& hidden);
  // The AWD-LSTM's (h, c) per layer; a Transformer's one pair (previous tokens [P, B], an empty tensor).
  LstmState init_hidden(int64_t batch_size) const;
  std::int64_t vocab_size() const { return vocabulary_size(options); }
  // The input embedding [N, emb] (the decoder when tied), the parameter itself.
  const torch::Tensor& embedding() const;
  bool is_transformer() const { return !transformer.is_empty(); }
  // The encoder's training protocol for the options a script leaves unset (`given`: those it set),
  // as train options JSON: empty for the AWD-LSTM, whose protocol is TrainOptions' own defaults.
  nlohmann::json training_defaults(const nlohmann::json& given) const;
  // Whether the encoder's output h is centred (TransformerEncoderImpl::centred_output); the
  // AWD-LSTM's is not. It lowers a Softmax head's rank bound by one (analysis/rank_bound.h).
  bool output_is_centred() const;
  // Whether training reads each window alone, from no earlier tokens (the Transformer's fixed-length
  // contexts: its exact sliding context would cost a pass per position); the AWD-LSTM carries its
  // state from window to window.
  bool trains_on_separate_windows() const { return is_transformer(); }

  Decoder decoder() const;
  // {"embedding", "lstm", "decoder", "head", "total"} → number of parameters (frozen ones included);
  // a Transformer's "transformer" (positions, blocks, final norm) in place of "lstm".
  std::map<std::string, int64_t> parameter_count() const;

  // The AR and TAR terms of the last loss_step (model_steps.h); undefined before one.
  torch::Tensor last_ar, last_tar;

  LanguageModelOptions options;
  AwdLstm encoder{nullptr};                  // set for encoder_kind "awd-lstm"
  TransformerEncoder transformer{nullptr};   // set for encoder_kind "transformer"
  torch::Tensor decoder_weight;  // undefined when tied
  torch::Tensor decoder_bias;    // undefined without bias
  Head head{nullptr};
};

TORCH_MODULE(LanguageModel);

// A Transformer's reading of a stream: every position of `ids` [T, B] (any T) attends over exactly
// the last `context` tokens up to itself — those of `previous` [P, B] (the stream before) and of
// `ids` — with positions counted from the oldest of them, as reading the stream one token at a time
// would. Positions whose window starts at the stream's first kept token share one causal pass;
// each later one is its own window (up to `context`× the work of one pass: the price of the exact
// sliding context). Returns the outputs [T, B, emb] and the next state: the last context − 1 tokens.
std::pair<torch::Tensor, torch::Tensor> sliding_context(TransformerEncoderImpl& encoder, const torch::Tensor& ids,
                                                        const torch::Tensor& previous);

// The input embedding [vocab, emb] (the decoder's too when tied), detached.
torch::Tensor input_embedding(const LanguageModel& model);
// The output layer the head projects onto, detached: weight [vocab, d] (the embedding itself when
// tied) and bias [vocab] (undefined without one): logits l = h·weightᵀ + bias.
struct OutputLayer {
  torch::Tensor weight, bias;
};
inline auto declared_result(config::Tag<OutputLayer>) {
  return config::result_values(config::result_field("weight", &OutputLayer::weight, "[vocab, d]"),
                               config::result_field("bias", &OutputLayer::bias, "[vocab], nil without one"));
}
OutputLayer output_layer(const LanguageModel& model);

}  // namespace lmkit
