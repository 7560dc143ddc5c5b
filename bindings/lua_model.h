// lmkit.Model: a LanguageModel (AWD-LSTM + head) held in a Lua class box (bound_classes.h), and the
// functions lmkit.model{...} and lmkit.load(path).
#pragma once
#include <lua.hpp>

namespace lmkit::lua {

// Registers the Model class (as lmkit.Model) and lmkit.model / lmkit.load.
void open_model(lua_State* L, int module_index);

}  // namespace lmkit::lua
