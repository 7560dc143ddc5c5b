#include "runtime/models/language_model.h"

#include <set>

#include "runtime/config/json_numbers.h"
#include "runtime/core/error.h"
#include "runtime/heads/head_registry.h"

namespace lmkit {
namespace {

const std::set<std::string> kConfigKeys = {
    "vocab_size", "emb", "nhid", "nhidlast", "nlayers", "dropout", "dropouth", "dropouti", "dropoute",
    "wdrop", "emb_noise", "tie_weights", "decoder_bias", "alpha", "beta", "head"};

template <typename T>
T field(const nlohmann::json& config, const char* key, T fallback) {
  if (!config.contains(key)) return fallback;
  return config::json_option<T>(config.at(key), std::string("model config: '") + key + "'");
}

}  // namespace

nlohmann::json to_json(const LanguageModelOptions& o) {
  const auto& e = o.encoder();
  return {{"vocab_size", e.vocab_size()}, {"emb", e.emb()},           {"nhid", e.nhid()},
          {"nhidlast", e.nhidlast()},     {"nlayers", e.nlayers()},   {"dropout", e.dropout()},
          {"dropouth", e.dropouth()},     {"dropouti", e.dropouti()}, {"dropoute", e.dropoute()},
          {"wdrop", e.wdrop()},           {"emb_noise", e.emb_noise()}, {"tie_weights", o.tie_weights()},
          {"decoder_bias", o.decoder_bias()}, {"alpha", o.alpha()},   {"beta", o.beta()},
          {"head", o.head()}};
}

LanguageModelOptions language_model_options_from_json(const nlohmann::json& config) {
  if (!config.is_object()) throw ConfigError("model config must be a JSON object");
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (!kConfigKeys.count(it.key())) throw ConfigError("model config: unknown key '" + it.key() + "'");
  }
  AwdLstmOptions d;
  AwdLstmOptions e;
  e.vocab_size(field(config, "vocab_size", d.vocab_size()))
      .emb(field(config, "emb", d.emb()))
      .nhid(field(config, "nhid", d.nhid()))
      .nhidlast(field(config, "nhidlast", d.nhidlast()))
      .nlayers(field(config, "nlayers", d.nlayers()))
      .dropout(field(config, "dropout", d.dropout()))
      .dropouth(field(config, "dropouth", d.dropouth()))
      .dropouti(field(config, "dropouti", d.dropouti()))
      .dropoute(field(config, "dropoute", d.dropoute()))
      .wdrop(field(config, "wdrop", d.wdrop()))
      .emb_noise(field(config, "emb_noise", d.emb_noise()));
  LanguageModelOptions o;
  o.encoder(e)
      .tie_weights(field(config, "tie_weights", true))
      .decoder_bias(field(config, "decoder_bias", true))
      .alpha(field(config, "alpha", 2.0))
      .beta(field(config, "beta", 1.0));
  if (config.contains("head")) o.head(config.at("head"));
  return o;
}

LanguageModelImpl::LanguageModelImpl(LanguageModelOptions opts, Head built_head) : options(std::move(opts)) {
  const auto& e = options.encoder();
  encoder = register_module("encoder", AwdLstm(e));
  head = register_module("head", built_head ? built_head : make_head(options.head(), e.nhidlast(), e.emb()));
  const int64_t width = head->projects() ? e.emb() : e.nhidlast();
  if (options.tie_weights() && width != e.emb()) {
    throw ConfigError("tie_weights needs nhidlast == emb (got nhidlast " + std::to_string(e.nhidlast()) +
                      ", emb " + std::to_string(e.emb()) + ") or a head that projects (" + head_kinds_with(&HeadCapabilities::projects) + ")");
  }
  if (!options.tie_weights()) {
    decoder_weight = register_parameter("decoder_weight", torch::empty({e.vocab_size(), width}).uniform_(-0.1, 0.1));
  }
  if (options.decoder_bias()) decoder_bias = register_parameter("decoder_bias", torch::zeros({e.vocab_size()}));
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
    throw UsageError("targets must have one entry per input token (" + std::to_string(ids.numel()) + "), got " +
                     std::to_string(targets.numel()));
  }
  if (targets.scalar_type() != torch::kInt64) throw UsageError("targets must be int64 token ids");
  check_token_ids(targets, decoder().weight.size(0), "the target ids");
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
