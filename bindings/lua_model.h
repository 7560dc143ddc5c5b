// lmkit.Model: a LanguageModel (AWD-LSTM + head) held by value in a Lua full userdata, and the
// functions lmkit.model{...} and lmkit.load(path).
#pragma once
#include <lua.hpp>

#include <string>
#include <vector>

#include "runtime/models/language_model.h"

namespace lmkit::lua {

constexpr const char* kModelMetatable = "lmkit.Model";

// Registers the Model metatable (as lmkit.Model) and lmkit.model / lmkit.load.
void open_model(lua_State* L, int module_index);

// The model in the Model userdata at `position` (ArgError otherwise); a new Model userdata.
// The reference lives only as long as the userdata holds the model: a binding whose call runs Lua
// code (a head written in Lua, a callback, a finalizer at an allocation) takes a copy,
// `LanguageModel model = check_model(L, 1);`, so that closing the Model from that code cannot free
// the model under the running call.
LanguageModel& check_model(lua_State* L, int position);
void push_model(lua_State* L, LanguageModel model);

// The names in Model's method table, in declaration order.
std::vector<std::string> model_method_names();

}  // namespace lmkit::lua
