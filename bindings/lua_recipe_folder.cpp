#include "bindings/lua_recipe_folder.h"

#include "bindings/entry_point.h"
#include "runtime/runs/recipe_cells.h"
#include "runtime/runs/recipe_record.h"

namespace lmkit::lua {
namespace {

// lmkit.recipe_folder.check_settings(recipe, out, ids, settings, defaults, report_only, grid_with): the rule of
// recipe_cells.h, with grid_with(key, value) -> {id, ...} | nil computed by the recipe (Lua).
int check_settings(lua_State* L) {
  using entry_detail::read;
  using entry_detail::Where;
  const auto recipe = read<std::string>(L, 1, Where{1, ""});
  const auto out = read<std::string>(L, 2, Where{2, ""});
  const auto ids = read<std::vector<std::string>>(L, 3, Where{3, ""});
  const auto settings = read<nlohmann::json>(L, 4, Where{4, ""});
  const auto defaults = read<nlohmann::json>(L, 5, Where{5, ""});
  const auto report_only = lua_toboolean(L, 6) != 0;
  if (lua_type(L, 7) != LUA_TFUNCTION) type_error(L, 7, "function");
  const training::GridWithSetting grid_with = [L](const std::string& key, const nlohmann::json& value)
      -> std::optional<std::vector<std::string>> {
    lua_pushvalue(L, 7);
    lua_pushlstring(L, key.data(), key.size());
    push_json(L, value);
    if (lua_pcall(L, 2, 1, 0) != LUA_OK) throw PendingLuaError();
    std::optional<std::vector<std::string>> ids;
    if (lua_type(L, -1) == LUA_TTABLE) ids = read<std::vector<std::string>>(L, -1, Where{7, "grid_with's result"});
    lua_pop(L, 1);
    return ids;
  };
  training::check_cells_settings(recipe, out, ids, settings, defaults, grid_with, report_only);
  return 0;
}

}  // namespace

void open_recipe_folder(lua_State* L, int module_index) {
  static const Function functions[] = {
      entry<&training::cell_id>("lmkit.recipe_folder", "cell_id", "fields",
          "A cell's id from its scalar fields: \"key=value\" in key order, joined by commas (\"c=0,k=2,seed=1\"), made safe for a folder name."),
      entry<&training::read_cell_result>("lmkit.recipe_folder", "read_result", "out, id",
          "The finished cell's result (result.json, its NaN and infinities numbers again), or nil when it has none."),
      entry<&training::store_cell_result>("lmkit.recipe_folder", "store_result", "out, recipe, id, fields, settings, result",
          "Records a finished cell: settings.json (how the result was made) first, then result.json; failed.json removed."),
      entry<&training::record_cell_failure>("lmkit.recipe_folder", "record_failure", "out, id, error, traceback",
          "Writes the cell's failed.json (its error and traceback), or removes it when error is nil."),
      entry<&training::store_tidy_results>("lmkit.recipe_folder", "write_tidy", "out, cells",
          "Writes <out>/results.csv, one row per finished cell and number, for cells = {{id=, fields=}, ...} (their results read from the folder)."),
      entry<&training::record_recipe_run>("lmkit.recipe_folder", "record_run", "out, recipe, name, description, settings, defaults, cells, task",
          "Records `lmkit run`'s recipe, settings and their defaults (JSON text) and cells in <out>/recipe.json; a batch's record is kept (a task writes none over any record; another grid or other settings than the batch's are refused)."),
      entry<&training::runner_settings_table>("lmkit.recipe_folder", "runner_settings", "",
          "The recipe runner's own settings, {{key=, default=, doc=}, ...}: out, task, report_only, dry_run (no recipe declares them)."),
      entry<&training::default_recipe_folder>("lmkit.recipe_folder", "default_out", "name, scale",
          "A recipe's output folder when --set out= names none: runs/<name>-<scale> (scale \"\": \"default\")."),
      entry<&training::check_recipe_cells>("lmkit.recipe_folder", "check_cells", "recipe, ids",
          "Refuses an empty grid or two cells of one id, naming the recipe."),
      entry<&training::check_setting_choices>("lmkit.recipe_folder", "check_choices", "recipe, settings, choices",
          "Refuses a setting outside its declared values ({key = {v, ...}}), naming the setting, its value and the values it may take."),
      {"check_settings", check_settings,
       "lmkit.recipe_folder.check_settings(recipe, out, ids, settings, defaults, report_only, grid_with)\n"
       "Refuses finished cells among ids whose settings.json records other settings than `settings` (one it lacks: its default), but for settings "
       "that only choose the grid's cells (grid_with(key, value) returns the grid's cell ids with that setting, or nil)."},
  };
  module_index = lua_absindex(L, module_index);
  lua_newtable(L);
  set_functions(L, -1, "lmkit.recipe_folder", functions);
  register_doc(L, -1, "lmkit.recipe_folder",
               "lmkit.recipe_folder — a recipe folder's cells: ids, result and settings records, the settings rule, results.csv.");
  lua_setfield(L, module_index, "recipe_folder");
}

}  // namespace lmkit::lua
