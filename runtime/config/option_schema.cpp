#include "runtime/config/option_schema.h"

#include <algorithm>
#include <cmath>

#include "runtime/config/json_numbers.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::config {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return list.empty() ? "none" : list;
}

const char* type_name(OptionType type) {
  switch (type) {
    case OptionType::Integer: return "integer";
    case OptionType::Boolean: return "boolean";
    case OptionType::String: return "string";
    case OptionType::Table: return "table";
    case OptionType::StringList: return "list of strings";
    case OptionType::Tensor: return "Tensor";
    case OptionType::Number: break;
  }
  return "number";
}

std::string default_text(const OptionSpec& o) {
  if (o.required) return "";
  if (o.default_value.is_null()) return "nil";
  if (o.type == OptionType::Table) return "{...}";
  if (o.type == OptionType::StringList) {
    std::string list;
    for (const auto& item : o.default_value) list += (list.empty() ? "" : ", ") + item.dump();
    return "{" + list + "}";
  }
  if (o.type == OptionType::String) return o.default_value.dump();
  if (o.type == OptionType::Boolean) return o.default_value.get<bool>() ? "true" : "false";
  if (o.type == OptionType::Integer) return integer_text(o.default_value.get<std::int64_t>());
  return describe_number(o.default_value.get<double>());
}

}  // namespace

bool Range::contains(double x) const {
  if (std::isnan(x)) return false;
  if (low && (low_open ? !(x > *low) : !(x >= *low))) return false;
  if (high && (high_open ? !(x < *high) : !(x <= *high))) return false;
  return true;
}

std::string Range::describe() const {
  if (low && high) {
    return "in " + std::string(low_open ? "(" : "[") + describe_number(*low) + ", " + describe_number(*high) +
           (high_open ? ")" : "]");
  }
  if (low) {
    if (*low == 0 && low_open) return "> 0";
    return (low_open ? "> " : "≥ ") + describe_number(*low);
  }
  if (high) return (high_open ? "< " : "≤ ") + describe_number(*high);
  return "";
}

OptionSchema::OptionSchema(std::string owner, std::vector<OptionSpec> options)
    : owner_(std::move(owner)), options_(std::move(options)) {
  for (const auto& o : options_) {
    if (o.type == OptionType::Table && !o.nested) throw std::logic_error(owner_ + " option '" + o.name + "' has no schema");
    if (o.required || o.type == OptionType::Tensor) continue;
    // A declaration error is a programming error: checked at construction, named in full.
    try {
      check(o.name, o.default_value);
    } catch (const ConfigError& e) {
      throw std::logic_error("the default of " + owner_ + " option '" + o.name + "' is not valid: " + e.what());
    }
  }
}

const OptionSpec* OptionSchema::find(const std::string& key) const {
  for (const auto& o : options_) {
    if (o.name == key) return &o;
  }
  return nullptr;
}

std::vector<std::string> OptionSchema::names() const {
  std::vector<std::string> names;
  for (const auto& o : options_) names.push_back(o.name);
  return names;
}

nlohmann::json OptionSchema::check(const std::string& key, const nlohmann::json& value) const {
  return check_as(key, value, owner_, "");
}

nlohmann::json OptionSchema::check_as(const std::string& key, const nlohmann::json& value, const std::string& owner,
                                      const std::string& prefix) const {
  const OptionSpec* spec = find(key);
  if (!spec) {
    // The nearest name by the key alone; the tail after "unknown option 'key'" (a key may hold " (").
    const auto text = unknown_key_text("option", key, names());
    throw ConfigError(owner + " option '" + prefix + key + "' is unknown" + text.substr(("unknown option '" + key + "'").size()));
  }
  const std::string what = owner + " option '" + prefix + key + "'";
  if (value.is_null() && spec->nullable) return value;
  switch (spec->type) {
    case OptionType::Table:
      // An empty Lua table reads as an empty list.
      if (value.is_array() && value.empty()) return spec->nested->read_as(nlohmann::json::object(), {}, owner, prefix + key + ".");
      if (!value.is_object()) throw ConfigError(what + " must be a table of named options, got " + value.dump());
      return spec->nested->read_as(value, {}, owner, prefix + key + ".");
    case OptionType::StringList: {
      const auto items = value.is_string() ? nlohmann::json::array({value}) : value;
      if (!items.is_array()) throw ConfigError(what + " must be a string or a list of strings, got " + value.dump());
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (!items[i].is_string()) {
          throw ConfigError(what + ": entry " + integer_text(i + 1) + " is not a string but " + items[i].dump());
        }
      }
      return items;
    }
    case OptionType::Tensor:
      throw ConfigError(what + " must be a Tensor, got " + value.dump());
    case OptionType::Boolean:
      if (!value.is_boolean()) throw ConfigError(what + " must be a boolean, got " + value.dump());
      return value;
    case OptionType::String: {
      if (!value.is_string()) throw ConfigError(what + " must be a string, got " + value.dump());
      const auto text = value.get<std::string>();
      if (!spec->choices.empty() && std::find(spec->choices.begin(), spec->choices.end(), text) == spec->choices.end()) {
        std::string list;
        for (const auto& c : spec->choices) list += (list.empty() ? "\"" : ", \"") + c + "\"";
        const auto nearest = closest_name(text, spec->choices);
        throw ConfigError(what + " must be one of " + list + ", got \"" + text + "\"" +
                          (nearest.empty() ? "" : " (did you mean \"" + nearest + "\"?)"));
      }
      return value;
    }
    case OptionType::Integer:
    case OptionType::Number:
      break;
  }
  double number = 0;
  nlohmann::json checked;
  if (spec->type == OptionType::Integer) {
    if (spec->range.low && *spec->range.low == 0 && !spec->range.low_open && !spec->range.high) {
      const auto u = json_unsigned(value, what);  // up to 2^64 − 1 (seeds)
      number = static_cast<double>(u);
      checked = u;
    } else {
      const auto i = json_integer(value, what);
      number = static_cast<double>(i);
      checked = i;
    }
  } else {
    number = json_number(value, what);
    checked = number;
  }
  if (!spec->range.contains(number)) {
    const auto& r = spec->range;
    const bool positive = r.low && *r.low == 0 && r.low_open && !r.high;
    // Only NaN lies outside a range without bounds: it has no constraint to name.
    const std::string constraint = positive ? "positive" : r.describe().empty() ? "a finite number" : r.describe();
    throw ConfigError(what + " must be " + constraint + ", got " + describe_number(number));
  }
  if (!std::isfinite(number)) throw ConfigError(what + " must be finite, got " + describe_number(number));
  return checked;
}

