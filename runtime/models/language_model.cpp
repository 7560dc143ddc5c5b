#include "runtime/models/language_model.h"
#include "runtime/models/checked_tokens.h"

#include "runtime/config/bound_options.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {
namespace {

// The model's own options (the encoder's are AwdLstmOptions'), read and written through their accessors.
#define LMKIT_MODEL_OPTION(...) LMKIT_BOUND_ACCESSOR(LanguageModelOptions, __VA_ARGS__)

const config::BoundOptions<LanguageModelOptions>& own_options() {
  static const config::BoundOptions<LanguageModelOptions> options(
      "model", {LMKIT_MODEL_OPTION(tie_weights, Boolean, bool, any(), "the decoder is the embedding matrix"),
                LMKIT_MODEL_OPTION(decoder_bias, Boolean, bool, any(), "the decoder has a bias b"),
                LMKIT_MODEL_OPTION(alpha, Number, double, any(), "activation regularization (AR) coefficient"),
                LMKIT_MODEL_OPTION(beta, Number, double, any(), "temporal activation regularization (TAR) coefficient")});
  return options;
}

#undef LMKIT_MODEL_OPTION

}  // namespace

std::int64_t encoder_output_width(const LanguageModelOptions& o) {
  return o.encoder_kind() == "transformer" ? o.transformer().emb : o.encoder().nhidlast();
}

std::int64_t embedding_width(const LanguageModelOptions& o) {
  return o.encoder_kind() == "transformer" ? o.transformer().emb : o.encoder().emb();
}

std::int64_t vocabulary_size(const LanguageModelOptions& o) {
  return o.encoder_kind() == "transformer" ? o.transformer().vocab_size : o.encoder().vocab_size();
}

namespace {

const config::BoundOptions<TransformerOptions>& transformer_options() { return declared_options(config::Tag<TransformerOptions>{}); }

// The key that names the encoder, declared beside the encoders' options.
config::OptionSpec encoder_kind_spec() {
  config::OptionSpec spec("encoder", config::OptionType::String, "awd-lstm", config::Range::any(),
                          "the encoder: awd-lstm (the thesis's) or transformer (causal, pre-LayerNorm; docs/models.md)");
  spec.choices = {"awd-lstm", "transformer"};
  return spec;
}

}  // namespace

nlohmann::json to_json(const LanguageModelOptions& o) {
  nlohmann::json j;
  if (o.encoder_kind() == "transformer") {
    j = transformer_options().to_json(o.transformer());
    j["encoder"] = "transformer";
  } else {
    j = to_json(o.encoder());
  }
  j.update(own_options().to_json(o));
  j["head"] = o.head();
  return j;
}

LanguageModelOptions language_model_options_from_json(const nlohmann::json& config) {
  if (!config.is_object()) throw ConfigError("model config must be a JSON object, got " + config.dump());
  std::string kind = "awd-lstm";
  if (config.contains("encoder")) {
    const auto& value = config.at("encoder");
    if (!value.is_string() || (value != "awd-lstm" && value != "transformer")) {
      throw ConfigError("model option 'encoder' must be \"awd-lstm\" or \"transformer\", got " + value.dump());
    }
    kind = value.get<std::string>();
  }
  const bool transformer = kind == "transformer";
  const auto& encoder = transformer ? transformer_options().schema() : awd_lstm_options_schema();
  const auto& other = transformer ? awd_lstm_options_schema() : transformer_options().schema();
  const auto& own = own_options().schema();
  auto known = encoder.names();
  for (const auto& name : own.names()) known.push_back(name);
  known.push_back("head");
  known.push_back("encoder");
  nlohmann::json encoder_part = nlohmann::json::object(), own_part = nlohmann::json::object();
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (encoder.find(it.key())) {
      encoder_part[it.key()] = it.value();
    } else if (own.find(it.key())) {
      own_part[it.key()] = it.value();
    } else if (other.find(it.key())) {
      throw ConfigError("model option '" + it.key() + "' is " +
                        (transformer ? "an AWD-LSTM option; a Transformer's" : "a Transformer option (set encoder = \"transformer\"); the AWD-LSTM's") +
                        " are: " + [&] {
                          std::string names;
                          for (const auto& name : encoder.names()) names += (names.empty() ? "" : ", ") + name;
                          return names;
                        }());
    } else if (it.key() != "head" && it.key() != "encoder") {
      const auto text = config::unknown_key_text("option", it.key(), known);
      throw ConfigError("model option '" + it.key() + "' is unknown" + text.substr(text.find(" (")));
    }
  }
  if (transformer) {
    // AR and TAR are the AWD-LSTM's regularizers: off unless asked for.
    if (!own_part.contains("alpha")) own_part["alpha"] = 0.0;
    if (!own_part.contains("beta")) own_part["beta"] = 0.0;
  }
  auto o = own_options().from_json(own_part);
  o.encoder_kind(kind);
  if (transformer) {
    o.transformer(transformer_options().from_json(encoder_part));
  } else {
    o.encoder(awd_lstm_options_from_json(encoder_part));
  }
  if (config.contains("head")) o.head(config.at("head"));
  return o;
}

