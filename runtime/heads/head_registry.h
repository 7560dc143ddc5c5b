// The registry of head kinds: each kind is declared once, next to its implementation, with its
// options (a config::OptionSchema), its capabilities and its factory. make_head, head_kinds, the
// lmkit.heads.* functions with their doc strings, the error messages and the test lists are all
// derived from these declarations, so adding a head is one file with one LMKIT_REGISTER_HEAD.
//
//   LMKIT_REGISTER_HEAD(gss) {
//     return {"gss", "Generalized SigSoftmax: ...",
//             {{"c", OptionType::Number, 0.0, Range::any(), "the knee"}, ...},
//             HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
//             [](const HeadSettings& s) { return make_head_of<GssHeadImpl>(...); }};
//   }
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/config/option_schema.h"
#include "runtime/heads/head.h"

namespace lmkit {

// What the rest of lmkit may assume about a kind without building one.
struct HeadCapabilities {
  // Maps h (width nhidlast) to its own latent space of the decoder's width (MoS, MoSS, MoC): the
  // decoder width is then the embedding size whatever nhidlast is, and recipes train such heads
  // with the MoS configuration.
  bool projects = false;
  // log P = log_softmax(f(l)) for a pointwise f of the logits l: f_logits() is defined.
  bool pointwise = false;
  // ... and f is strictly increasing, so the head ranks words exactly as Softmax does (same argmax).
  bool monotone = false;
};

// A head's options, read and checked through its kind's schema (defaults filled in).
class HeadSettings {
 public:
  HeadSettings(nlohmann::json values, int64_t in_dim, int64_t latent_dim)
      : values_(std::move(values)), in_dim_(in_dim), latent_dim_(latent_dim) {}
  double number(const char* key) const { return values_.at(key).get<double>(); }
  int64_t integer(const char* key) const { return values_.at(key).get<int64_t>(); }
  bool flag(const char* key) const { return values_.at(key).get<bool>(); }
  std::string text(const char* key) const { return values_.at(key).get<std::string>(); }
  // Width of h (nhidlast) and of the decoder (the embedding size d).
  int64_t in_dim() const { return in_dim_; }
  int64_t latent_dim() const { return latent_dim_; }
  // {"kind": ..., every option}: what config() of the built head returns.
  const nlohmann::json& values() const { return values_; }

 private:
  nlohmann::json values_;
  int64_t in_dim_, latent_dim_;
};

struct HeadKind {
  std::string kind;                        // the key of configs and of lmkit.heads.<kind>
  std::string summary;                     // what it computes, for lmkit.heads.<kind>'s doc
  std::vector<config::OptionSpec> options;
  HeadCapabilities capabilities;
  std::function<Head(const HeadSettings&)> make;
  // Small configurations (options without "kind") that exercise the kind's options on a model of
  // width ~6 and ~20 words: the every-head tests (normalization, gradients, save/load) run each.
  // Empty: the defaults, which then must be small enough for such a model.
  std::vector<nlohmann::json> examples = {};

  // "lmkit.heads.gss{c=0, k=2} -> HeadSpec" followed by the summary and one line per option.
  std::string doc() const;
  // The options as a schema (built at registration; a kind not registered has none: logic_error).
  const config::OptionSchema& schema() const;
};

// Adds a kind (at static initialization; a second kind of the same name is a logic_error).
bool register_head_kind(HeadKind kind);
// Every registered kind, sorted by name.
std::vector<const HeadKind*> registered_head_kinds();
// The kind named `kind`, or nullptr.
const HeadKind* find_head_kind(const std::string& kind);
// The kind named `kind`; otherwise a ConfigError naming the closest kind and the known ones.
const HeadKind& require_head_kind(const std::string& kind);
// Every registered kind's examples as full configs ({"kind": ..., options}), sorted by kind.
std::vector<nlohmann::json> head_examples();
// "mos, moc, moss": the registered kinds with a capability, e.g. &HeadCapabilities::projects.
std::string head_kinds_with(bool HeadCapabilities::*capability);
// {"kind": kind, options...} checked and completed with the defaults; ConfigError otherwise.
nlohmann::json read_head_config(const nlohmann::json& config);

}  // namespace lmkit

// Declares and registers a head kind; the braces that follow return its HeadKind.
#define LMKIT_REGISTER_HEAD(name)                                                        \
  static ::lmkit::HeadKind lmkit_head_kind_##name();                                     \
  [[maybe_unused]] static const bool lmkit_head_registered_##name =                      \
      ::lmkit::register_head_kind(lmkit_head_kind_##name());                             \
  static ::lmkit::HeadKind lmkit_head_kind_##name()
