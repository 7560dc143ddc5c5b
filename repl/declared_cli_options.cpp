#include "repl/declared_cli_options.h"

#include <algorithm>
#include <cmath>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::repl {
namespace {

using config::OptionType;

bool is_positional(const config::OptionSpec& spec) { return spec.required && spec.type == OptionType::String; }

// The whole of `text` as a number, or nothing ("12x", "", "nan" pass through to the schema's check).
bool whole_number(const std::string& text, double& value) {
  std::size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  return used > 0 && used == text.size();
}

std::string default_text(const config::OptionSpec& spec) {
  const auto& d = spec.default_value;
  if (d.is_null() || (d.is_array() && d.empty()) || (d.is_boolean() && !d.get<bool>())) return "";
  if (d.is_number()) return describe_number(d.get<double>());
  return d.is_string() ? d.get<std::string>() : d.dump();
}

}  // namespace

std::string DeclaredCliOptions::flag_of(const config::OptionSpec& spec) {
  if (is_positional(spec)) return spec.name;
  std::string name = spec.name;
  if (spec.type == OptionType::StringList && name.size() > 1 && name.back() == 's') name.pop_back();
  std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

nlohmann::json option_value(const config::OptionSchema& schema, const config::OptionSpec& spec, const std::string& text) {
  nlohmann::json value = text;
  if (spec.type == OptionType::Integer || spec.type == OptionType::Number) {
    double number = 0;
    if (!whole_number(text, number)) {
      throw ConfigError(schema.owner() + " option '" + spec.name + "' must be " +
                        (spec.type == OptionType::Integer ? "an integer" : "a number") + ", got " + text);
    }
    if (spec.type == OptionType::Integer && (number != std::floor(number) || std::abs(number) > 9.0e15)) {
      throw ConfigError(schema.owner() + " option '" + spec.name + "' must be an integer, got " + text);
    }
    value = spec.type == OptionType::Integer ? nlohmann::json(static_cast<std::int64_t>(number)) : nlohmann::json(number);
  }
  return schema.check(spec.name, value);
}

DeclaredCliOptions::DeclaredCliOptions(CLI::App* command, const config::OptionSchema& schema) : schema_(schema) {
  for (const auto& spec : schema.options()) {
    const auto flag = flag_of(spec);
    std::string doc = spec.doc;
    if (!doc.empty()) doc[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(doc[0])));
    CLI::Option* option = nullptr;
    if (spec.type == OptionType::Boolean) {
      option = command->add_flag(flag, flags_[spec.name], doc);
    } else if (spec.type == OptionType::StringList) {
      option = command->add_option(flag, lists_[spec.name], doc + " (repeatable)")
                   ->expected(1)
                   ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    } else {
      option = command->add_option(flag, texts_[spec.name], doc);
      const auto* declared = &spec;
      const auto* owner = &schema;
      option->check(CLI::Validator(
          [declared, owner](std::string& text) -> std::string {
            try {
              option_value(*owner, *declared, text);
            } catch (const ConfigError& e) {
              return e.what();
            }
            return std::string();
          },
          ""));
      option->type_name(spec.type == OptionType::Integer ? "INT" : spec.type == OptionType::Number ? "NUMBER" : "TEXT");
      if (!spec.choices.empty()) {
        std::string list;
        for (const auto& c : spec.choices) list += (list.empty() ? "" : "|") + c;
        option->type_name(list);
      }
    }
    if (is_positional(spec)) option->required();
    const auto shown = default_text(spec);
    if (!shown.empty()) option->default_str(shown);
    options_[spec.name] = option;
  }
}

nlohmann::json DeclaredCliOptions::given() const {
  nlohmann::json given = nlohmann::json::object();
  for (const auto& spec : schema_.options()) {
    if (options_.at(spec.name)->count() == 0) continue;
    if (spec.type == OptionType::Boolean) {
      given[spec.name] = flags_.at(spec.name);
    } else if (spec.type == OptionType::StringList) {
      given[spec.name] = lists_.at(spec.name);
    } else {
      given[spec.name] = option_value(schema_, spec, texts_.at(spec.name));
    }
  }
  return given;
}

}  // namespace lmkit::repl
