// Opening lmkit in a Lua state: the C module entry point and the pieces it is built from.
#pragma once
#include <lua.hpp>

#include <string>
#include <vector>

#include "runtime/config/cli_settings.h"

extern "C" int luaopen_lmkit(lua_State* L);

namespace lmkit::lua {

// Adds lmkit's top-level functions (tensor constructors, seed, ...) to the table at module_index.
void open_lmkit_functions(lua_State* L, int module_index);

// A state with the standard libraries and lmkit loaded (global `lmkit`, `help`), ready for a
// recipe or the REPL. Throws std::runtime_error if lmkit cannot be opened.
lua_State* new_lmkit_state();

}  // namespace lmkit::lua