std::vector<config::OptionSpec> language_model_option_specs() {
  std::vector<config::OptionSpec> specs{encoder_kind_spec()};
  const auto add = [&](const config::OptionSpec& spec) {
    for (const auto& known : specs) {
      if (known.name == spec.name) return;  // shared by both encoders (vocab_size, emb, nlayers, dropout)
    }
    specs.push_back(spec);
  };
  for (const auto& spec : awd_lstm_options_schema().options()) add(spec);
  for (const auto& spec : transformer_options().schema().options()) add(spec);
  for (const auto& spec : own_options().schema().options()) add(spec);
  return specs;
}

LanguageModelImpl::LanguageModelImpl(LanguageModelOptions opts, Head built_head) : options(std::move(opts)) {
  const auto emb = embedding_width(options), in = encoder_output_width(options), vocab = vocabulary_size(options);
  if (options.encoder_kind() == "transformer") {
    transformer = register_module("transformer", TransformerEncoder(options.transformer()));
  } else if (options.encoder_kind() == "awd-lstm") {
    encoder = register_module("encoder", AwdLstm(options.encoder()));
  } else {
    throw ConfigError("model option 'encoder' must be \"awd-lstm\" or \"transformer\", got \"" + options.encoder_kind() + "\"");
  }
  head = register_module("head", built_head ? built_head : make_head(options.head(), in, emb));
  const int64_t width = head->projects() ? emb : in;
  if (options.tie_weights() && width != emb) {
    throw ConfigError("tie_weights needs nhidlast == emb (got nhidlast " + integer_text(in) + ", emb " + integer_text(emb) +
                      ") or a head that projects (" + head_kinds_with(&HeadCapabilities::projects) + ")");
  }
  if (!options.tie_weights()) {
    // host: parameters made in the constructor; .to(device) moves the module with them
    decoder_weight = register_parameter("decoder_weight", torch::empty({vocab, width}).uniform_(-0.1, 0.1));
  }
  if (options.decoder_bias()) decoder_bias = register_parameter("decoder_bias", torch::zeros({vocab}));  // host: as decoder_weight
}

bool LanguageModelImpl::output_is_centred() const { return is_transformer() && TransformerEncoderImpl::centred_output; }

nlohmann::json LanguageModelImpl::training_defaults(const nlohmann::json& given) const {
  return is_transformer() ? transformer->training_defaults(given) : nlohmann::json::object();
}

const torch::Tensor& LanguageModelImpl::embedding() const { return is_transformer() ? transformer->embedding : encoder->embedding; }

LstmState LanguageModelImpl::init_hidden(int64_t batch_size) const {
  if (!is_transformer()) return encoder->init_hidden(batch_size);
  return {{transformer->initial_state(batch_size), torch::zeros({0}, embedding().options().requires_grad(false))}};
}

Decoder LanguageModelImpl::decoder() const {
  return {options.tie_weights() ? embedding() : decoder_weight, decoder_bias};
}

namespace {

// Token positions one forward pass of the per-position windows below may hold (bounds the memory of
// reading a long window exactly: 2^16 positions of d floats per activation).
constexpr std::int64_t kSlidingPositionsPerPass = std::int64_t{1} << 16;

}  // namespace

