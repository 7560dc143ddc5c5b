// An options struct bound to its OptionSchema: each option's declaration next to the member it
// reads and writes, so that the struct's JSON round trip, its checks, its defaults and its doc come
// from one table. The option's type follows from the member's, its default from a default-made
// struct:
//
//   const config::BoundOptions<PairwiseKlOptions>& declared_options(config::Tag<PairwiseKlOptions>) {
//     static const config::BoundOptions<PairwiseKlOptions> options("pairwise_kl", {
//         {"pairs", &PairwiseKlOptions::pairs, Range::at_least(1), "context pairs to draw"},
//         {"mode", &PairwiseKlOptions::mode, OneOf{{"mean", "max"}}, "what to take"},
//         {"seed", &PairwiseKlOptions::seed, "the draws' seed"}});
//     return options;
//   }
//
// Member types: bool, integers (unsigned: ≥ 0 up to 2^64 − 1), floating point, std::string,
// std::optional of those (null: not set), std::vector<std::string>, at::Tensor, and another
// declared options struct (a nested table, std::optional of one: nil unless given).
#pragma once
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/config/declared_result.h"
#include "runtime/config/json_numbers.h"
#include "runtime/config/option_schema.h"

// Declared, not included: options structs without a tensor (statistics) compile without Torch.
namespace at {
class Tensor;
}  // namespace at

namespace lmkit::config {

// A string option's allowed values.
struct OneOf {
  std::vector<std::string> values;
};

template <typename Options>
class BoundOptions;

namespace bound_detail {

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <typename T, typename = void>
struct IsDeclared : std::false_type {};
template <typename T>
struct IsDeclared<T, std::void_t<decltype(declared_options(Tag<T>{}))>> : std::true_type {};

template <typename T>
constexpr OptionType type_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return OptionType::Boolean;
  } else if constexpr (std::is_integral_v<T>) {
    return OptionType::Integer;
  } else if constexpr (std::is_floating_point_v<T>) {
    return OptionType::Number;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return OptionType::String;
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    return OptionType::StringList;
  } else if constexpr (std::is_same_v<T, at::Tensor>) {
    return OptionType::Tensor;
  } else {
    static_assert(IsDeclared<T>::value, "BoundOption: no option type for this member type");
    return OptionType::Table;
  }
}

template <typename T>
nlohmann::json to_json(const T& value) {
  if constexpr (IsOptional<T>::value) {
    return value ? to_json(*value) : nlohmann::json();
  } else if constexpr (std::is_same_v<T, at::Tensor>) {
    return nullptr;  // a tensor is no JSON value
  } else if constexpr (IsDeclared<T>::value) {
    return declared_options(Tag<T>{}).to_json(value);
  } else {
    return value;
  }
}

// `value` has passed the schema: its type is right.
template <typename T>
T from_json(const nlohmann::json& value) {
  if constexpr (IsOptional<T>::value) {
    if (value.is_null()) return std::nullopt;
    return from_json<typename T::value_type>(value);
  } else if constexpr (std::is_same_v<T, at::Tensor>) {
    return {};
  } else if constexpr (IsDeclared<T>::value) {
    return declared_options(Tag<T>{}).from_checked(value);
  } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string> ||
                       std::is_same_v<T, std::vector<std::string>>) {
    return value.get<T>();
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    return json_unsigned(value, "option");
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(json_integer(value, "option"));
  } else {
    return static_cast<T>(json_number(value, "option"));
  }
}

}  // namespace bound_detail

template <typename Options>
struct BoundOption {
  OptionSpec spec;
  std::function<nlohmann::json(const Options&)> get;
  std::function<void(Options&, const nlohmann::json&)> set;
  // A Tensor member is set apart from the JSON (see OptionType::Tensor).
  std::function<void(Options&, const at::Tensor&)> set_tensor;

  BoundOption(OptionSpec s, std::function<nlohmann::json(const Options&)> g,
              std::function<void(Options&, const nlohmann::json&)> st)
      : spec(std::move(s)), get(std::move(g)), set(std::move(st)) {}

  // An option stored in the data member `field`, of the member's type, defaulting to the value a
  // default-made Options holds.
  template <typename T>
  BoundOption(const char* name, T Options::*field, Range range, std::string doc)
      : spec(make_spec(name, field, range, std::move(doc))),
        get([field](const Options& o) { return bound_detail::to_json(o.*field); }),
        set([field](Options& o, const nlohmann::json& value) {
          if constexpr (!std::is_same_v<T, at::Tensor>) o.*field = bound_detail::from_json<T>(value);
        }) {
    if constexpr (std::is_same_v<T, at::Tensor>) {
      set_tensor = [field](Options& o, const at::Tensor& t) { o.*field = t; };
    }
  }
  template <typename T>
  BoundOption(const char* name, T Options::*field, std::string doc)
      : BoundOption(name, field, Range::any(), std::move(doc)) {}
  template <typename T>
  BoundOption(const char* name, T Options::*field, OneOf choices, std::string doc)
      : BoundOption(name, field, Range::any(), std::move(doc)) {
    spec.choices = std::move(choices.values);
  }

