#include "runtime/models/encoder_registry.h"

#include <map>
#include <stdexcept>

#include "runtime/core/error.h"

namespace lmkit {
namespace {

// Function-local statics: registrations run during static initialization, in any order of the
// translation units, and must find the maps constructed.
std::map<std::string, EncoderKind>& registry() {
  static std::map<std::string, EncoderKind> kinds;
  return kinds;
}

std::map<std::string, config::OptionSchema>& schemas() {
  static std::map<std::string, config::OptionSchema> by_kind;
  return by_kind;
}

}  // namespace

const config::OptionSchema& EncoderKind::schema() const {
  const auto it = schemas().find(kind);
  if (it == schemas().end()) throw std::logic_error("encoder kind '" + kind + "' is not registered");
  return it->second;
}

std::string EncoderKind::title_in_text() const {
  return (title.find_first_of("AEIOUaeiou") == 0 ? "an " : "a ") + title;
}

bool register_encoder_kind(EncoderKind kind) {
  if (kind.kind.empty() || !kind.make || !kind.widths || kind.names.module.empty() || kind.names.parameter_part.empty() ||
      kind.names.output_option.empty()) {
    throw std::logic_error("an encoder kind needs a name, a factory, its widths and its parameters' names");
  }
  const std::string name = kind.kind;
  config::OptionSchema schema(kind.title, kind.options);
  if (!registry().emplace(name, std::move(kind)).second) {
    throw std::logic_error("encoder kind '" + name + "' is registered twice");
  }
  schemas().emplace(name, std::move(schema));
  return true;
}

std::vector<const EncoderKind*> registered_encoder_kinds() {
  std::vector<const EncoderKind*> kinds;
  for (const auto& [name, kind] : registry()) kinds.push_back(&kind);
  return kinds;  // std::map: sorted by name
}

std::vector<std::string> encoder_kinds() {
  std::vector<std::string> names;
  for (const auto* k : registered_encoder_kinds()) names.push_back(k->kind);
  return names;
}

const EncoderKind* find_encoder_kind(const std::string& kind) {
  const auto it = registry().find(kind);
  return it == registry().end() ? nullptr : &it->second;
}

std::string encoder_kind_choices() {
  const auto kinds = encoder_kinds();
  std::string text;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + ("\"" + kinds[i] + "\"");
  }
  return text;
}

const EncoderKind& require_encoder_kind(const std::string& name) {
  const EncoderKind* kind = find_encoder_kind(name);
  if (!kind) {
    std::string message = "model option 'encoder' must be " + encoder_kind_choices() + ", got \"" + name + "\"";
    const auto nearest = config::closest_name(name, encoder_kinds());
    if (!nearest.empty()) message += " (did you mean \"" + nearest + "\"?)";
    throw ConfigError(message);
  }
  return *kind;
}

std::vector<nlohmann::json> encoder_examples() {
  std::vector<nlohmann::json> configs;
  for (const auto* kind : registered_encoder_kinds()) {
    const auto examples = kind->examples.empty() ? std::vector<nlohmann::json>{nlohmann::json::object()} : kind->examples;
    for (auto config : examples) {
      config["encoder"] = kind->kind;
      configs.push_back(config);
    }
  }
  return configs;
}

}  // namespace lmkit
