#include "runtime/heads/head_registry.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "runtime/core/error.h"

namespace lmkit {
namespace {

// A function-local static: registrations run during static initialization, in any order of the
// translation units, and must find the map constructed.
std::map<std::string, HeadKind>& registry() {
  static std::map<std::string, HeadKind> kinds;
  return kinds;
}

std::map<std::string, config::OptionSchema>& schemas() {
  static std::map<std::string, config::OptionSchema> by_kind;
  return by_kind;
}

std::string known_kinds() {
  std::string list;
  for (const auto* k : registered_head_kinds()) list += (list.empty() ? "" : ", ") + k->kind;
  return list;
}

}  // namespace

std::string HeadKind::doc() const {
  std::string text = "lmkit.heads." + kind + schema().signature() + " -> HeadSpec\n" + summary;
  if (!options.empty()) text += "\nOptions:\n" + schema().describe();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

const config::OptionSchema& HeadKind::schema() const {
  const auto it = schemas().find(kind);
  if (it == schemas().end()) throw std::logic_error("head kind '" + kind + "' is not registered");
  return it->second;
}

bool register_head_kind(HeadKind kind) {
  if (kind.kind.empty() || !kind.make) throw std::logic_error("a head kind needs a name and a factory");
  const std::string name = kind.kind;
  config::OptionSchema schema("head '" + name + "'", kind.options);
  if (!registry().emplace(name, std::move(kind)).second) {
    throw std::logic_error("head kind '" + name + "' is registered twice");
  }
  schemas().emplace(name, std::move(schema));
  return true;
}

std::vector<nlohmann::json> head_examples() {
  std::vector<nlohmann::json> configs;
  for (const auto* kind : registered_head_kinds()) {
    const auto examples = kind->examples.empty() ? std::vector<nlohmann::json>{nlohmann::json::object()} : kind->examples;
    for (auto config : examples) {
      config["kind"] = kind->kind;
      configs.push_back(read_head_config(config));
    }
  }
  return configs;
}

std::vector<const HeadKind*> registered_head_kinds() {
  std::vector<const HeadKind*> kinds;
  for (const auto& [name, kind] : registry()) kinds.push_back(&kind);
  return kinds;  // std::map: sorted by name
}

const HeadKind* find_head_kind(const std::string& kind) {
  const auto it = registry().find(kind);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> head_kinds() {
  std::vector<std::string> names;
  for (const auto* k : registered_head_kinds()) names.push_back(k->kind);
  return names;
}

std::string head_kinds_with(bool HeadCapabilities::*capability) {
  std::string list;
  for (const auto* k : registered_head_kinds()) {
    if (k->capabilities.*capability) list += (list.empty() ? "" : ", ") + k->kind;
  }
  return list;
}

nlohmann::json read_head_config(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("kind") || !config.at("kind").is_string()) {
    throw ConfigError("a head config is an object with a string 'kind', got " + config.dump());
  }
  return require_head_kind(config.at("kind").get<std::string>()).schema().read(config, {"kind"});
}

const HeadKind& require_head_kind(const std::string& name) {
  const HeadKind* kind = find_head_kind(name);
  if (!kind) {
    std::string message = "unknown head kind '" + name + "'";
    const auto nearest = config::closest_name(name, head_kinds());
    if (!nearest.empty()) message += " (did you mean '" + nearest + "'?)";
    throw ConfigError(message + "; known: " + known_kinds());
  }
  return *kind;
}

Head make_head(const nlohmann::json& config, int64_t in_dim, int64_t latent_dim) {
  auto values = read_head_config(config);
  const HeadKind* kind = find_head_kind(values.at("kind").get<std::string>());
  const auto described = values.dump();
  try {
    return kind->make(HeadSettings(std::move(values), in_dim, latent_dim));
  } catch (const c10::Error& e) {
    // The encoder's memory is estimated before it is built (awd_lstm.cpp); a head's size depends on
    // its own options (mos{K = 1e9}), so a failed allocation is told with the head that asked.
    TORCH_CHECK(false, "making the head ", described, ": ", e.what_without_backtrace());
  }
}

bool HeadImpl::projects() const {
  const HeadKind* k = find_head_kind(kind());
  return k && k->capabilities.projects;
}

const std::vector<HeadCapabilityDeclaration>& head_capability_declarations() {
#define LMKIT_HEAD_CAPABILITY_DECLARATION(name, doc) {#name, &HeadCapabilities::name, doc},
  static const std::vector<HeadCapabilityDeclaration> declarations{LMKIT_HEAD_CAPABILITIES(LMKIT_HEAD_CAPABILITY_DECLARATION)};
#undef LMKIT_HEAD_CAPABILITY_DECLARATION
  return declarations;
}

HeadInfo head_info(const std::string& name) {
  const HeadKind& kind = require_head_kind(name);
  HeadInfo info;
  info.kind = kind.kind;
  info.summary = kind.summary;
#define LMKIT_HEAD_CAPABILITY_COPY(name, doc) info.name = kind.capabilities.name;
  LMKIT_HEAD_CAPABILITIES(LMKIT_HEAD_CAPABILITY_COPY)
#undef LMKIT_HEAD_CAPABILITY_COPY
  for (const auto& option : kind.options) info.options.push_back({option.name, option.default_value, option.doc});
  return info;
}

}  // namespace lmkit
