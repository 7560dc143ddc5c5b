// `lmkit batch`, `lmkit status` and `lmkit report`: a recipe's grid as batch tasks (lmkit.batch).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/config/cli_settings.h"

namespace lmkit::repl {

struct BatchOptions {
  std::string recipe;
  std::vector<std::string> sets;  // the raw --set arguments, passed on to every task
  nlohmann::json options;         // backend, jobs, partition, ... as lmkit.batch.submit takes them
};

// Loads the recipe with the --set settings and submits its tasks; returns the exit status.
int run_batch(const BatchOptions& options);

// The per-task table of a batch folder; 0 all done, 1 some failed or lost, 3 some still to finish.
int show_batch_status(const std::string& dir);

// The recipe's report over whatever tasks of the batch folder have finished (missing cells marked):
// `lmkit run RECIPE --set <the batch's settings> --set out=DIR --set report_only=true`.
int report_batch(const std::string& dir);

}  // namespace lmkit::repl
