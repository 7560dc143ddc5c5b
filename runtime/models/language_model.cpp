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

nlohmann::json to_json(const LanguageModelOptions& o) {
  auto j = to_json(o.encoder());
  j.update(own_options().to_json(o));
  j["head"] = o.head();
  return j;
}

LanguageModelOptions language_model_options_from_json(const nlohmann::json& config) {
  if (!config.is_object()) throw ConfigError("model config must be a JSON object, got " + config.dump());
  const auto& encoder = awd_lstm_options_schema();
  const auto& own = own_options().schema();
  auto known = encoder.names();
  for (const auto& name : own.names()) known.push_back(name);
  known.push_back("head");
  nlohmann::json encoder_part = nlohmann::json::object(), own_part = nlohmann::json::object();
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (encoder.find(it.key())) {
      encoder_part[it.key()] = it.value();
    } else if (own.find(it.key())) {
      own_part[it.key()] = it.value();
    } else if (it.key() != "head") {
      const auto text = config::unknown_key_text("option", it.key(), known);
      throw ConfigError("model option '" + it.key() + "' is unknown" + text.substr(text.find(" (")));
    }
  }
  auto o = own_options().from_json(own_part);
  o.encoder(awd_lstm_options_from_json(encoder_part));
  if (config.contains("head")) o.head(config.at("head"));
  return o;
}

std::vector<config::OptionSpec> language_model_option_specs() {
  auto specs = awd_lstm_options_schema().options();
  for (const auto& spec : own_options().schema().options()) specs.push_back(spec);
  return specs;
}

LanguageModelImpl::LanguageModelImpl(LanguageModelOptions opts, Head built_head) : options(std::move(opts)) {
  const auto& e = options.encoder();
  encoder = register_module("encoder", AwdLstm(e));
  head = register_module("head", built_head ? built_head : make_head(options.head(), e.nhidlast(), e.emb()));
  const int64_t width = head->projects() ? e.emb() : e.nhidlast();
  if (options.tie_weights() && width != e.emb()) {
    throw ConfigError("tie_weights needs nhidlast == emb (got nhidlast " + integer_text(e.nhidlast()) +
                      ", emb " + integer_text(e.emb()) + ") or a head that projects (" + head_kinds_with(&HeadCapabilities::projects) + ")");
  }
  if (!options.tie_weights()) {
    // host: parameters made in the constructor; .to(device) moves the module with them
    decoder_weight = register_parameter("decoder_weight", torch::empty({e.vocab_size(), width}).uniform_(-0.1, 0.1));
  }
  if (options.decoder_bias()) decoder_bias = register_parameter("decoder_bias", torch::zeros({e.vocab_size()}));  // host: as decoder_weight
}

Decoder LanguageModelImpl::decoder() const {
  return {options.tie_weights() ? encoder->embedding : decoder_weight, decoder_bias};
}

AwdLstmOutput LanguageModelImpl::encode(const torch::Tensor& ids, const LstmState& hidden) {
  return encoder->forward(ids, hidden);
}

std::pair<torch::Tensor, LstmState> LanguageModelImpl::log_probs(const torch::Tensor& ids, const LstmState& hidden) {
  auto out = encoder->forward(ids, hidden);
  return {head->log_probs(out.output, decoder()), out.hidden};
}

LossOutput LanguageModelImpl::loss(const torch::Tensor& ids, const torch::Tensor& targets, const LstmState& hidden) {
  if (targets.numel() != ids.numel()) {
    throw UsageError("targets must have one entry per input token (" + integer_text(ids.numel()) + "), got " +
                     integer_text(targets.numel()));
  }
  if (targets.scalar_type() != torch::kInt64) throw UsageError("targets must be int64 token ids");
  if (!CheckedTokenStream::active()) check_token_ids(targets, decoder().weight.size(0), "the target ids");
  auto out = encoder->forward(ids, hidden);
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
  std::map<std::string, int64_t> parts{{"embedding", 0}, {"lstm", 0}, {"decoder", 0}, {"head", 0}};
  for (const auto& item : named_parameters(/*recurse=*/true)) {
    const auto& name = item.key();
    const int64_t n = item.value().numel();
    if (name == "encoder.embedding") {
      parts["embedding"] += n;
    } else if (name.rfind("encoder.", 0) == 0) {
      parts["lstm"] += n;
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

torch::Tensor input_embedding(const LanguageModel& model) { return model->encoder->embedding.detach(); }

OutputLayer output_layer(const LanguageModel& model) {
  const auto decoder = model->decoder();
  return {decoder.weight.detach(), decoder.bias.defined() ? decoder.bias.detach() : torch::Tensor()};
}

}  // namespace lmkit
