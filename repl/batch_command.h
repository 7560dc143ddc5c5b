// `lmkit batch`, `lmkit status` and `lmkit report` of a batch folder: the command line of the batch
// commands in runtime/batch/batch_commands.h. The recipe's grid is the one part computed in Lua
// (lmkit.batch.grid: a recipe is a Lua value); the options are BatchOptions' declaration.
#pragma once
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "repl/declared_cli_options.h"

namespace lmkit::repl {

struct BatchCommand {
  CLI::App* command = nullptr;
  std::unique_ptr<DeclaredCliOptions> options;
};

// `lmkit batch RECIPE [options]`, its options derived from BatchOptions' declaration.
BatchCommand add_batch_command(CLI::App& app);

// Checks the options, computes the recipe's grid with the --set settings, and runs or submits its
// tasks; returns the exit status. A user's mistake throws (main says it, exit status 2).
int run_batch(const BatchCommand& command);

// The per-task table of a batch folder; 0 all done, 1 some failed or lost, 3 some still to finish.
int show_batch_status(const std::string& dir);

// The recipe's report over whatever tasks of the batch folder have finished (missing cells marked).
int report_batch(const std::string& dir);

}  // namespace lmkit::repl