  // The option has no default: a reader of options without it fails naming it.
  BoundOption&& required() && {
    spec.required = true;
    return std::move(*this);
  }

 private:
  template <typename T>
  static OptionSpec make_spec(const char* name, T Options::*field, Range range, std::string doc) {
    using Value = std::conditional_t<bound_detail::IsOptional<T>::value, typename OptionalValue<T>::type, T>;
    const Options defaults{};  // a named object: GCC 12 misreads a member of a temporary as uninitialized
    OptionSpec spec(name, bound_detail::type_of<Value>(), bound_detail::to_json(defaults.*field), range,
                    std::move(doc));
    if constexpr (bound_detail::IsOptional<T>::value) spec.nullable = true;
    if constexpr (bound_detail::type_of<Value>() == OptionType::Table) {
      spec.nested = &declared_options(Tag<Value>{}).schema();
    }
    return spec;
  }
  template <typename T>
  struct OptionalValue {
    using type = T;
  };
  template <typename T>
  struct OptionalValue<std::optional<T>> {
    using type = T;
  };
};

// The options of the declared struct in `member`, as options of the enclosing one (flat keys: a
// request that holds several options structs reads them from one table).
template <typename Options, typename Inner>
std::vector<BoundOption<Options>> lifted(Inner Options::*member) {
  std::vector<BoundOption<Options>> list;
  for (const auto& inner : declared_options(Tag<Inner>{}).options()) {
    BoundOption<Options> outer(
        inner.spec, [member, get = inner.get](const Options& o) { return get(o.*member); },
        [member, set = inner.set](Options& o, const nlohmann::json& value) { set(o.*member, value); });
    if (inner.set_tensor) {
      outer.set_tensor = [member, set = inner.set_tensor](Options& o, const at::Tensor& t) { set(o.*member, t); };
    }
    list.push_back(std::move(outer));
  }
  return list;
}

// An option of a struct with TORCH_ARG accessors (o.name() reads, o.name(value) writes):
//   LMKIT_BOUND_ACCESSOR(AwdLstmOptions, dropout, Number, double, from_up_to(0, 1), "doc")
// The default is the struct's own.
#define LMKIT_BOUND_ACCESSOR(Options, field, type, json_type, range, doc)                                      \
  ::lmkit::config::BoundOption<Options> {                                                                      \
    ::lmkit::config::OptionSpec(#field, ::lmkit::config::OptionType::type, Options().field(),                  \
                                ::lmkit::config::Range::range, doc),                                           \
        [](const Options& o) -> nlohmann::json { return o.field(); },                                          \
        [](Options& o, const nlohmann::json& v) { o.field(v.get<json_type>()); }                               \
  }

template <typename Options>
class BoundOptions {
 public:
  // `given`, when named, receives the keys a from_json call was given (not null): for a request
  // whose meaning depends on what was set, not only on the values.
  BoundOptions(std::string owner, std::vector<BoundOption<Options>> options,
               std::set<std::string> Options::*given = nullptr)
      : options_(std::move(options)), schema_(std::move(owner), specs(options_)), given_(given) {}

  const OptionSchema& schema() const { return schema_; }
  const std::vector<BoundOption<Options>>& options() const { return options_; }

  nlohmann::json to_json(const Options& o) const {
    auto j = nlohmann::json::object();
    for (const auto& b : options_) j[b.spec.name] = b.get(o);
    return j;
  }

  // `json` checked by the schema (keys in `ignored` are skipped), missing keys at their defaults.
  Options from_json(const nlohmann::json& json, const std::vector<std::string>& ignored = {}) const {
    auto o = from_checked(schema_.read(json, ignored));
    if (given_ && json.is_object()) {
      for (auto it = json.begin(); it != json.end(); ++it) {
        if (!it.value().is_null()) (o.*given_).insert(it.key());
      }
    }
    return o;
  }
  // From JSON that has passed schema().read (or read_as).
  Options from_checked(const nlohmann::json& checked) const {
    Options o;
    for (const auto& b : options_) b.set(o, checked.at(b.spec.name));
    return o;
  }

 private:
  static std::vector<OptionSpec> specs(const std::vector<BoundOption<Options>>& options) {
    std::vector<OptionSpec> list;
    for (const auto& b : options) list.push_back(b.spec);
    return list;
  }
  std::vector<BoundOption<Options>> options_;
  OptionSchema schema_;
  std::set<std::string> Options::*given_;
};

}  // namespace lmkit::config
