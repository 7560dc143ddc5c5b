// Settings from the command line (--set key=value) as Lua sees them: lmkit.settings (typed, inferred)
// and lmkit.configure(defaults) (strictly merged into a recipe's defaults, see bindings/settings.h).
#pragma once
#include <lua.hpp>

#include <vector>

#include "runtime/config/cli_settings.h"

namespace lmkit::lua {

// Stores the settings for lmkit.configure and sets lmkit.settings in the loaded lmkit module.
void set_cli_settings(lua_State* L, const std::vector<config::Setting>& settings);

// Whether the script read the command line's settings (lmkit.configure, or any field or pairs()
// of lmkit.settings): `lmkit run` warns when --set values were given and never read.
bool cli_settings_were_read(lua_State* L);

// Lua value at `position` (numbers, strings, booleans, tables of them) to JSON and back.
// An empty table becomes an empty list. Throws ConfigError naming `path` for other values.
nlohmann::json to_json(lua_State* L, int position, const std::string& path);
void push_json(lua_State* L, const nlohmann::json& value);

// Adds lmkit.configure to the module table at module_index.
void open_config(lua_State* L, int module_index);

}  // namespace lmkit::lua
