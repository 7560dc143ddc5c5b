#include "repl/batch_command.h"

#include <csignal>
#include <iostream>

#include "repl/interrupt.h"
#include "repl/recipe_catalog.h"
#include "repl/script_runner.h"
#include "runtime/core/interruption.h"
#include "runtime/batch/batch_commands.h"

namespace lmkit::repl {

BatchCommand add_batch_command(CLI::App& app) {
  BatchCommand batch;
  batch.command = app.add_subcommand(
      "batch", "Run a recipe's grid as batch tasks: here (--backend local) or as a Slurm job array (docs/cluster.md)");
  batch.options = std::make_unique<DeclaredCliOptions>(
      batch.command, training::declared_options(config::Tag<training::BatchOptions>{}).schema());
  return batch;
}

int run_batch(const BatchCommand& command) {
  auto given = command.options->given();
  given["recipe"] = resolve_recipe(given.at("recipe").get<std::string>());
  // Checked before the recipe is loaded: a wrong option costs no configure.
  const auto options = training::completed_batch_options(
      training::declared_options(config::Tag<training::BatchOptions>{}).from_json(given));
  std::vector<config::Setting> settings;
  for (const auto& s : options.sets) settings.push_back(config::parse_setting(s));
  nlohmann::json grid;
  const int status = call_lmkit_function("lmkit.batch", "grid", {{"recipe", options.recipe}, {"sets", options.sets}},
                                         settings, options.recipe, &grid);
  // The recipe or its settings could not give a grid (the message is out): the batch did not start.
  if (status != 0) return status == 1 ? 2 : status;
  InterruptGuard ctrl_c(nullptr);  // Ctrl-C: the pool stops its tasks (they save their state)
  try {
    return training::run_batch(training::declared_options(config::Tag<training::BatchGrid>{}).from_json(grid), options);
  } catch (const Interrupted& e) {
    std::cout.flush();
    std::cerr << "lmkit: " << e.what() << ": the running tasks saved their state; the same `lmkit batch` resumes them\n";
    return 128 + SIGINT;
  }
}

int show_batch_status(const std::string& dir) { return training::batch_status(dir); }

int report_batch(const std::string& dir) { return training::batch_report(dir); }

}  // namespace lmkit::repl
