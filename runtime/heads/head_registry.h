// The registry of head kinds: each kind is declared once, next to its implementation, with its
// options (a config::OptionSchema), its capabilities and its factory. make_head, head_kinds, the
// lmkit.heads.* functions with their doc strings, the error messages and the test lists are all
// derived from these declarations, so adding a head is one file with one LMKIT_REGISTER_HEAD.
//
// A head's options are a struct with TORCH_ARG fields whose declared_options() binds each one
// (bound_options.h); declared_head_kind derives the schema and the factory from it:
//
//   const config::BoundOptions<GssHeadOptions>& declared_options(config::Tag<GssHeadOptions>) {
//     static const config::BoundOptions<GssHeadOptions> options(
//         "gss", {LMKIT_BOUND_ACCESSOR(GssHeadOptions, c, Number, double, any(), "the bending point"), ...});
//     return options;
//   }
//   LMKIT_REGISTER_HEAD(gss) {
//     return declared_head_kind<GssHeadImpl, GssHeadOptions>(
//         "gss", "Generalized SigSoftmax: ...",
//         HeadCapabilities{/*projects=*/false, /*pointwise=*/true, /*monotone=*/true},
//         {{{"c", -0.5}, {"k", 2.5}}});  // examples the every-head tests run
//   }
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/config/declared_result.h"
#include "runtime/config/option_schema.h"
#include "runtime/heads/head.h"

namespace lmkit {

// What the rest of lmkit may assume about a kind without building one, each capability declared
// once, here: its name (a member of HeadCapabilities and of HeadInfo, a field of lmkit.heads.info, a
// word of `lmkit heads`) and what it means (their docs and the catalog's legend). X(name, doc).
#define LMKIT_HEAD_CAPABILITIES(X)                                                                             \
  X(projects, "maps h to latent contexts of the decoder's width (MoS, MoSS, MoC, Mixtape): the decoder width " \
              "is the embedding size whatever nhidlast is, and recipes train it with the MoS configuration")    \
  X(pointwise, "log P = log_softmax(f(l)) for a pointwise f of the logits l (its f-logits are defined)")        \
  X(monotone, "f is strictly increasing: it ranks words exactly as Softmax does (the same argmax)")            \
  X(mixture, "K components mixed under priors from h, as MoS: the MoS configuration's K applies (Mixtape's "   \
             "K, the leaves of its sigmoid tree, keeps its own paper's default)")

#define LMKIT_HEAD_CAPABILITY_MEMBER(name, doc) bool name = false;
struct HeadCapabilities {
  LMKIT_HEAD_CAPABILITIES(LMKIT_HEAD_CAPABILITY_MEMBER)
};

struct HeadCapabilityDeclaration {
  const char* name;
  bool HeadCapabilities::*member;
  const char* doc;
};
// Every capability in declaration order (the catalog's legend and lists).
const std::vector<HeadCapabilityDeclaration>& head_capability_declarations();

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

namespace registry_detail {
template <typename T, typename = void>
struct HasWidths : std::false_type {};
template <typename T>
struct HasWidths<T, std::void_t<decltype(std::declval<T&>().in_dim(int64_t{}).latent_dim(int64_t{}))>> : std::true_type {};
}  // namespace registry_detail

// A kind whose options are the members of `Options` declared once (declared_options, in the head's
// header): the kind's schema, its factory and its heads' config() all come from that one
// declaration. Options with in_dim()/latent_dim() get the model's widths.
template <typename Impl, typename Options>
HeadKind declared_head_kind(std::string kind, std::string summary, HeadCapabilities capabilities,
                            std::vector<nlohmann::json> examples = {}) {
  std::vector<config::OptionSpec> specs;
  for (const auto& option : declared_options(config::Tag<Options>{}).options()) specs.push_back(option.spec);
  return {std::move(kind), std::move(summary), std::move(specs), capabilities,
          [](const HeadSettings& s) {
            auto options = declared_options(config::Tag<Options>{}).from_checked(s.values());
            if constexpr (registry_detail::HasWidths<Options>::value) options.in_dim(s.in_dim()).latent_dim(s.latent_dim());
            return make_head_of<Impl>(options);
          },
          std::move(examples)};
}

// {"kind": kind, every declared option}: the config() of a head whose options are declared.
template <typename Options>
nlohmann::json declared_head_config(const std::string& kind, const Options& options) {
  auto config = declared_options(config::Tag<Options>{}).to_json(options);
  config["kind"] = kind;
  return config;
}

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

// What the registry declares of a kind, as a table (lmkit.heads.info).
struct HeadOptionInfo {
  std::string name;
  nlohmann::json default_value;
  std::string doc;
};
inline auto declared_result(config::Tag<HeadOptionInfo>) {
  return config::result_table(config::result_field("name", &HeadOptionInfo::name, "the option"),
                              config::result_field("default", &HeadOptionInfo::default_value, "its default"),
                              config::result_field("doc", &HeadOptionInfo::doc, "what it does"));
}
struct HeadInfo {
  std::string kind, summary;
  LMKIT_HEAD_CAPABILITIES(LMKIT_HEAD_CAPABILITY_MEMBER)
  std::vector<HeadOptionInfo> options;
};
#define LMKIT_HEAD_CAPABILITY_RESULT(name, doc) config::result_field(#name, &HeadInfo::name, doc),
inline auto declared_result(config::Tag<HeadInfo>) {
  using config::result_field;
  return config::result_table(result_field("kind", &HeadInfo::kind, "the kind"),
                              result_field("summary", &HeadInfo::summary, "what it computes"),
                              LMKIT_HEAD_CAPABILITIES(LMKIT_HEAD_CAPABILITY_RESULT)
                              result_field("options", &HeadInfo::options, "{name=, default=, doc=} per option"));
}
#undef LMKIT_HEAD_CAPABILITY_RESULT
// ConfigError naming the closest kind for an unknown one.
HeadInfo head_info(const std::string& kind);

}  // namespace lmkit

// Declares and registers a head kind; the braces that follow return its HeadKind.
#define LMKIT_REGISTER_HEAD(name)                                                        \
  static ::lmkit::HeadKind lmkit_head_kind_##name();                                     \
  [[maybe_unused]] static const bool lmkit_head_registered_##name =                      \
      ::lmkit::register_head_kind(lmkit_head_kind_##name());                             \
  static ::lmkit::HeadKind lmkit_head_kind_##name()
