#include "runtime/batch/batch_manifest.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "runtime/config/cli_settings.h"
#include "runtime/config/json_text.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/error.h"
#include "runtime/core/folders.h"
#include "runtime/core/number_text.h"
#include "runtime/core/clock.h"
#include "runtime/batch/process_pool.h"

namespace lmkit::training {
namespace {

using nlohmann::json;

// A record without a batch part (an `lmkit run`'s) gives the batch part's defaults.
BatchManifest manifest_of(const RecipeRecord& record) {
  BatchManifest manifest;
  static_cast<RecipeSection&>(manifest) = record;
  static_cast<BatchSection&>(manifest) = record.batch.value_or(BatchSection{});
  return manifest;
}

// "; task 2 is x=9 there, x=2 now": the first task whose cell differs.
std::string first_difference(const std::vector<std::string>& there, const std::vector<std::string>& now) {
  for (std::size_t i = 0; i < std::min(there.size(), now.size()); ++i) {
    if (there[i] != now[i]) return "; task " + integer_text(i + 1) + " is " + there[i] + " there, " + now[i] + " now";
  }
  return "";
}

std::string listed(const std::vector<std::string>& sets) {
  if (sets.empty()) return "no --set";
  std::string text;
  for (const auto& s : sets) text += (text.empty() ? "" : " ") + s;
  return text;
}

}  // namespace

BatchPaths::BatchPaths(std::string folder)
    : out(std::move(folder)), batch(out + "/batch"), record(out + "/recipe.json"), tasks(batch + "/tasks"),
      logs(batch + "/logs"), slurm(batch + "/slurm") {}

std::string BatchPaths::log(std::int64_t task) const { return logs + "/task-" + integer_text(task) + ".log"; }
std::string BatchPaths::task_record(std::int64_t task) const { return tasks + "/" + integer_text(task) + ".json"; }
std::string BatchPaths::result(const std::string& cell) const { return out + "/cells/" + cell + "/result.json"; }

BatchManifest read_batch_manifest(const std::string& dir) {
  const auto record = find_recipe_record(
      dir, "`lmkit batch` with the same recipe and settings in a new folder (--set out=DIR) starts afresh");
  if (!record || !record->batch) {
    throw UsageError(dir + " is not a batch folder (its recipe.json has no batch); `lmkit batch RECIPE --set out=" + dir +
                     "` makes one");
  }
  return manifest_of(*record);
}

BatchManifest reconcile_batch_manifest(const BatchGrid& grid, const std::string& out, const std::vector<std::string>& sets,
                                       const std::string& backend) {
  const auto object_of = [](const std::string& text, const char* what) -> std::optional<json> {
    if (text.empty()) return std::nullopt;
    json value;
    try {
      value = config::parse_json_text(text);
    } catch (const config::JsonTextError& e) {
      throw UsageError(std::string("the grid's ") + what + " are not JSON: " + e.what());
    }
    if (value.is_array() && value.empty()) value = json::object();
    return value;
  };
  const auto settings = object_of(grid.settings, "settings");
  const auto defaults = object_of(grid.defaults, "defaults").value_or(json::object());
  const auto record = find_recipe_record(out, "move the folder aside or use another one (--set out=DIR)");
  BatchManifest manifest;
  if (record) {
    manifest = manifest_of(*record);
    const std::string what = record->batch ? "a batch" : "a run";
    // The settings decide where both folders know them; an older batch's folder knows its --set only.
    const auto change = record->settings && settings ? settings_change(*record->settings, *settings, defaults) : std::string();
    const bool same_settings = record->settings && settings ? change.empty() : manifest.sets == sets;
    const std::string there = record->settings && settings ? "" : " with " + listed(manifest.sets);
    const std::string now = record->settings && settings ? "" : " with " + listed(sets);
    if (manifest.recipe == grid.path && same_settings && manifest.cells != grid.cells) {
      throw UsageError(out + " already holds " + what + " of " + manifest.recipe + there + " whose cells differ from the grid's now (" +
                       integer_text(manifest.cells.size()) + " there, " + integer_text(grid.cells.size()) + " now" +
                       first_difference(manifest.cells, grid.cells) + "): the recipe changed since. Use another folder (--set out=DIR).");
    }
    if (manifest.recipe != grid.path || manifest.cells != grid.cells || !same_settings) {
      const std::string changed = change.empty() ? "" : " (its settings: " + change + ")";
      throw UsageError(out + " already holds " + what + " of " + manifest.recipe + there + " (" +
                       integer_text(manifest.cells.size()) + " tasks)" + changed + "; this one is " + grid.path + now + " (" +
                       integer_text(grid.cells.size()) + " tasks). Use another folder (--set out=DIR) or the same recipe and settings.");
    }
    if (!record->batch) manifest.created = utc_timestamp();
  } else {
    manifest.recipe = grid.path;
    manifest.name = grid.name;
    manifest.description = grid.description;
    manifest.cells = grid.cells;
    manifest.created = utc_timestamp();
  }
  if (settings) manifest.settings = settings;
  manifest.sets = sets;
  manifest.out = out;
  manifest.backend = backend;
  manifest.lmkit = executable_path();  // the job script runs the lmkit that submitted it
  return manifest;
}

std::vector<std::string> task_arguments(const BatchManifest& manifest, std::optional<std::int64_t> task,
                                        std::optional<std::int64_t> threads) {
  std::vector<std::string> args = {"run", manifest.recipe};
  if (threads) args.insert(args.end(), {"--threads", integer_text(*threads)});
  for (const auto& s : manifest.sets) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), {"--set", "out=" + manifest.out});
  if (task) args.insert(args.end(), {"--set", "task=" + integer_text(*task)});
  return args;
}

void write_batch_manifest(const BatchManifest& m) {
  RecipeRecord record;
  static_cast<RecipeSection&>(record) = m;
  record.batch = static_cast<const BatchSection&>(m);
  write_recipe_record(record);
}

}  // namespace lmkit::training
