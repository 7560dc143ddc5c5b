// A recipe folder's cells, as `lmkit run` and `lmkit batch` both make and read them:
//
//   OUT/cells/<id>/settings.json  the settings the cell's result was made with (written first)
//   OUT/cells/<id>/result.json    what the recipe's run(cell) returned (NaN and infinities as texts)
//   OUT/cells/<id>/failed.json    why its last attempt failed (a success removes it)
//   OUT/results.csv               every finished cell's numbers: one row per cell and number
//
// and the rule that keeps a folder honest: a finished cell made with other settings than this run's
// is refused, not reported as this run's (settings that only choose which cells the grid has
// excepted). The recipe's Lua side only computes what Lua alone can (its grid, its run and report);
// every rule about these files is here.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmkit::training {

// A cell's id: its scalar fields in key order, "key=value" joined by commas ("c=0,k=2,seed=1"),
// values as Lua writes them (1 and 1.0 differ), every byte but letters, digits and . , = _ - made
// "_"; "cell" for a cell without fields. Stable: a folder's cells keep their names across versions.
std::string cell_id(const nlohmann::json& fields);

// A scalar as Lua's tostring writes it (strings as they are, 1 and 1.0 apart, floats in %.14g): how
// ids and plans show a recipe's values.
std::string value_text(const nlohmann::json& value);

// A recipe's grid as its cells' ids, in grid order: UsageError for an empty grid or two cells of one
// id ("cells 1 and 3 are the same (x=1)": a recipe's bug), naming the recipe.
void check_recipe_cells(const std::string& recipe, const std::vector<std::string>& ids);

// A recipe's resolved settings against the values its settings may take (`choices`: {key = [v,
// ...]} for the settings that declare them): UsageError naming the first setting outside them,
// its value and the values it may take, before any folder or cell is made.
void check_setting_choices(const std::string& recipe, const nlohmann::json& settings, const nlohmann::json& choices);

// result.json's text for a cell's result (an object): its NaN and infinite numbers written as the
// texts Python's json and pandas write ("NaN", "Infinity", "-Infinity") and listed under
// "$non_finite" (key paths; 1-based positions in lists), so that a string that reads "NaN" stays a
// string. UsageError for a result that uses that key itself.
std::string encode_cell_result(const nlohmann::json& result);
// The result as it was returned: the listed texts numbers again.
nlohmann::json decode_cell_result(nlohmann::json stored);

struct RecipeCell {
  std::string id;
  nlohmann::json fields = nlohmann::json::object();  // its scalar fields (what its id is made of)
};

struct CellResult {
  RecipeCell cell;
  std::optional<nlohmann::json> result;  // none: not finished (or its result.json is damaged)
};

// <out>/cells/<id>.
std::string cell_folder(const std::string& out, const std::string& id);

// The finished cell's result, none when result.json is missing or not a JSON object (a half-written
// or foreign file is not a result).
std::optional<nlohmann::json> read_cell_result(const std::string& out, const std::string& id);

// Records a finished cell: settings.json (the recipe's name, the cell, `settings`) first, so that a
// result is never without the record of how it was made, then result.json; failed.json removed.
void write_cell_result(const std::string& out, const std::string& recipe, const RecipeCell& cell,
                       const nlohmann::json& settings, const nlohmann::json& result);

// failed.json: the error and its traceback (`lmkit status` shows them), or removed (none). A cell
// stopped by Ctrl-C or a preemption signal has not failed: the file is removed, and the cell stays
// to be run (a training run saved its state and resumes).
void record_cell_failure(const std::string& out, const std::string& id, const std::optional<std::string>& error,
                         const std::string& traceback = "");

// The cell ids of the recipe's grid with setting `key` given `value` instead (in grid order), none
// when the grid cannot be made so: what only the recipe (Lua) can compute.
using GridWithSetting = std::function<std::optional<std::vector<std::string>>(const std::string& key, const nlohmann::json& value)>;

// How a finished cell's settings.json differs from `settings` (this run's): one entry per setting
// whose value differs and does not only choose the grid's cells — "epochs = 0 there, 1 now", the
// --set that gives the folder's value back, and a suffix for another folder's name. A setting the
// record lacks (the recipe declared it since) was made at its default, `defaults`' value. A damaged
// record is one difference ("its settings.json is damaged"); a cell from before settings were
// recorded (no settings.json) has none.
struct SettingsDifference {
  std::vector<std::string> texts, sets, suffixes;
};
std::optional<SettingsDifference> cell_settings_difference(const std::string& out, const std::string& id,
                                                           const nlohmann::json& settings, const nlohmann::json& defaults,
                                                           const GridWithSetting& grid_with);

// Refuses (UsageError) when finished cells among `ids` were made with other settings, naming the
// settings, how many cells, and the ways out (another folder, the folder's settings, or removing
// its cells; for a report only: report with the folder's settings).
void check_cells_settings(const std::string& recipe, const std::string& out, const std::vector<std::string>& ids,
                          const nlohmann::json& settings, const nlohmann::json& defaults, const GridWithSetting& grid_with,
                          bool report_only);

// <out>/results.csv: the tidy long table beside the report's formatted one, one row per finished
// cell and number, with the cell's id and every grid field as columns and numbers at full
// precision (nan/inf/-inf as pandas and R read them), so that one line of pandas or R reads the
// whole recipe. Nested results are flattened with dots (rank.press, ranks.1); lists longer than 32
// values (spectra) stay in result.json only.
void write_tidy_results(const std::string& out, const std::vector<CellResult>& results);

// The same, as lmkit.recipe_folder gives them to a recipe's runner (bindings/lua/recipe.lua): plain
// values in, a cell as its id and fields; results.csv of the cells [{id=, fields=}, ...] and their
// results on disk.
void store_cell_result(const std::string& out, const std::string& recipe, const std::string& id, const nlohmann::json& fields,
                       const nlohmann::json& settings, const nlohmann::json& result);
void store_tidy_results(const std::string& out, const nlohmann::json& results);

}  // namespace lmkit::training
