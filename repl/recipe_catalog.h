// Recipes by name: `lmkit run gss_grid` finds lmkit's own recipes (repl/package_path.h says where
// they are: the source tree's for a build, <prefix>/share/lmkit/recipes once installed);
// `lmkit recipes` lists them from their own declarations; `lmkit run NAME --help` shows one's
// settings with their defaults and docs.
#pragma once
#include <string>

namespace lmkit::repl {

// A path to an existing file is returned as it is; otherwise a bare name ("gss_grid", or
// "gss_grid.lua") is looked up in lmkit's recipes folder. EnvironmentError naming both places
// (and `lmkit recipes`) when neither has it.
std::string resolve_recipe(const std::string& name_or_path);

// Prints the catalog; returns the exit status.
int list_recipes();

// Prints a recipe's description and settings; returns the exit status.
int show_recipe_help(const std::string& name_or_path);

}  // namespace lmkit::repl
