// A declared set of named options: each with its type, default, allowed range and doc line.
//
// One schema is the single source of an owner's options (a head kind, a model, a training run):
// reading a JSON object through it rejects unknown keys (naming the closest known one), wrong
// types and values out of range with a ConfigError that names the owner, the key and the value,
// and fills in the defaults; its doc and signature are derived from the same declaration, so the
// Lua doc strings, error messages and configs cannot drift apart.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lmkit::config {

// Table: a nested set of options with a schema of its own ({window=, theta=}); StringList: a list
// of strings (a lone string is a list of one); Tensor: a tensor, which a JSON config cannot hold
// (the Lua reader sets it apart; in JSON the option is always null).
enum class OptionType { Number, Integer, Boolean, String, Table, StringList, Tensor };

class OptionSchema;

// An interval of allowed numbers; open or closed at each end; NaN is never inside.
struct Range {
  std::optional<double> low, high;
  bool low_open = false, high_open = false;

  static Range any() { return {}; }
  static Range positive() { return {0.0, std::nullopt, true, false}; }
  static Range non_negative() { return {0.0, std::nullopt, false, false}; }
  static Range at_least(double low) { return {low, std::nullopt, false, false}; }
  // [low, high)
  static Range from_up_to(double low, double high) { return {low, high, false, true}; }

  bool contains(double x) const;
  // "> 0", "≥ 1", "in [0, 1)"; empty for any().
  std::string describe() const;
};

struct OptionSpec {
  OptionSpec(std::string name, OptionType type, nlohmann::json default_value, Range range, std::string doc)
      : name(std::move(name)), type(type), default_value(std::move(default_value)), range(range), doc(std::move(doc)) {}
  // A string option that takes one of `values`.
  OptionSpec& one_of(std::vector<std::string> values) {
    choices = std::move(values);
    return *this;
  }
  // An option that may be null ("not set"); its default may then be null too.
  OptionSpec& or_null() {
    nullable = true;
    return *this;
  }
  // An option without a default: reading options that lack it is an error naming it.
  OptionSpec& required_option() {
    required = true;
    return *this;
  }

  std::string name;
  OptionType type = OptionType::Number;
  nlohmann::json default_value;  // of `type` (or null when nullable)
  Range range;
  std::string doc;               // one line: what the option does
  std::vector<std::string> choices;
  bool nullable = false;
  bool required = false;
  const OptionSchema* nested = nullptr;  // Table: the nested options' schema (static storage)
};

class OptionSchema {
 public:
  // owner names the options' owner in messages: "head 'gss'" → "head 'gss' option 'k' must be ...".
  OptionSchema(std::string owner, std::vector<OptionSpec> options);

  // `given` checked against the schema (an object; keys in `ignored`, e.g. "kind", pass through
  // unchecked) and completed with the defaults (null counts as not given, unless the option is
  // nullable). Integers written as 2.0 become 2; every number is finite; booleans are booleans.
  nlohmann::json read(const nlohmann::json& given, const std::vector<std::string>& ignored = {}) const;
  // The checked value of one option (no defaults): the reader the Lua functions use on each key.
  nlohmann::json check(const std::string& key, const nlohmann::json& value) const;
  // As read and check, for options nested in another owner's: messages name `owner` and the path,
  // "evaluate option 'cache.window' must be ≥ 1, got 0".
  nlohmann::json read_as(const nlohmann::json& given, const std::vector<std::string>& ignored, const std::string& owner,
                         const std::string& prefix) const;
  nlohmann::json check_as(const std::string& key, const nlohmann::json& value, const std::string& owner,
                          const std::string& prefix) const;

  const std::string& owner() const { return owner_; }
  const std::vector<OptionSpec>& options() const { return options_; }
  const OptionSpec* find(const std::string& key) const;
  std::vector<std::string> names() const;
  // "{c=0, k=2}" (the defaults, as a Lua table constructor); "()" without options.
  std::string signature() const;
  // One line per option: "  k (number > 0, default 2): the slope below c"; a table's options follow
  // it, indented once more.
  std::string describe(const std::string& indent = "  ") const;

 private:
  std::string owner_;
  std::vector<OptionSpec> options_;
};

// The name in `known` nearest to `key` by edit distance when it is close (≤ 2 edits), else "".
std::string closest_name(const std::string& key, const std::vector<std::string>& known);
std::size_t edit_distance(const std::string& a, const std::string& b);
// "unknown option 'kk' (did you mean 'k'?; accepted: c, k)" — the tail of an unknown-key message.
std::string unknown_key_text(const std::string& what, const std::string& key, const std::vector<std::string>& known);
// "lmkit.plot.line option 'lables' is unknown (did you mean 'labels'?; accepted: ...)": every owner's
// unknown-option message, C++'s and the Lua library's (lmkit.check_options).
std::string unknown_option_text(const std::string& owner, const std::string& key, const std::vector<std::string>& known);

}  // namespace lmkit::config
