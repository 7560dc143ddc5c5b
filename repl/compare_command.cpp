#include "repl/compare_command.h"

#include <iostream>

#include <nlohmann/json.hpp>

#include "repl/script_runner.h"
#include "runtime/core/terminal_text.h"
#include "runtime/training/run_comparison.h"

namespace lmkit::repl {

void add_compare_command(CLI::App& app, CompareOptions& options) {
  options.command = app.add_subcommand(
      "compare", "Training runs or recipe folders side by side: each run's state, best and final perplexities, "
                 "the settings that differ, and the validation curves in one plot");
  options.command->add_option("dirs", options.dirs, "Run directories (config.json) or recipe output folders (each cell's run)")
      ->required();
  options.command->add_option("--plot", options.plot,
                              "Where the validation curves go (.png or .svg; default compare.png here; \"\" for none)");
}

int run_compare(const CompareOptions& options) {
  const auto comparison = training::compare_runs(options.dirs);
  for (const auto& line : training::comparison_lines(comparison, output_columns())) std::cout << line << "\n";
  if (options.plot.empty()) return 0;
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& run : comparison.runs) {
    if (run.epochs.empty()) continue;  // no finished epoch: no curve
    runs.push_back({{"label", run.label}, {"epochs", run.epochs}, {"valid_ppl", run.valid_ppl}});
  }
  if (runs.empty()) {
    std::cout << "no plot: no run has finished an epoch\n";
    return 0;
  }
  std::cout << std::flush;
  return call_lmkit_function("lmkit.recipe", "plot_comparison", nlohmann::json{{"out", options.plot}, {"runs", runs}}, {}, "");
}

}  // namespace lmkit::repl
