#include "runtime/training/recipe_record.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "runtime/config/json_text.h"
#include "runtime/core/error.h"

namespace lmkit::training {

nlohmann::json read_json_object(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw EnvironmentError("cannot read '" + path.string() + "': " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json value;
  try {
    value = config::parse_json_text(text.str());  // nesting bounded: the file is untrusted
  } catch (const config::JsonTextError&) {
    value = nlohmann::json();
  }
  if (!value.is_object()) {
    throw EnvironmentError("'" + path.string() + "' is not a JSON object: was it cut short? `lmkit run` of the recipe rewrites it");
  }
  return value;
}

RecipeRecord read_recipe_record(const std::string& dir) {
  const auto file = std::filesystem::path(dir) / "recipe.json";
  const auto json = read_json_object(file);
  RecipeRecord record;
  const auto recipe = json.find("recipe"), cells = json.find("cells"), settings = json.find("settings");
  // A recipe without settings wrote them as an empty JSON array (an empty Lua table).
  const bool no_settings = settings != json.end() && settings->is_array() && settings->empty();
  if (cells == json.end() || !cells->is_array() || settings == json.end() || !(settings->is_object() || no_settings)) {
    throw EnvironmentError("'" + file.string() + "' lacks its settings or cells; `lmkit run` of the recipe rewrites it");
  }
  if (recipe != json.end() && recipe->is_string()) record.recipe = recipe->get<std::string>();
  const auto name = json.find("name");
  record.name = name != json.end() && name->is_string() ? name->get<std::string>()
                : record.recipe.empty()                 ? std::string("?")
                                                        : record.recipe;
  record.settings = no_settings ? nlohmann::json::object() : *settings;
  for (const auto& cell : *cells) {
    // A cell id is one folder name under cells/, as lmkit makes it: never a path.
    const auto id = cell.is_string() ? cell.get<std::string>() : std::string();
    const bool control = std::any_of(id.begin(), id.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; });
    if (id.empty() || id == "." || id == ".." || id.find('/') != std::string::npos || control) {
      throw EnvironmentError("'" + file.string() + "' lists a cell that is no cell id (" + cell.dump() +
                             "); `lmkit run` of the recipe rewrites it");
    }
    record.cells.push_back(id);
  }
  if (record.cells.empty()) throw EnvironmentError("'" + file.string() + "' lists no cells; `lmkit run` of the recipe rewrites it");
  return record;
}

}  // namespace lmkit::training
