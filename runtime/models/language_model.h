// A word-level language model: an encoder plus an output head (SPEC §1). The encoder is any
// registered kind (encoder_registry.h): the AWD-LSTM (`encoder = "awd-lstm"`, the default) or a
// causal Transformer (`encoder = "transformer"`), each with its own options, state and training defaults.
//   encoder: ids [T, B] → h [T, B, d_h]           (d_h: nhidlast, or a Transformer's emb)
//   decoder: weight E [N, d] (tied: the embedding itself, d = emb) and bias b [N]
//   head:    h → log-probabilities [T·B, N] / per-token NLL [T·B]
// With tied weights the decoder width is emb, so d_h must equal emb unless the head projects
// (MoS/MoSS/MoC map d_h → emb themselves). Untied: a separate E [N, d] (d = emb for projecting
// heads, d_h otherwise), initialized U(−0.1, 0.1). Decoder bias starts at 0.
// Training loss: mean NLL, with the encoder's regularizers (the AWD-LSTM's AR and TAR) beside it.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/config/declared_result.h"
#include "runtime/core/error.h"
#include "runtime/heads/head.h"
#include "runtime/models/checked_tokens.h"
#include "runtime/models/encoder.h"

namespace lmkit {

struct LanguageModelOptions {
  // The encoder given by its options struct (AwdLstmOptions, TransformerOptions, ...: any struct an
  // encoder declares, encoder_registry.h).
  template <typename Options, typename = decltype(encoder_kind_of(config::Tag<Options>{}))>
  LanguageModelOptions& encoder(const Options& options) {
    encoder_kind_ = encoder_kind_of(config::Tag<Options>{});
    encoder_options_ = declared_options(config::Tag<Options>{}).to_json(options);
    return *this;
  }

  TORCH_ARG(std::string, encoder_kind) = kDefaultEncoderKind;              // the config's "encoder"
  TORCH_ARG(nlohmann::json, encoder_options) = nlohmann::json::object();  // its options; missing ones at their defaults
  TORCH_ARG(bool, tie_weights) = true;
  TORCH_ARG(bool, decoder_bias) = true;
  TORCH_ARG(nlohmann::json, head) = nlohmann::json{{"kind", "softmax"}};
};

// The encoder's output width (the head's input: nhidlast, or a Transformer's emb) and the embedding
// width, from the options alone (lmkit.model sizes a head written in Lua with them).
std::int64_t encoder_output_width(const LanguageModelOptions& options);
std::int64_t embedding_width(const LanguageModelOptions& options);

// Config ⇄ JSON: one flat object of the encoder's options, the model's own and "head"; "encoder"
// names the kind (left out for the default, the AWD-LSTM). Unknown keys throw ConfigError naming the
// closest, and so do another encoder's options.
nlohmann::json to_json(const LanguageModelOptions& options);
LanguageModelOptions language_model_options_from_json(const nlohmann::json& config);
// A stored model config without the options its encoder retired, at their retired value (encoder
// registry): what to_json writes for the same model today (a run's config.json against its best.ckpt).
nlohmann::json without_retired_options(const nlohmann::json& config);
// The declared options of a model config: "encoder", every encoder's and the model's own (its "head"
// is a head config, declared by the head's kind). Options several encoders declare appear once.
std::vector<config::OptionSpec> language_model_option_specs();
// What lmkit.model's doc shows: the signature "{encoder="awd-lstm", vocab_size=10000, ...}" with the
// default encoder's defaults, and one section per encoder with its own defaults (options several
// encoders share have a default per encoder).
std::string language_model_signature();
std::string language_model_options_text();

struct LossOutput {
  torch::Tensor loss;  // mean NLL over the T·B tokens (scalar)
  torch::Tensor ar;    // the encoder's regularizers (EncoderRegularizers): AWD-LSTM α·mean(output²)
  torch::Tensor tar;   // β·mean((raw_t − raw_{t−1})²); zeros for an encoder without them
  EncoderState hidden;
};

class LanguageModelImpl : public torch::nn::Module {
 public:
  // head: an already built head (e.g. one defined in Lua); nullptr builds options.head().
  explicit LanguageModelImpl(LanguageModelOptions options, Head head = nullptr);

  EncoderOutput encode(const torch::Tensor& ids, const EncoderState& hidden);
  // [T·B, N] log-probabilities and the new state.
  std::pair<torch::Tensor, EncoderState> log_probs(const torch::Tensor& ids, const EncoderState& hidden);
  // targets: int64 [T, B] or [T·B].
  LossOutput loss(const torch::Tensor& ids, const torch::Tensor& targets, const EncoderState& hidden);
  // The encoder's initial state (the AWD-LSTM's zero {{h, c}, ...}, one pair per layer; a Transformer's {{no tokens}}).
  EncoderState init_hidden(int64_t batch_size) const { return encoder->initial_state(batch_size); }
  std::int64_t vocab_size() const { return encoder->vocab_size(); }
  // The input embedding [N, emb] (the decoder when tied), the parameter itself.
  const torch::Tensor& embedding() const { return encoder->embedding(); }
  // Whether the encoder's output h is centred (EncoderCapabilities): a Softmax head's rank bound is one lower.
  bool output_is_centred() const { return encoder->capabilities().centred_output; }
  // Its kind's name in messages ("AWD-LSTM", "Transformer").
  std::string encoder_title() const;

  Decoder decoder() const;
  // {"embedding", <the encoder's part: "lstm", "transformer">, "decoder", "head", "total"} → number of
  // parameters (frozen ones included).
  std::map<std::string, int64_t> parameter_count() const;

  // The encoder as its own class (e.g. AwdLstmImpl, for its layers); a UsageError for another kind.
  template <typename Impl>
  Impl& encoder_as() {
    auto* impl = dynamic_cast<Impl*>(encoder.get());
    if (impl == nullptr) throw UsageError("this model's encoder is " + encoder_title() + ", not the one asked for");
    return *impl;
  }
  template <typename Impl>
  const Impl& encoder_as() const {
    const auto* impl = dynamic_cast<const Impl*>(encoder.get());
    if (impl == nullptr) throw UsageError("this model's encoder is " + encoder_title() + ", not the one asked for");
    return *impl;
  }

  // The AR and TAR terms of the last loss_step (model_steps.h); undefined before one.
  torch::Tensor last_ar, last_tar;

  LanguageModelOptions options;
  Encoder encoder{nullptr};
  torch::Tensor decoder_weight;  // undefined when tied
  torch::Tensor decoder_bias;    // undefined without bias
  Head head{nullptr};
};

TORCH_MODULE(LanguageModel);

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
