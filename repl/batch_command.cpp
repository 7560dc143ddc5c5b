#include "repl/batch_command.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bindings/lua_call.h"
#include "bindings/lua_config.h"
#include "bindings/lua_module.h"
#include "repl/interrupt.h"
#include "repl/lua_state_handle.h"
#include "repl/package_path.h"
#include "repl/script_runner.h"
#include "runtime/config/json_text.h"
#include "runtime/core/error.h"

namespace lmkit::repl {
namespace {

nlohmann::json read_manifest(const std::string& dir) {
  const std::string path = dir + "/batch/manifest.json";
  std::ifstream in(path);
  if (!in) {
    throw EnvironmentError(path + " is missing: '" + dir + "' is not a batch folder (`lmkit batch RECIPE --set out=" +
                           dir + "` makes one)");
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    return config::parse_json_text(text.str());
  } catch (const config::JsonTextError& e) {
    throw EnvironmentError(path + " is damaged (" + e.what() +
                           "); `lmkit batch` with the same recipe and settings rewrites it");
  }
}

}  // namespace

int run_batch(const BatchOptions& options) {
  std::vector<config::Setting> settings;
  for (const auto& s : options.sets) settings.push_back(config::parse_setting(s));
  nlohmann::json o = options.options;
  o["recipe"] = options.recipe;
  o["sets"] = options.sets;
  return call_lmkit_function("lmkit.batch", "submit", o, settings, options.recipe);
}

int show_batch_status(const std::string& dir) {
  return call_lmkit_function("lmkit.batch", "status", nlohmann::json{{"dir", dir}}, {}, "");
}

int report_batch(const std::string& dir) {
  const auto manifest = read_manifest(dir);
  if (!manifest.contains("recipe") || !manifest["recipe"].is_string() || !manifest.contains("sets") ||
      !manifest["sets"].is_array()) {
    throw EnvironmentError(dir + "/batch/manifest.json lacks 'recipe' or 'sets'; `lmkit batch` with the same recipe and "
                           "settings rewrites it");
  }
  ScriptOptions script;
  script.path = manifest["recipe"].get<std::string>();
  for (const auto& s : manifest["sets"]) script.settings.push_back(config::parse_setting(s.get<std::string>()));
  const std::string out = manifest.value("out", dir);
  script.settings.push_back(config::parse_setting("out=" + out));
  script.settings.push_back(config::parse_setting("report_only=true"));
  return run_script(script);
}

}  // namespace lmkit::repl
