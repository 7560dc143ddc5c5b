// A recipe's output folder as `lmkit run` leaves it: recipe.json (the recipe file, its name, the
// settings it ran with and its cells' ids in grid order) and one folder per cell under cells/
// (result.json when done; run/ when it trains). `lmkit status`, `report` and `compare` read it.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmkit::training {

struct RecipeRecord {
  std::string recipe, name;  // the recipe file ("" when not recorded) and its name ("?" when neither is)
  nlohmann::json settings;   // an object
  std::vector<std::string> cells;
};

// <dir>/recipe.json; EnvironmentError naming the file when it is unreadable, not a JSON object,
// lacks its settings or cells, or lists a cell id that is not one folder name.
RecipeRecord read_recipe_record(const std::string& dir);

// A JSON object from a file a recipe run wrote; EnvironmentError naming it otherwise (and that
// `lmkit run` of the recipe rewrites it).
nlohmann::json read_json_object(const std::filesystem::path& path);

}  // namespace lmkit::training
