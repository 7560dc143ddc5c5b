// Command-line settings (`lmkit run recipe.lua --set lr=20 --set heads=softmax,mos --set model.nhid=960`)
// and their strict merge into a recipe's defaults.
//
// A setting's value is kept as text until it meets the default it overrides, whose type decides
// how the text is read (so `--set name=123` stays a string where `name` is a string). Without a
// default, the type is inferred: integer, float, true/false, a comma-separated list of those, or a
// string ("quoted" to keep commas).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/config/bound_options.h"

namespace lmkit::config {

using Json = nlohmann::json;

struct Setting {
  std::string key;  // dotted path into nested tables: "model.nhid"
  std::string text;
  std::string origin() const { return "--set " + key + "=" + text; }
};

// Parses "key=value"; throws ConfigError for a missing '=', an empty or malformed key.
Setting parse_setting(const std::string& argument);

// The typed value of `text` on its own (the inference rules above).
Json infer_value(const std::string& text);

// All settings as a nested object of inferred values.
Json settings_tree(const std::vector<Setting>& settings);

// lmkit.configure's options: the settings to apply instead of the command line's.
struct ConfigureOptions {
  std::optional<std::vector<std::string>> settings;  // "key=value" each
};
const BoundOptions<ConfigureOptions>& declared_options(Tag<ConfigureOptions>);

// `defaults` with `settings` applied. Every key must exist in defaults (an unknown one is an error
// naming it, the known keys and the nearest match); every value must read as the default's type.
// Keys whose default is null accept any inferred value.
Json apply_settings(const Json& defaults, const std::vector<Setting>& settings);

}  // namespace lmkit::config
