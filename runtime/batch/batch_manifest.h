// A batch folder: a recipe folder (recipe_record.h, recipe_cells.h) that `lmkit batch` ran, and
// what it keeps of its tasks:
//
//   OUT/recipe.json               the folder's record, with its "batch" section
//   OUT/cells/<id>/result.json    a finished task (the truth: a task with it is never run again)
//   OUT/batch/tasks/<i>.json      what task i last said of itself (running/done/failed/preempted)
//   OUT/batch/logs/task-<i>.log   its output, appended across attempts
//   OUT/batch/slurm/array.sbatch  the job script of the last Slurm submission
//
// A batch folder is its own wherever it lies: every path comes from the folder it was read from (a
// copied or moved folder's status, report and batch are the copy's), never from the record.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/batch/batch_options.h"
#include "runtime/runs/recipe_record.h"

namespace lmkit::training {

struct BatchPaths {
  explicit BatchPaths(std::string out);
  std::string out, batch, record, tasks, logs, slurm;  // record: recipe.json
  std::string log(std::int64_t task) const;          // batch/logs/task-<i>.log
  std::string task_record(std::int64_t task) const;  // batch/tasks/<i>.json
  std::string result(const std::string& cell) const;  // cells/<id>/result.json
};

// A folder's record with its batch part present (recipe_record.h): sets are the batch's --set
// settings, without out=; task i's cell id is cells[i - 1].
struct BatchManifest : RecipeSection, BatchSection {};

// The batch of the folder `dir`, from its record. UsageError naming the file when there is none (and
// how to make one), when it is not JSON, or when an entry a person may have edited is not what lmkit
// writes.
BatchManifest read_batch_manifest(const std::string& dir);

// The batch for `grid` with `sets` on `backend`: the folder's own record when it has one (a batch's,
// or an `lmkit run`'s), which must be of the same recipe, settings and cells (UsageError saying both
// otherwise), else a new one.
BatchManifest reconcile_batch_manifest(const BatchGrid& grid, const std::string& out,
                                       const std::vector<std::string>& sets, const std::string& backend);

// Written atomically into manifest.out's record (recipe.json, its "batch" section).
void write_batch_manifest(const BatchManifest& manifest);

// The command line of task `task` (without the program): `run RECIPE [--threads N] --set ... --set
// out=OUT [--set task=I]`; no task: the batch's own settings alone (a job script adds the task).
std::vector<std::string> task_arguments(const BatchManifest& manifest, std::optional<std::int64_t> task,
                                        std::optional<std::int64_t> threads);


}  // namespace lmkit::training
