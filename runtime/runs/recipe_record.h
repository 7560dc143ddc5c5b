// A recipe folder's record, <out>/recipe.json: the one record `lmkit run` and `lmkit batch` both
// write and read, so that a folder begun by one goes on being continued by the other (begun on a
// laptop, its remaining cells sent to Slurm, or the reverse), and `lmkit status`, `report` and
// `compare` read one format:
//
//   {"format": 2, "recipe": its file, "name":, "description":,
//    "settings": {...},   the settings the cells' results depend on, as the recipe resolved them
//    "sets": ["k=v"],     the --set settings a batch's tasks run with (out, task, ... aside)
//    "cells": [id, ...],  in grid order; batch task i is cell i
//    "batch": {"backend": "local"|"slurm", "created":, "lmkit":, "slurm_jobs": [...]}}  once `lmkit batch` ran
//
// The cells' own files are recipe_cells.h's. Older folders are read too: a recipe.json without
// "format" (an `lmkit run` of before), and a batch/manifest.json (an `lmkit batch` of before), whose
// content the next write moves into recipe.json.
//
// A folder is its own wherever it lies: every path comes from the folder it was read from (a copied
// or moved folder's status, report and batch are the copy's), never from the record.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmkit::training {

struct SlurmSubmission {
  std::string job;                  // the array job's id
  std::vector<std::int64_t> tasks;  // the tasks it ran
  std::string array, submitted;     // its --array and when
};

// What `lmkit batch` adds to a folder's record.
struct BatchSection {
  std::string backend = "local", created, lmkit;  // lmkit: the program the tasks run
  std::vector<SlurmSubmission> slurm_jobs;
};

// The record's part every recipe folder has (a batch's own part is BatchSection).
struct RecipeSection {
  std::string out;  // the folder it was read from or is written to (not written into the file)
  std::string recipe, name, description;  // recipe: its file ("" when not recorded)
  // The resolved settings, an object; none in a folder an lmkit before the one record made with
  // `lmkit batch` (its --set settings stand for them).
  std::optional<nlohmann::json> settings;
  std::vector<std::string> sets;  // a batch's --set settings (its tasks' command lines)
  std::vector<std::string> cells;
};

struct RecipeRecord : RecipeSection {
  std::optional<BatchSection> batch;
};

// The record of the folder `dir`: recipe.json, or an older folder's batch/manifest.json (with
// recipe.json's settings when both are there); none when the folder has neither. UsageError naming
// the file, what in it is not what lmkit writes, and `way_out` when it is damaged.
std::optional<RecipeRecord> find_recipe_record(const std::string& dir, const std::string& way_out);

// The same, with an error naming both files when the folder has no record.
RecipeRecord read_recipe_record(const std::string& dir);

// Written atomically into <record.out>/recipe.json (an older batch/manifest.json, whose content it
// now holds, removed).
void write_recipe_record(const RecipeRecord& record);

// Whether a folder's recorded settings are `now`'s: every setting the recipe declares now
// (`defaults`: their defaults) has its value there, a setting the record lacks (declared since)
// counting at its default; settings the recipe no longer declares are not compared. The settings
// that differ, "epochs = 2 there, 3 now; ...", or "" when they are the same.
std::string settings_change(const nlohmann::json& recorded, const nlohmann::json& now, const nlohmann::json& defaults);

// What `lmkit run RECIPE` records as it starts (`task`: a single cell, `--set task=I`): the recipe,
// its resolved settings and their defaults (JSON text of objects) and its cells. A folder's record
// is never taken from a batch: a hand-run task writes one only where there is none (never over one
// a batch writes at the same moment); a whole run of another grid or other settings than the
// batch's (its tasks are numbered by its cells, and run with its settings) is refused, naming what
// differs and the way out.
void record_recipe_run(const std::string& out, const std::string& recipe, const std::string& name,
                       const std::string& description, const std::string& settings_json,
                       const std::string& defaults_json, const std::vector<std::string>& cells, bool task);

// The settings of the recipe runner itself — where and how to run, not what a cell computes: a
// recipe may not declare them, a folder's record and a batch's --set settings leave them out, and
// `lmkit run NAME --help` lists them after the recipe's own.
struct RunnerSetting {
  std::string key;
  nlohmann::json value;  // its default
  std::string doc;
};
const std::vector<RunnerSetting>& runner_settings();
bool is_runner_setting(const std::string& key);
// As lmkit.recipe_folder.runner_settings gives them: [{key=, default=, doc=}, ...].
nlohmann::json runner_settings_table();

// A recipe's output folder when `--set out=` names none: runs/<name>-<scale> (`scale`: its scale
// setting's value, "default" for a recipe without one).
std::string default_recipe_folder(const std::string& name, const std::string& scale);

// A JSON object from a file a recipe run wrote; EnvironmentError naming it otherwise (and that
// `lmkit run` of the recipe rewrites it).
nlohmann::json read_json_object(const std::filesystem::path& path);

// A cell id is a folder under cells/: relative, without "." or ".." parts, no NUL.
bool is_safe_cell_id(const std::string& id);

}  // namespace lmkit::training
