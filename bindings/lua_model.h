// lmkit.Model: a LanguageModel (AWD-LSTM + head) held in a Lua class box (bound_classes.h), and the
// functions lmkit.model{...} and lmkit.load(path).
#pragma once
#include <lua.hpp>

#include "runtime/models/language_model.h"

namespace lmkit::lua {

// Registers the Model class (as lmkit.Model) and lmkit.model / lmkit.load.
void open_model(lua_State* L, int module_index);

// The model in the Model userdata at `position` (ArgError otherwise), as a handle of its own: a
// closed Model userdata cannot free the model under a running call.
LanguageModel check_model(lua_State* L, int position);
void push_model(lua_State* L, LanguageModel model);

}  // namespace lmkit::lua