std::pair<torch::Tensor, torch::Tensor> sliding_context(TransformerEncoderImpl& encoder, const torch::Tensor& ids,
                                                        const torch::Tensor& previous) {
  if (ids.dim() != 2 || ids.scalar_type() != torch::kInt64) throw UsageError("Transformer input must be int64 token ids [T, B]");
  if (previous.dim() != 2 || previous.size(1) != ids.size(1) || previous.scalar_type() != torch::kInt64) {
    throw UsageError("Transformer state must be the int64 previous tokens [P, " + integer_text(ids.size(1)) +
                     "] (use init_hidden(batch_size))");
  }
  const auto context = encoder.options.context;
  const auto T = ids.size(0), B = ids.size(1);
  const auto kept = std::min<std::int64_t>(previous.size(0), context - 1);
  const auto tokens = torch::cat({previous.slice(0, previous.size(0) - kept).to(ids.device()), ids}, 0);  // [S, B]
  const auto S = kept + T;
  const auto next_state = tokens.slice(0, std::max<std::int64_t>(0, S - (context - 1))).detach();
  std::vector<torch::Tensor> outputs;
  // Stream positions j < context (of tokens) see every token from 0: one causal pass.
  const auto first_end = std::min(S, context);
  if (first_end > kept || T == 0) {
    outputs.push_back(encoder.forward(tokens.slice(0, kept, first_end), tokens.slice(0, 0, kept)).output);
  }
  // Each later position j sees exactly tokens j − context + 1 … j, its own window from position 0:
  // the windows ending at j = first_end … S − 1 side by side in the batch, as many per pass as the
  // memory bound allows; the last position of each is j's output.
  if (S > first_end) {
    const auto windows = tokens.unfold(0, context, 1);  // [S − context + 1, B, context]: window w = tokens w … w + c − 1
    const auto per_pass = std::max<std::int64_t>(1, kSlidingPositionsPerPass / (B * context));
    for (std::int64_t end = first_end; end < S; end += per_pass) {
      const auto last = std::min(S, end + per_pass);
      const auto n = last - end;
      auto batch = windows.slice(0, end - context + 1, last - context + 1)  // [n, B, c]
                       .permute({2, 0, 1})
                       .reshape({context, n * B});
      auto out = encoder.forward(batch, encoder.initial_state(n * B)).output;  // [c, n·B, emb]
      outputs.push_back(out.select(0, context - 1).reshape({n, B, out.size(2)}));
    }
  }
  return {outputs.size() == 1 ? outputs.front() : torch::cat(outputs, 0), next_state};
}

AwdLstmOutput LanguageModelImpl::encode(const torch::Tensor& ids, const LstmState& hidden) {
  if (!is_transformer()) return encoder->forward(ids, hidden);
  if (hidden.size() != 1) {
    throw UsageError("a Transformer's state is one pair {previous tokens, {}}, got " + integer_text(hidden.size()) +
                     " (use init_hidden(batch_size))");
  }
  auto [output, state] = sliding_context(*transformer, ids, hidden.front().first);
  return {output, output, {{state, hidden.front().second}}};
}

std::pair<torch::Tensor, LstmState> LanguageModelImpl::log_probs(const torch::Tensor& ids, const LstmState& hidden) {
  auto out = encode(ids, hidden);
  return {head->log_probs(out.output, decoder()), out.hidden};
}

LossOutput LanguageModelImpl::loss(const torch::Tensor& ids, const torch::Tensor& targets, const LstmState& hidden) {
  if (targets.numel() != ids.numel()) {
    throw UsageError("targets must have one entry per input token (" + integer_text(ids.numel()) + "), got " +
                     integer_text(targets.numel()));
  }
  if (targets.scalar_type() != torch::kInt64) throw UsageError("targets must be int64 token ids");
  if (!CheckedTokenStream::active()) check_token_ids(targets, decoder().weight.size(0), "the target ids");
  auto out = encode(ids, hidden);
  LossOutput result;
  result.loss = head->nll(out.output, targets.reshape({-1}), decoder()).mean();
  result.ar = options.alpha() * out.output.pow(2).mean();
  result.tar = out.raw.size(0) > 1
                   ? options.beta() * (out.raw.slice(0, 1) - out.raw.slice(0, 0, -1)).pow(2).mean()
                   : torch::zeros({}, out.raw.options());
  result.hidden = out.hidden;
  return result;
}

std::map<std::string, int64_t> LanguageModelImpl::parameter_count() const {
  std::map<std::string, int64_t> parts{{"embedding", 0}, {is_transformer() ? "transformer" : "lstm", 0}, {"decoder", 0}, {"head", 0}};
  for (const auto& item : named_parameters(/*recurse=*/true)) {
    const auto& name = item.key();
    const int64_t n = item.value().numel();
    if (name == "encoder.embedding" || name == "transformer.embedding") {
      parts["embedding"] += n;
    } else if (name.rfind("encoder.", 0) == 0) {
      parts["lstm"] += n;
    } else if (name.rfind("transformer.", 0) == 0) {
      parts["transformer"] += n;
    } else if (name.rfind("head.", 0) == 0) {
      parts["head"] += n;
    } else {
      parts["decoder"] += n;
    }
  }
  int64_t total = 0;
  for (const auto& [_, n] : parts) total += n;
  parts["total"] = total;
  return parts;
}

}  // namespace lmkit

namespace lmkit {

torch::Tensor input_embedding(const LanguageModel& model) { return model->embedding().detach(); }

OutputLayer output_layer(const LanguageModel& model) {
  const auto decoder = model->decoder();
  return {decoder.weight.detach(), decoder.bias.defined() ? decoder.bias.detach() : torch::Tensor()};
}

}  // namespace lmkit
