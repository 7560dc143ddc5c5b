// lmkit.analysis: matrix ranks and spectra for Lua (more analyses arrive with the models).
#pragma once
#include <lua.hpp>

namespace lmkit::lua {

void open_analysis(lua_State* L, int module_index);

}  // namespace lmkit::lua
