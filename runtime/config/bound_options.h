// An options struct bound to its OptionSchema: each option's declaration next to the member it
// reads and writes, so that the struct's JSON round trip and its checks come from one table.
//
//   BoundOptions<TrainOptions> bound("training", {member({"lr", OptionType::Number, d.lr, ...}, &TrainOptions::lr), ...});
//   bound.to_json(o);  bound.from_json(j);  bound.schema().describe();
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/config/option_schema.h"

namespace lmkit::config {

template <typename Options>
struct BoundOption {
  OptionSpec spec;
  std::function<nlohmann::json(const Options&)> get;
  // The value has passed the schema: its type is right.
  std::function<void(Options&, const nlohmann::json&)> set;
};

// An option stored in a plain data member (std::optional<double> is null when unset).
template <typename Options, typename T>
BoundOption<Options> member(OptionSpec spec, T Options::*field) {
  auto get = [field](const Options& o) -> nlohmann::json {
    if constexpr (std::is_same_v<T, std::optional<double>>) {
      return o.*field ? nlohmann::json(*(o.*field)) : nlohmann::json();
    } else {
      return o.*field;
    }
  };
  auto set = [field](Options& o, const nlohmann::json& value) {
    if constexpr (std::is_same_v<T, std::optional<double>>) {
      o.*field = value.is_null() ? std::nullopt : std::optional<double>(value.get<double>());
    } else {
      o.*field = value.template get<T>();
    }
  };
  return {std::move(spec), get, set};
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
  BoundOptions(std::string owner, std::vector<BoundOption<Options>> options)
      : options_(std::move(options)), schema_(std::move(owner), specs(options_)) {}

  const OptionSchema& schema() const { return schema_; }

  nlohmann::json to_json(const Options& o) const {
    auto j = nlohmann::json::object();
    for (const auto& b : options_) j[b.spec.name] = b.get(o);
    return j;
  }

  // `json` checked by the schema (keys in `ignored` are skipped), missing keys at their defaults.
  Options from_json(const nlohmann::json& json, const std::vector<std::string>& ignored = {}) const {
    const auto checked = schema_.read(json, ignored);
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
};

}  // namespace lmkit::config
