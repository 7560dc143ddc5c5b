// `lmkit compare DIR...`: training runs, or the runs of recipe folders' cells, side by side — each
// run's state and its best and final numbers, the settings that differ between them
// (runtime/runs/run_comparison.h), and their validation curves in one plot.
#pragma once
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace lmkit::repl {

struct CompareOptions {
  std::vector<std::string> dirs;
  std::string plot = "compare.png";  // the curves' figure (.png or .svg); "" draws none
  std::string metric = "valid_ppl";  // the number the curves follow: an epoch record's or a recipe's (run:record)
  CLI::App* command = nullptr;
};

// Declares the command on `app`; `options` receives its arguments (and must outlive the parse).
void add_compare_command(CLI::App& app, CompareOptions& options);

// Prints the comparison and draws the plot: 0, or 1 when a run was unreadable or the plot failed.
// A mistake (a folder holding no run, a --plot that cannot be written) throws UsageError before
// anything is printed; the caller reports it (exit 2).
int run_compare(const CompareOptions& options);

}  // namespace lmkit::repl
