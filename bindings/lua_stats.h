// lmkit.stats: the statistics of runtime/stats for Lua.
#pragma once
#include <lua.hpp>

namespace lmkit::lua {

// Adds the `stats` submodule to the module table at module_index.
void open_stats(lua_State* L, int module_index);

}  // namespace lmkit::lua
