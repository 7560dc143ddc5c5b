#include "bindings/lua_config.h"

#include <cmath>
#include <string>

#include "bindings/lua_call.h"
#include "runtime/core/error.h"

namespace lmkit::lua {
namespace {

constexpr const char* kSettingsKey = "lmkit.cli_settings";  // registry: {{key=, text=}, ...}

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

// Recipes fail loudly: reading a setting that does not exist is an error naming it.
const char* kStrictConfigLua = R"lua(
return function(cfg)
  local function protect(t, path)
    local known = {}
    for k, v in pairs(t) do
      known[#known + 1] = tostring(k)
      if type(v) == "table" and next(v) ~= nil and type(next(v)) == "string" then protect(v, path .. k .. ".") end
    end
    table.sort(known)
    return setmetatable(t, {__index = function(_, key)
      error(("no setting '%s%s' (known: %s)"):format(path, tostring(key), table.concat(known, ", ")), 2)
    end})
  end
  return protect(cfg, "")
end
)lua";

int lmkit_configure(lua_State* L) {
  check_type(L, 1, LUA_TTABLE, "table of defaults");
  Options options(L, 2, {"settings"});
  std::vector<config::Setting> settings = stored_settings(L);
  if (options.present()) {
    lua_getfield(L, 2, "settings");
    if (!lua_isnil(L, -1)) {
      if (lua_type(L, -1) != LUA_TTABLE) throw ArgError(2, "option 'settings' must be a list of \"key=value\" strings");
      settings.clear();
      const auto n = lua_rawlen(L, -1);
      for (lua_Unsigned k = 1; k <= n; ++k) {
        lua_rawgeti(L, -1, static_cast<lua_Integer>(k));
        if (lua_type(L, -1) != LUA_TSTRING) throw ArgError(2, "settings entries must be \"key=value\" strings");
        settings.push_back(config::parse_setting(lua_tostring(L, -1)));
        lua_pop(L, 1);
      }
    }
    lua_pop(L, 1);
  }
  const auto merged = config::apply_settings(to_json(L, 1, ""), settings);
  lua_settop(L, 0);
  if (luaL_loadstring(L, kStrictConfigLua) != LUA_OK) throw PendingLuaError();
  if (lua_pcall(L, 0, 1, 0) != LUA_OK) throw PendingLuaError();
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

config::Json to_json(lua_State* L, int position, const std::string& path) {
  position = lua_absindex(L, position);
  const std::string where = path.empty() ? "the defaults" : "'" + path + "'";
  switch (lua_type(L, position)) {
    case LUA_TNUMBER:
      if (lua_isinteger(L, position)) return static_cast<std::int64_t>(lua_tointeger(L, position));
      return lua_tonumber(L, position);
    case LUA_TBOOLEAN:
      return static_cast<bool>(lua_toboolean(L, position));
    case LUA_TSTRING:
      return std::string(lua_tostring(L, position));
    case LUA_TTABLE: {
      if (is_sequence(L, position)) {
        config::Json list = config::Json::array();
        const auto n = lua_rawlen(L, position);
        for (lua_Unsigned k = 1; k <= n; ++k) {
          lua_rawgeti(L, position, static_cast<lua_Integer>(k));
          list.push_back(to_json(L, -1, path + "[" + std::to_string(k) + "]"));
          lua_pop(L, 1);
        }
        return list;
      }
      config::Json object = config::Json::object();
      lua_pushnil(L);
      while (lua_next(L, position) != 0) {
        if (lua_type(L, -2) != LUA_TSTRING) {
          lua_pop(L, 2);
          throw ConfigError(where + " mixes named and numbered entries; settings tables use names only");
        }
        const std::string key = lua_tostring(L, -2);
        object[key] = to_json(L, -1, path.empty() ? key : path + "." + key);
        lua_pop(L, 1);
      }
      return object;
    }
    default:
      throw ConfigError(where + " is a " + luaL_typename(L, position) +
                        "; settings hold numbers, strings, booleans or tables of them");
  }
}

void push_json(lua_State* L, const config::Json& value) {
  switch (value.type()) {
    case config::Json::value_t::number_integer:
    case config::Json::value_t::number_unsigned:
      lua_pushinteger(L, value.get<std::int64_t>());
      break;
    case config::Json::value_t::number_float:
      lua_pushnumber(L, value.get<double>());
      break;
    case config::Json::value_t::boolean:
      lua_pushboolean(L, value.get<bool>());
      break;
    case config::Json::value_t::string: {
      const auto& s = value.get_ref<const std::string&>();
      lua_pushlstring(L, s.data(), s.size());
      break;
    }
    case config::Json::value_t::array: {
      lua_createtable(L, static_cast<int>(value.size()), 0);
      lua_Integer k = 0;
      for (const auto& item : value) {
        push_json(L, item);
        lua_rawseti(L, -2, ++k);
      }
      break;
    }
    case config::Json::value_t::object:
      lua_createtable(L, 0, static_cast<int>(value.size()));
      for (auto it = value.begin(); it != value.end(); ++it) {
        push_json(L, it.value());
        lua_setfield(L, -2, it.key().c_str());
      }
      break;
    default:
      lua_pushnil(L);
  }
}

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
    push_json(L, tree);
    lua_setfield(L, -2, "settings");
  }
  lua_pop(L, 2);
}

void open_config(lua_State* L, int module_index) {
  set_functions(L, module_index, "lmkit", kFunctions);
  lua_newtable(L);
  lua_setfield(L, module_index, "settings");
}

}  // namespace lmkit::lua
