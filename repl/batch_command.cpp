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

// Calls require("lmkit.batch")[function](options) in a fresh state; the integer it returns is the
// exit status. `script` (a recipe) puts its folder on package.path, as `lmkit run` does.
int call_batch_function(const char* function, const nlohmann::json& options,
                        const std::vector<config::Setting>& settings, const std::string& script) {
  LuaStateHandle state(lua::new_lmkit_state());
  lua_State* L = state.get();
  lua::set_cli_settings(L, settings);
  set_package_path(L, script);
  if (!make_globals_strict(L)) {
    std::cerr << "lmkit: " << lua_tostring(L, -1) << "\n";
    return 1;
  }
  int status;
  {
    InterruptGuard guard(L);
    lua_getglobal(L, "require");
    lua_pushliteral(L, "lmkit.batch");
    status = lua::call_with_traceback(L, 1, 1);
    if (status == LUA_OK) {
      lua_getfield(L, -1, function);
      lua::push_json(L, options);
      status = lua::call_with_traceback(L, 1, 1);
    }
  }
  std::fflush(stdout);
  if (status != LUA_OK) {
    const char* message = lua_tostring(L, -1);
    std::cerr << "lmkit: " << (message ? message : "(error object is not a string)") << "\n";
    return 1;
  }
  return lua_isinteger(L, -1) ? static_cast<int>(lua_tointeger(L, -1)) : 0;
}

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
  return call_batch_function("submit", o, settings, options.recipe);
}

int show_batch_status(const std::string& dir) {
  return call_batch_function("status", nlohmann::json{{"dir", dir}}, {}, "");
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
