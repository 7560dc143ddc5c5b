// lmkit.train / lmkit.resume / lmkit.open_run / lmkit.evaluate / lmkit.dynamic_evaluate and the
// Run object: the training protocol of runtime/training/ from Lua, with callbacks written in Lua.
#pragma once
#include <lua.hpp>

namespace lmkit::lua {

// Registers the Run and TrainControl metatables and adds the functions to the module table.
void open_train(lua_State* L, int module_index);

}  // namespace lmkit::lua
