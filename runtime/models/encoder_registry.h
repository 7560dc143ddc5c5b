// The registry of encoder kinds, as head_registry.h is for heads: each kind is declared once, next to
// its implementation, with its options (one struct with declared_options, bound_options.h), its
// capabilities, its training defaults (a virtual of the encoder) and its factory. The model config's
// "encoder" key, lmkit.model's options and doc, the messages and the every-encoder tests are all
// derived from these declarations, so adding an encoder is one file with one LMKIT_REGISTER_ENCODER:
//
//   LMKIT_REGISTER_ENCODER(awd_lstm) {
//     return declared_encoder_kind<AwdLstmImpl, AwdLstmOptions>(   // its kind: encoder_kind_of(Tag<AwdLstmOptions>)
//         "AWD-LSTM", "the thesis's encoder: ...",
//         EncoderCapabilities{/*bounded_output=*/true}, {"encoder", "lstm", "nhidlast"},
//         {{{"emb", 6}, {"nhid", 8}, ...}},          // examples the every-encoder tests run
//         {{{"emb", 16}, ..., {"wdrop", 0}}, 5.0});  // lmkit doctor's smoke configuration and rate
//   }
//
// The options struct names its kind (`const char* encoder_kind_of(config::Tag<Options>)`, found by
// argument-dependent lookup) and its widths (`EncoderWidths encoder_widths(const Options&)`), which
// the model needs before it builds the head.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "runtime/config/bound_options.h"
#include "runtime/config/option_schema.h"
#include "runtime/models/encoder.h"

namespace lmkit {

// The widths a model needs before its encoder exists (to size its head and decoder).
struct EncoderWidths {
  std::int64_t vocab_size = 0, embedding = 0, output = 0;
};

// Where its parameters live in a model: the module name they carry in checkpoints
// ("encoder.lstm0_w_ih", "transformer.blocks..."), the part of parameter_count they count in, and
// the option that sets the output width (in messages: "tie_weights needs nhidlast == emb").
struct EncoderNames {
  std::string module;
  std::string parameter_part;
  std::string output_option;
};

struct EncoderKind {
  std::string kind;   // the value of "encoder" in a model config ("awd-lstm")
  std::string title;  // in messages: "an AWD-LSTM option", "the Transformer's context"
  std::string summary;
  std::vector<config::OptionSpec> options;
  EncoderCapabilities capabilities;
  EncoderNames names;
  std::function<Encoder(const nlohmann::json& checked)> make;          // from options read by schema()
  std::function<EncoderWidths(const nlohmann::json& checked)> widths;  // the same, without building
  // Small configurations (width ~6, ~20 words; "vocab_size" set by the tests) the every-encoder tests run.
  std::vector<nlohmann::json> examples = {};
  // `lmkit doctor`'s device check (training/device_smoke_test.h): a small configuration without
  // random masks (~50 words, windows of 12 tokens) and an SGD rate at which 20 steps are well
  // conditioned (rounding noise stays rounding noise).
  struct Smoke {
    nlohmann::json options = nlohmann::json::object();
    double lr = 1.0;
  } smoke = {};
  // Options an earlier lmkit wrote into this kind's configs and no longer declares, with the one value
  // it wrote (a Transformer's alpha = beta = 0): accepted at that value and dropped, so old checkpoints load.
  nlohmann::json retired = nlohmann::json::object();

  // The options as a schema (built at registration).
  const config::OptionSchema& schema() const;
  // "an AWD-LSTM", "a Transformer": the title in a sentence.
  std::string title_in_text() const;
};

// A kind whose options are the members of `Options` declared once: its schema, factory and widths
// come from that declaration.
template <typename Impl, typename Options>
EncoderKind declared_encoder_kind(std::string title, std::string summary, EncoderCapabilities capabilities,
                                  EncoderNames names, std::vector<nlohmann::json> examples, EncoderKind::Smoke smoke,
                                  nlohmann::json retired = nlohmann::json::object()) {
  std::vector<config::OptionSpec> specs;
  for (const auto& option : declared_options(config::Tag<Options>{}).options()) specs.push_back(option.spec);
  return {encoder_kind_of(config::Tag<Options>{}),
          std::move(title),
          std::move(summary),
          std::move(specs),
          capabilities,
          std::move(names),
          [](const nlohmann::json& checked) {
            return make_encoder_of<Impl>(declared_options(config::Tag<Options>{}).from_checked(checked));
          },
          [](const nlohmann::json& checked) {
            return encoder_widths(declared_options(config::Tag<Options>{}).from_checked(checked));
          },
          std::move(examples),
          std::move(smoke),
          std::move(retired)};
}

// Adds a kind (at static initialization; a second kind of the same name is a logic_error).
bool register_encoder_kind(EncoderKind kind);
// Every registered kind, sorted by name.
std::vector<const EncoderKind*> registered_encoder_kinds();
std::vector<std::string> encoder_kinds();
// The kind named `kind`, or nullptr.
const EncoderKind* find_encoder_kind(const std::string& kind);
// "\"awd-lstm\" or \"transformer\"": the registered kinds, for messages.
std::string encoder_kind_choices();
// The kind named `kind`; otherwise a ConfigError naming the known kinds and the closest.
const EncoderKind& require_encoder_kind(const std::string& kind);
// Every kind's examples as {"encoder": kind, options...}, sorted by kind.
std::vector<nlohmann::json> encoder_examples();

}  // namespace lmkit

// Declares and registers an encoder kind; the braces that follow return its EncoderKind.
#define LMKIT_REGISTER_ENCODER(name)                                                     \
  static ::lmkit::EncoderKind lmkit_encoder_kind_##name();                               \
  [[maybe_unused]] static const bool lmkit_encoder_registered_##name =                   \
      ::lmkit::register_encoder_kind(lmkit_encoder_kind_##name());                       \
  static ::lmkit::EncoderKind lmkit_encoder_kind_##name()
