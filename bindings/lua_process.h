// lmkit.process: child processes and facts about this one, for the batch runner (lmkit.batch).
#pragma once
#include <lua.hpp>

namespace lmkit::lua {

void open_process(lua_State* L, int module_index);

}  // namespace lmkit::lua
