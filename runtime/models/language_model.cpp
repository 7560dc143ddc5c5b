#include "runtime/models/language_model.h"

#include <fmt/format.h>

#include "runtime/models/checked_tokens.h"

#include "runtime/config/bound_options.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/heads/head_registry.h"
#include "runtime/models/encoder_registry.h"

namespace lmkit {
namespace {

// The model's own options, read and written through their accessors.
#define LMKIT_MODEL_OPTION(...) LMKIT_BOUND_ACCESSOR(LanguageModelOptions, __VA_ARGS__)

const config::BoundOptions<LanguageModelOptions>& own_options() {
  static const config::BoundOptions<LanguageModelOptions> options(
      "model", {LMKIT_MODEL_OPTION(tie_weights, Boolean, bool, any(), "the decoder is the embedding matrix"),
                LMKIT_MODEL_OPTION(decoder_bias, Boolean, bool, any(), "the decoder has a bias b")});
  return options;
}

#undef LMKIT_MODEL_OPTION

// The key that names the encoder, its choices the registered kinds.
config::OptionSpec encoder_kind_spec() {
  config::OptionSpec spec("encoder", config::OptionType::String, kDefaultEncoderKind, config::Range::any(),
                          "the encoder: " + encoder_kind_choices() + " (docs/models.md)");
  spec.choices = encoder_kinds();
  return spec;
}

const EncoderKind& kind_of(const LanguageModelOptions& options) { return require_encoder_kind(options.encoder_kind()); }

EncoderWidths widths_of(const LanguageModelOptions& options) {
  const auto& kind = kind_of(options);
  return kind.widths(kind.schema().read(options.encoder_options()));
}

std::string option_names(const config::OptionSchema& schema) {
  std::string names;
  for (const auto& name : schema.names()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace

std::int64_t encoder_output_width(const LanguageModelOptions& o) { return widths_of(o).output; }
std::int64_t embedding_width(const LanguageModelOptions& o) { return widths_of(o).embedding; }

nlohmann::json to_json(const LanguageModelOptions& o) {
  const auto& kind = kind_of(o);
  auto j = kind.schema().read(o.encoder_options());
  if (o.encoder_kind() != kDefaultEncoderKind) j["encoder"] = o.encoder_kind();
  j.update(own_options().to_json(o));
  j["head"] = o.head();
  return j;
}

LanguageModelOptions language_model_options_from_json(const nlohmann::json& config) {
  if (!config.is_object()) throw ConfigError("model config must be a JSON object, got " + config.dump());
  std::string name = kDefaultEncoderKind;
  if (config.contains("encoder")) {
    const auto& value = config.at("encoder");
    if (!value.is_string()) throw ConfigError("model option 'encoder' must be " + encoder_kind_choices() + ", got " + value.dump());
    name = value.get<std::string>();
  }
  const auto& kind = require_encoder_kind(name);
  const auto& encoder = kind.schema();
  const auto& own = own_options().schema();
  auto known = encoder.names();
  for (const auto& n : own.names()) known.push_back(n);
  known.push_back("head");
  known.push_back("encoder");
  nlohmann::json encoder_part = nlohmann::json::object(), own_part = nlohmann::json::object();
  for (auto it = config.begin(); it != config.end(); ++it) {
    const auto& key = it.key();
    if (encoder.find(key)) {
      encoder_part[key] = it.value();
    } else if (own.find(key)) {
      own_part[key] = it.value();
    } else if (key == "head" || key == "encoder") {
      continue;
    } else if (kind.retired.contains(key)) {
      if (kind.retired.at(key) == it.value()) continue;  // written by an earlier lmkit at the only value it has now
      throw ConfigError("model option '" + key + "' = " + it.value().dump() + " is no longer " + kind.title_in_text() +
                        " option: earlier lmkit versions took it, this one reads it only at " + kind.retired.at(key).dump() +
                        " (this config cannot be rebuilt as it was)");
    } else {
      const EncoderKind* owner = nullptr;
      for (const auto* other : registered_encoder_kinds()) {
        if (other != &kind && other->schema().find(key)) owner = other;
      }
      if (owner != nullptr) {
        throw ConfigError("model option '" + key + "' is " + owner->title_in_text() + " option (set encoder = \"" + owner->kind + "\"); the " + kind.title +
                          "'s are: " + option_names(encoder));
      }
      throw ConfigError(config::unknown_option_text("model", key, known));
    }
  }
  auto o = own_options().from_json(own_part);
  o.encoder_kind(name);
  o.encoder_options(encoder.read(encoder_part));
  if (config.contains("head")) o.head(config.at("head"));
  return o;
}

nlohmann::json without_retired_options(const nlohmann::json& config) {
  if (!config.is_object()) return config;
  const auto name = config.contains("encoder") && config.at("encoder").is_string() ? config.at("encoder").get<std::string>()
                                                                                    : std::string(kDefaultEncoderKind);
  const auto* kind = find_encoder_kind(name);
  auto current = config;
  if (kind == nullptr) return current;
  for (const auto& [key, value] : kind->retired.items()) {
    if (current.contains(key) && current.at(key) == value) current.erase(key);
  }
  return current;
}

std::vector<config::OptionSpec> language_model_option_specs() {
  std::vector<config::OptionSpec> specs{encoder_kind_spec()};
  const auto add = [&](const config::OptionSpec& spec) {
    for (const auto& known : specs) {
      if (known.name == spec.name) return;  // shared by several encoders (vocab_size, emb, nlayers, dropout)
    }
    specs.push_back(spec);
  };
  // The default encoder first: its defaults are the ones a config without "encoder" gets.
  for (const auto& spec : require_encoder_kind(kDefaultEncoderKind).options) add(spec);
  for (const auto* kind : registered_encoder_kinds()) {
    for (const auto& spec : kind->options) add(spec);
  }
  for (const auto& spec : own_options().schema().options()) add(spec);
  return specs;
}

std::string language_model_signature() {
  std::vector<config::OptionSpec> specs{encoder_kind_spec()};
  for (const auto& spec : require_encoder_kind(kDefaultEncoderKind).options) specs.push_back(spec);
  for (const auto& spec : own_options().schema().options()) specs.push_back(spec);
  return config::OptionSchema("model", specs).signature();
}

std::string language_model_options_text() {
  std::vector<config::OptionSpec> every_model{encoder_kind_spec()};
  for (const auto& spec : own_options().schema().options()) every_model.push_back(spec);
  std::string text = "Options of every model:\n" + config::OptionSchema("model", every_model).describe();
  for (const auto* kind : registered_encoder_kinds()) {
    text += kind->title + " (encoder = \"" + kind->kind + "\"" + (kind->kind == kDefaultEncoderKind ? ", the default" : "") + "): " +
            kind->summary + ". Its options:\n" + kind->schema().describe();
  }
  return text;
}

namespace {

// A mixture's floor (log(P + floor), the MoS code's 1e-8) raises every word's probability, so a row
// sums to 1 + N·floor: only where N·floor is small is it still a log-probability (1e-8 at
// WikiText-2's 33,278 words adds 3e-4). Past 1% the perplexity it gives is no perplexity: floor = 0.5
// at 10,000 words made rows sum to 5,001.
constexpr double kMostFloorMass = 0.01;

void check_floor_keeps_rows_normalized(const nlohmann::json& head_config, std::int64_t vocab) {
  // The mixtures' option (a head written in Lua may name an option of its own "floor").
  const auto kind = head_config.value("kind", std::string());
  if (kind != "mos" && kind != "moss" && kind != "moc") return;
  const auto found = head_config.find("floor");
  if (found == head_config.end() || !found->is_number()) return;
  const double floor = found->get<double>(), mass = floor * static_cast<double>(vocab);
  if (mass <= kMostFloorMass) return;
  throw ConfigError(fmt::format(
      "{} head option 'floor' = {} with a vocabulary of {} words makes each row of P + floor sum to 1 + N·floor = {:.6g}: "
      "log(P + floor) is then no log-probability. Give floor ≤ {:.3g} (N·floor ≤ {}), e.g. the MoS code's 1e-8, or 0 "
      "for log P exactly",
      head_config.value("kind", std::string("mixture")), describe_number(floor), integer_text(vocab), 1 + mass,
      kMostFloorMass / static_cast<double>(vocab), kMostFloorMass));
}

}  // namespace

LanguageModelImpl::LanguageModelImpl(LanguageModelOptions opts, Head built_head) : options(std::move(opts)) {
  const auto& kind = kind_of(options);
  options.encoder_options(kind.schema().read(options.encoder_options()));
  encoder = register_module(kind.names.module, kind.make(options.encoder_options()));
  const auto emb = encoder->embedding_width(), in = encoder->output_width(), vocab = encoder->vocab_size();
  head = register_module("head", built_head ? built_head : make_head(options.head(), in, emb));
  check_floor_keeps_rows_normalized(head->config(), vocab);
  const int64_t width = head->projects() ? emb : in;
  if (options.tie_weights() && width != emb) {
    const auto& width_option = kind.names.output_option;
    throw ConfigError("tie_weights needs " + width_option + " == emb (got " + width_option + " " + integer_text(in) + ", emb " +
                      integer_text(emb) + ") or a head that projects (" + head_kinds_with(&HeadCapabilities::projects) + ")");
  }
  if (!options.tie_weights()) {
    // host: parameters made in the constructor; .to(device) moves the module with them
    decoder_weight = register_parameter("decoder_weight", torch::empty({vocab, width}).uniform_(-0.1, 0.1));
  }
  if (options.decoder_bias()) decoder_bias = register_parameter("decoder_bias", torch::zeros({vocab}));  // host: as decoder_weight
}

Decoder LanguageModelImpl::decoder() const {
  return {options.tie_weights() ? embedding() : decoder_weight, decoder_bias};
}

std::string LanguageModelImpl::encoder_title() const { return kind_of(options).title; }

EncoderOutput LanguageModelImpl::encode(const torch::Tensor& ids, const EncoderState& hidden) { return encoder->encode(ids, hidden); }

std::pair<torch::Tensor, EncoderState> LanguageModelImpl::log_probs(const torch::Tensor& ids, const EncoderState& hidden) {
  auto out = encode(ids, hidden);
  return {head->log_probs(out.output, decoder()), out.state};
}

LossOutput LanguageModelImpl::loss(const torch::Tensor& ids, const torch::Tensor& targets, const EncoderState& hidden) {
  if (targets.numel() != ids.numel()) {
    throw UsageError("targets must have one entry per input token (" + integer_text(ids.numel()) + "), got " +
                     integer_text(targets.numel()));
  }
  if (targets.scalar_type() != torch::kInt64) throw UsageError("targets must be int64 token ids");
  if (!CheckedTokenStream::active()) check_token_ids(targets, decoder().weight.size(0), "the target ids");
  auto out = encode(ids, hidden);
  LossOutput result;
  result.loss = head->nll(out.output, targets.reshape({-1}), decoder()).mean();
  auto regularizers = encoder->regularizers(out);
  result.ar = regularizers.ar;
  result.tar = regularizers.tar;
  result.hidden = out.state;
  return result;
}

std::map<std::string, int64_t> LanguageModelImpl::parameter_count() const {
  const auto& part = kind_of(options).names.parameter_part;
  std::map<std::string, int64_t> parts{{"embedding", 0}, {part, 0}, {"decoder", 0}, {"head", 0}};
  const auto* embedding_storage = embedding().unsafeGetTensorImpl();
  for (const auto& item : encoder->named_parameters(/*recurse=*/true)) {
    parts[item.value().unsafeGetTensorImpl() == embedding_storage ? "embedding" : part] += item.value().numel();
  }
  for (const auto& item : head->named_parameters(/*recurse=*/true)) parts["head"] += item.value().numel();
  for (const auto& item : named_parameters(/*recurse=*/false)) parts["decoder"] += item.value().numel();
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
