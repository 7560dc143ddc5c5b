// lmkit.recipe_folder: a recipe folder's cells (runtime/runs/recipe_cells.h) for the recipe
// runner (bindings/lua/recipe.lua) — their ids, result and settings records, the settings rule and
// results.csv — bound one line each; the settings rule calls back into Lua for the recipe's grid.
#pragma once
#include <lua.hpp>

namespace lmkit::lua {

void open_recipe_folder(lua_State* L, int module_index);

}  // namespace lmkit::lua
