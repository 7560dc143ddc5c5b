// Where `require` looks in lmkit's Lua states: the script's own folder first (a recipe's modules
// beside it), then lmkit's recipes folder (so `require "presets.awd_lstm"` works for a recipe
// anywhere, not only inside lmkit's recipes/), then Lua's defaults.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include <lua.hpp>

namespace lmkit::repl {

// lmkit's recipes folder: $LMKIT_RECIPES when set (it must exist), else the first of
// <executable>/../share/lmkit/recipes (an installed lmkit) and the source tree's recipes/ that
// holds presets/. Empty when none is found.
std::optional<std::filesystem::path> lmkit_recipes_dir();

// Puts the script's folder (when `script` is not empty) and lmkit's recipes folder in front of
// package.path.
void set_package_path(lua_State* L, const std::string& script);

}  // namespace lmkit::repl
