// The options of a batch of a recipe's tasks (`lmkit batch`, lmkit.batch.submit), declared once:
// the command line's options (repl/declared_cli_options.cpp) and the Lua table's keys, their docs,
// defaults and checks all come from this one declaration.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/config/bound_options.h"

namespace lmkit::training {

struct BatchOptions {
  std::string recipe;
  std::vector<std::string> sets;
  std::string backend = "local";
  std::optional<std::int64_t> jobs, tasks_per_gpu, gpus, threads;
  std::optional<std::string> partition, account, time;
  std::optional<std::int64_t> cpus_per_task, gpus_per_task;
  bool requeue = false;
  std::int64_t signal_lead = 120;
  std::vector<std::string> sbatch_args;
  bool wait = false;
  std::optional<double> wait_timeout;
  double poll_seconds = 2;
  bool dry_run = false;
  std::set<std::string> given;  // the options set explicitly (a backend's options refused on the other)
};
const config::BoundOptions<BatchOptions>& declared_options(config::Tag<BatchOptions>);

// Each option alone is checked as it is read (declared_options(...).from_json: unknown keys, wrong
// types and values out of range refused naming the key). These are the checks of the options
// together: an option of one backend given for the other, two that exclude each other, --set keys
// that are the batch's own. UsageError saying which and what to do instead.
void check_batch_options(const BatchOptions& options);
// The options checked, `gpus` (when unset) the CUDA devices this process sees.
BatchOptions completed_batch_options(BatchOptions options);

// The recipe's grid as the batch's tasks, as the recipe (Lua) computed it.
struct BatchGrid {
  std::string path;         // the recipe's absolute path
  std::string name, description;
  std::string out;          // the recipe's output folder, which is the batch folder
  std::vector<std::string> cells;  // the cells' ids, task i = cells[i - 1]
  // The settings the cells' results depend on, as the recipe resolved them (JSON text of an
  // object): a folder's record must have the same to be continued.
  std::string settings;
  // The defaults of the settings the recipe declares (JSON text): a setting a folder's record
  // lacks (declared since) counts at its default.
  std::string defaults;
  // What the tasks still to run need, from the recipe's `needs` (Recipe:plan): the lines a dry run
  // shows, and the problems (data missing) that would fail tasks.
  std::vector<std::string> plan, problems;
};
const config::BoundOptions<BatchGrid>& declared_options(config::Tag<BatchGrid>);

}  // namespace lmkit::training
