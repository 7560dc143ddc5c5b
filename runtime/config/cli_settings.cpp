#include "runtime/config/cli_settings.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "runtime/config/option_schema.h"
#include "runtime/core/error.h"

namespace lmkit::config {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

bool is_identifier(const std::string& part) {
  if (part.empty() || std::isdigit(static_cast<unsigned char>(part[0]))) return false;
  return std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

bool parse_integer(const std::string& s, std::int64_t& out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  out = v;
  return true;
}

bool parse_float(const std::string& s, double& out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (errno == ERANGE || *end != '\0') return false;
  out = v;
  return true;
}

bool parse_boolean(const std::string& s, bool& out) {
  if (s == "true" || s == "yes" || s == "on") return out = true, true;
  if (s == "false" || s == "no" || s == "off") return out = false, true;
  return false;
}

bool is_quoted(const std::string& s) {
  return s.size() >= 2 && ((s.front() == '"' && s.back() == '"') || (s.front() == '\'' && s.back() == '\''));
}

Json infer_scalar(const std::string& raw) {
  const std::string s = trim(raw);
  if (is_quoted(s)) return s.substr(1, s.size() - 2);
  std::int64_t i;
  double f;
  bool b;
  if (parse_integer(s, i)) return i;
  if (parse_float(s, f)) return f;
  if (parse_boolean(s, b)) return b;
  return s;
}

// "[a, b]" or "a,b" (unquoted) → the items' texts; otherwise false.
bool split_list(const std::string& raw, std::vector<std::string>& items) {
  std::string s = trim(raw);
  bool bracketed = s.size() >= 2 && s.front() == '[' && s.back() == ']';
  if (is_quoted(s)) return false;
  if (!bracketed && s.find(',') == std::string::npos) return false;
  if (bracketed) s = s.substr(1, s.size() - 2);
  items.clear();
  if (trim(s).empty()) return true;
  std::size_t start = 0;
  while (true) {
    const auto comma = s.find(',', start);
    items.push_back(trim(s.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

const char* type_word(const Json& v) {
  switch (v.type()) {
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    case Json::value_t::boolean: return "a boolean (true/false)";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "a list (comma-separated)";
    case Json::value_t::object: return "a table";
    default: return "any value";
  }
}

bool looks_like_integer(const std::string& s) {
  const std::size_t start = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  return s.size() > start && std::all_of(s.begin() + static_cast<std::ptrdiff_t>(start), s.end(),
                                         [](unsigned char c) { return std::isdigit(c); });
}

// Reads `text` as the type of `like`; throws ConfigError naming the setting.
Json coerce(const std::string& text, const Json& like, const Setting& setting) {
  const std::string s = trim(text);
  auto fail = [&](const std::string& why) -> ConfigError {
    return ConfigError(setting.origin() + ": '" + setting.key + "' expects " + type_word(like) + why);
  };
  // Settings are finite numbers: inf and nan are typos or accidents, as is a value beyond the
  // range (strtod's 1e400, or digits past 2^63 that would become a float).
  auto number = [&](bool integer_default) -> Json {
    std::int64_t i;
    double f;
    if (parse_integer(s, i)) return i;
    if (integer_default && looks_like_integer(s)) throw fail(" within the 64-bit integer range, got '" + s + "'");
    if (!parse_float(s, f)) {
      errno = 0;
      std::strtod(s.c_str(), nullptr);
      if (errno == ERANGE) throw fail(" within the range of a double, got '" + s + "'");
      throw fail(", got '" + s + "'");
    }
    if (!std::isfinite(f)) {
      throw ConfigError(setting.origin() + ": '" + setting.key + "' expects a finite number, got '" + s + "'");
    }
    return f;
  };
  switch (like.type()) {
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      // Lua writes `lr = 20` as an integer: an integer default still accepts any number (and
      // the option's reader decides whether it must be an integer).
      return number(true);
    case Json::value_t::number_float:
      return number(false);
    case Json::value_t::boolean: {
      bool b;
      if (parse_boolean(s, b)) return b;
      throw fail(", got '" + s + "'");
    }
    case Json::value_t::string:
      return is_quoted(s) ? s.substr(1, s.size() - 2) : s;
    case Json::value_t::array: {
      std::vector<std::string> items;
      if (!split_list(s, items)) items = {s};  // a single item is a list of one
      Json list = Json::array();
      for (const auto& item : items) {
        list.push_back(like.empty() ? infer_scalar(item) : coerce(item, like.front(), setting));
      }
      return list;
    }
    case Json::value_t::object:
      throw fail("; set its fields one by one, e.g. --set " + setting.key + ".FIELD=VALUE");
    default:
      return infer_value(s);
  }
}

std::string unknown_key_message(const Setting& setting, const std::string& prefix,
                                const std::string& part, const Json& table) {
  std::vector<std::string> known;
  for (auto it = table.begin(); it != table.end(); ++it) known.push_back(it.key());
  const std::string nearest = closest_name(part, known);
  std::string msg = setting.origin() + ": unknown setting '" + prefix + part + "'";
  if (!nearest.empty()) msg += " (did you mean '" + prefix + nearest + "'?)";
  msg += "; known here: ";
  for (std::size_t i = 0; i < known.size(); ++i) msg += (i ? ", " : "") + prefix + known[i];
  if (known.empty()) msg += "(none)";
  return msg;
}

}  // namespace

Setting parse_setting(const std::string& argument) {
  const auto eq = argument.find('=');
  if (eq == std::string::npos) {
    throw ConfigError("--set " + argument + ": expected key=value (e.g. --set lr=20)");
  }
  Setting s{trim(argument.substr(0, eq)), argument.substr(eq + 1)};
  for (const auto& part : split_key(s.key)) {
    if (!is_identifier(part)) {
      throw ConfigError("--set " + argument + ": malformed key '" + s.key +
                        "' (names of letters, digits and _, joined by dots)");
    }
  }
  return s;
}

Json infer_value(const std::string& text) {
  std::vector<std::string> items;
  if (split_list(text, items)) {
    Json list = Json::array();
    for (const auto& item : items) list.push_back(infer_scalar(item));
    return list;
  }
  return infer_scalar(text);
}

Json settings_tree(const std::vector<Setting>& settings) {
  Json tree = Json::object();
  for (const auto& setting : settings) {
    Json* node = &tree;
    const auto parts = split_key(setting.key);
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      Json& child = (*node)[parts[i]];
      if (!child.is_object()) {
        if (!child.is_null()) {
          throw ConfigError(setting.origin() + ": '" + parts[i] + "' was set to a value earlier and " +
                            "cannot also hold fields");
        }
        child = Json::object();
      }
      node = &child;
    }
    Json& leaf = (*node)[parts.back()];
    if (leaf.is_object()) {
      throw ConfigError(setting.origin() + ": '" + setting.key + "' has fields set already");
    }
    leaf = infer_value(setting.text);
  }
  return tree;
}

Json apply_settings(const Json& defaults, const std::vector<Setting>& settings) {
  if (!defaults.is_object()) throw ConfigError("defaults must be a table of named settings");
  Json result = defaults;
  for (const auto& setting : settings) {
    Json* node = &result;
    std::string prefix;
    const auto parts = split_key(setting.key);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const auto& part = parts[i];
      if (!node->is_object()) {
        throw ConfigError(setting.origin() + ": '" + prefix.substr(0, prefix.size() - 1) +
                          "' is " + type_word(*node) + ", not a table with fields");
      }
      if (!node->contains(part)) {
        throw ConfigError(unknown_key_message(setting, prefix, part, *node));
      }
      Json& child = (*node)[part];
      if (i + 1 == parts.size()) {
        child = coerce(setting.text, child, setting);
      } else {
        node = &child;
        prefix += part + ".";
      }
    }
  }
  return result;
}

const BoundOptions<ConfigureOptions>& declared_options(Tag<ConfigureOptions>) {
  static const BoundOptions<ConfigureOptions> options(
      "configure", {{"settings", &ConfigureOptions::settings, "\"key=value\" strings applied instead of the command line's"}});
  return options;
}

}  // namespace lmkit::config