nlohmann::json OptionSchema::read(const nlohmann::json& given, const std::vector<std::string>& ignored) const {
  return read_as(given, ignored, owner_, "");
}

nlohmann::json OptionSchema::read_as(const nlohmann::json& given, const std::vector<std::string>& ignored,
                                     const std::string& owner, const std::string& prefix) const {
  if (!given.is_object()) throw ConfigError(owner + " options must be an object, got " + given.dump());
  nlohmann::json result = nlohmann::json::object();
  for (auto it = given.begin(); it != given.end(); ++it) {
    if (std::find(ignored.begin(), ignored.end(), it.key()) != ignored.end()) {
      result[it.key()] = it.value();
      continue;
    }
    // null is "not set" (JSON's way of writing an absent optional); the default applies
    const OptionSpec* spec = find(it.key());
    if (spec && it.value().is_null() && !spec->nullable) continue;
    result[it.key()] = check_as(it.key(), it.value(), owner, prefix);
  }
  for (const auto& o : options_) {
    const bool missing = !result.contains(o.name) || result[o.name].is_null();
    // A tensor never arrives in JSON: whoever sets it apart checks that it was given.
    if (missing && o.required && o.type != OptionType::Tensor) {
      throw ConfigError(owner + " option '" + prefix + o.name + "' is required (" + o.doc + ")");
    }
    if (!result.contains(o.name) || (result[o.name].is_null() && !o.nullable)) result[o.name] = o.default_value;
  }
  return result;
}

std::string OptionSchema::signature() const {
  if (options_.empty()) return "()";
  std::string text = "{";
  for (const auto& o : options_) text += (text.size() > 1 ? ", " : "") + o.name + "=" + default_text(o);
  return text + "}";
}

std::string OptionSchema::describe(const std::string& indent) const {
  std::string text;
  for (const auto& o : options_) {
    std::string kind = type_name(o.type);
    const auto range = o.range.describe();
    if (!range.empty()) kind += " " + range;
    text += indent + o.name + " (" + kind + (o.required ? ", required" : ", default " + default_text(o)) + "): " + o.doc + "\n";
    if (o.nested) text += o.nested->describe(indent + "  ");
  }
  return text;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

std::string closest_name(const std::string& key, const std::vector<std::string>& known) {
  std::string nearest;
  std::size_t best = 3;  // suggest only close matches
  for (const auto& k : known) {
    const auto d = edit_distance(key, k);
    if (d < best) best = d, nearest = k;
  }
  return nearest;
}

std::string unknown_key_text(const std::string& what, const std::string& key, const std::vector<std::string>& known) {
  std::string text = "unknown " + what + " '" + key + "'";
  const auto nearest = closest_name(key, known);
  text += " (";
  if (!nearest.empty()) text += "did you mean '" + nearest + "'?; ";
  return text + "accepted: " + join(known) + ")";
}

std::string unknown_option_text(const std::string& owner, const std::string& key, const std::vector<std::string>& known) {
  const auto text = unknown_key_text("option", key, known);  // "unknown option 'x' (...)"
  return owner + " option '" + key + "' is unknown" + text.substr(("unknown option '" + key + "'").size());
}

}  // namespace lmkit::config
