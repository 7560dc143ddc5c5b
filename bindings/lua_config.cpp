#include "bindings/lua_config.h"

#include <algorithm>
#include <stdexcept>
#include <cmath>
#include <string>
#include <vector>

#include "bindings/entry_point.h"
#include "bindings/lua_call.h"
#include "runtime/config/json_text.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::lua {
namespace {

constexpr const char* kSettingsKey = "lmkit.cli_settings";  // registry: {{key=, text=}, ...}
constexpr const char* kSettingsReadKey = "lmkit.cli_settings_read";  // registry: true once read

void mark_settings_read(lua_State* L) {
  lua_pushboolean(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, kSettingsReadKey);
}

int mark_settings_read_binding(lua_State* L) {
  mark_settings_read(L);
  return 0;
}

bool is_sequence(lua_State* L, int position) {
  const auto n = lua_rawlen(L, position);
  lua_Unsigned count = 0;
  lua_pushnil(L);
  while (lua_next(L, position) != 0) {
    lua_pop(L, 1);
    ++count;
  }
  return count == n;
}

std::vector<config::Setting> stored_settings(lua_State* L) {
  std::vector<config::Setting> settings;
  if (lua_getfield(L, LUA_REGISTRYINDEX, kSettingsKey) == LUA_TTABLE) {
    const auto n = lua_rawlen(L, -1);
    for (lua_Unsigned k = 1; k <= n; ++k) {
      lua_rawgeti(L, -1, static_cast<lua_Integer>(k));
      lua_getfield(L, -1, "key");
      lua_getfield(L, -2, "text");
      settings.push_back({lua_tostring(L, -2), lua_tostring(L, -1)});
      lua_pop(L, 3);
    }
  }
  lua_pop(L, 1);
  return settings;
}

int lmkit_configure(lua_State* L) {
  check_type(L, 1, LUA_TTABLE, "table of defaults");
  const auto options = entry_detail::read<config::ConfigureOptions>(L, 2, entry_detail::Where{2, ""});
  std::vector<config::Setting> settings = stored_settings(L);
  if (options.settings) {
    settings.clear();
    for (const auto& text : *options.settings) settings.push_back(config::parse_setting(text));
  }
  if (lua_isnoneornil(L, 2)) mark_settings_read(L);
  const auto merged = config::apply_settings(to_json(L, 1, ""), settings);
  lua_settop(L, 0);
  if (!push_embedded_function(L, "lmkit.settings_tables", "strict")) throw std::logic_error("lmkit.settings_tables was removed from package.preload");
  push_json(L, merged);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) throw PendingLuaError();
  return 1;
}

const Function kFunctions[] = {
    {"configure", lmkit_configure,
     "lmkit.configure(defaults[, {settings={\"key=value\", ...}}]) -> table\n"
     "The defaults with the command line's --set values applied (or the settings given). Unknown keys\n"
     "and values of the wrong type are errors naming them; reading a missing key of the result is an error."},
};

}  // namespace

