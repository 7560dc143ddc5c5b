// lmkit.fs: the few file-system operations recipes need, through std::filesystem (no shell: a path
// with quotes, spaces or a leading dash is just a path).
#pragma once
#include <lua.hpp>

namespace lmkit::lua {

// Adds lmkit.fs to the module table at module_index.
void open_fs(lua_State* L, int module_index);

}  // namespace lmkit::lua