namespace {

// `ancestors`: the tables on the path from the outermost value to this one, to tell a cycle (a
// table inside itself) from a table merely shared by two fields.
nlohmann::json table_to_json(lua_State* L, int position, const std::string& path, std::vector<const void*>& ancestors);

nlohmann::json value_to_json(lua_State* L, int position, const std::string& path, std::vector<const void*>& ancestors) {
  position = lua_absindex(L, position);
  const std::string where = path.empty() ? "the defaults" : "'" + path + "'";
  switch (lua_type(L, position)) {
    case LUA_TNUMBER:
      if (lua_isinteger(L, position)) return static_cast<std::int64_t>(lua_tointeger(L, position));
      return lua_tonumber(L, position);
    case LUA_TBOOLEAN:
      return static_cast<bool>(lua_toboolean(L, position));
    case LUA_TSTRING: {
      std::size_t length = 0;
      const char* text = lua_tolstring(L, position, &length);
      std::string value(text, length);
      if (!config::is_valid_utf8(value)) {
        throw ConfigError(where + " is not UTF-8 text (JSON and run files hold UTF-8 strings)");
      }
      return value;
    }
    case LUA_TTABLE: {
      enter_nested_level(L, static_cast<int>(ancestors.size()), where);
      const void* table = lua_topointer(L, position);
      for (const void* ancestor : ancestors) {
        if (ancestor == table) throw ConfigError(where + " contains itself (a cycle); JSON and settings need a tree");
      }
      ancestors.push_back(table);
      auto result = table_to_json(L, position, path, ancestors);
      ancestors.pop_back();
      return result;
    }
    default:
      throw ConfigError(where + " is a " + luaL_typename(L, position) +
                        "; settings hold numbers, strings, booleans or tables of them");
  }
}

nlohmann::json table_to_json(lua_State* L, int position, const std::string& path, std::vector<const void*>& ancestors) {
  const std::string where = path.empty() ? "the defaults" : "'" + path + "'";
  if (is_sequence(L, position)) {
    nlohmann::json list = nlohmann::json::array();
    const auto n = lua_rawlen(L, position);
    for (lua_Unsigned k = 1; k <= n; ++k) {
      lua_rawgeti(L, position, static_cast<lua_Integer>(k));
      list.push_back(value_to_json(L, -1, path + "[" + integer_text(k) + "]", ancestors));
      lua_pop(L, 1);
    }
    return list;
  }
  nlohmann::json object = nlohmann::json::object();
  lua_pushnil(L);
  while (lua_next(L, position) != 0) {
    if (lua_type(L, -2) != LUA_TSTRING) {
      lua_pop(L, 2);
      throw ConfigError(where + " mixes named and numbered entries; settings tables use names only");
    }
    std::size_t key_length = 0;
    const char* key_text = lua_tolstring(L, -2, &key_length);
    const std::string key(key_text, key_length);
    if (!config::is_valid_utf8(key)) {
      lua_pop(L, 2);
      throw ConfigError(where + " has a key that is not UTF-8 text (JSON keys are UTF-8 strings)");
    }
    object[key] = value_to_json(L, -1, path.empty() ? key : path + "." + key, ancestors);
    lua_pop(L, 1);
  }
  return object;
}

void push_json_value(lua_State* L, const nlohmann::json& value, int depth) {
  switch (value.type()) {
    case nlohmann::json::value_t::number_integer:
      lua_pushinteger(L, value.get<std::int64_t>());
      break;
    case nlohmann::json::value_t::number_unsigned: {
      // Lua integers are signed 64-bit: larger values become the nearest float, not a wrapped integer.
      const auto u = value.get<std::uint64_t>();
      if (u <= static_cast<std::uint64_t>(LUA_MAXINTEGER)) {
        lua_pushinteger(L, static_cast<lua_Integer>(u));
      } else {
        lua_pushnumber(L, static_cast<lua_Number>(u));
      }
      break;
    }
    case nlohmann::json::value_t::number_float:
      lua_pushnumber(L, value.get<double>());
      break;
    case nlohmann::json::value_t::boolean:
      lua_pushboolean(L, value.get<bool>());
      break;
    case nlohmann::json::value_t::string: {
      const auto& s = value.get_ref<const std::string&>();
      lua_pushlstring(L, s.data(), s.size());
      break;
    }
    case nlohmann::json::value_t::array: {
      enter_nested_level(L, depth, "a JSON value");
      lua_createtable(L, static_cast<int>(std::min<std::size_t>(value.size(), 1u << 20)), 0);
      lua_Integer k = 0;
      for (const auto& item : value) {
        push_json_value(L, item, depth + 1);
        lua_rawseti(L, -2, ++k);
      }
      break;
    }
    case nlohmann::json::value_t::object:
      enter_nested_level(L, depth, "a JSON value");
      lua_createtable(L, 0, static_cast<int>(std::min<std::size_t>(value.size(), 1u << 20)));
      for (auto it = value.begin(); it != value.end(); ++it) {
        lua_pushlstring(L, it.key().data(), it.key().size());
        push_json_value(L, it.value(), depth + 1);
        lua_rawset(L, -3);
      }
      break;
    default:
      lua_pushnil(L);
  }
}

}  // namespace

nlohmann::json to_json(lua_State* L, int position, const std::string& path) {
  std::vector<const void*> ancestors;
  return value_to_json(L, position, path, ancestors);
}

void push_json(lua_State* L, const nlohmann::json& value) { push_json_value(L, value, 0); }

void set_cli_settings(lua_State* L, const std::vector<config::Setting>& settings) {
  lua_createtable(L, static_cast<int>(settings.size()), 0);
  lua_Integer k = 0;
  for (const auto& s : settings) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, s.key.c_str());
    lua_setfield(L, -2, "key");
    lua_pushstring(L, s.text.c_str());
    lua_setfield(L, -2, "text");
    lua_rawseti(L, -2, ++k);
  }
  lua_setfield(L, LUA_REGISTRYINDEX, kSettingsKey);
  const auto tree = config::settings_tree(settings);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  if (lua_getfield(L, -1, "lmkit") == LUA_TTABLE) {
    // Called from the executable before any script runs, outside a binding: errors are C++ ones.
    if (!push_embedded_function(L, "lmkit.settings_tables", "view")) throw std::logic_error("lmkit.settings_tables is missing");
    push_json(L, tree);
    lua_pushcfunction(L, mark_settings_read_binding);
    if (lua_pcall(L, 2, 1, 0) != LUA_OK) throw std::logic_error(lua_tostring(L, -1));
    lua_setfield(L, -2, "settings");
  }
  lua_pop(L, 2);
}

bool cli_settings_were_read(lua_State* L) {
  const bool read = lua_getfield(L, LUA_REGISTRYINDEX, kSettingsReadKey) == LUA_TBOOLEAN && lua_toboolean(L, -1);
  lua_pop(L, 1);
  return read;
}

void open_config(lua_State* L, int module_index) {
  set_functions(L, module_index, "lmkit", kFunctions);
  lua_newtable(L);
  lua_setfield(L, module_index, "settings");
}

}  // namespace lmkit::lua
