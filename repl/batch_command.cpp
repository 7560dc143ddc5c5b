#include "repl/batch_command.h"

#include <csignal>
#include <iostream>

#include "repl/interrupt.h"
#include "repl/recipe_catalog.h"
#include "repl/script_runner.h"
#include "runtime/core/interruption.h"
#include "runtime/training/batch_commands.h"

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
  // What the tasks still to run need (the recipe's `needs`, lmkit.batch.grid's plan): a dry run
  // shows it; data that is missing stops the batch before its tasks fail one by one.
  const auto plan = grid.contains("plan") && grid.at("plan").is_array() ? grid.at("plan") : nlohmann::json::array();
  const auto problems = grid.contains("problems") && grid.at("problems").is_array() ? grid.at("problems") : nlohmann::json::array();
  grid.erase("plan");
  grid.erase("problems");
  if (options.dry_run) {
    for (const auto& line : plan) std::cout << (line.is_string() ? line.get<std::string>() : line.dump()) << "\n";
  } else if (!problems.empty()) {
    std::string text;
    for (const auto& problem : problems) text += (text.empty() ? "" : "; ") + (problem.is_string() ? problem.get<std::string>() : problem.dump());
    const auto name = grid.value("name", std::string("the batch"));
    if (options.backend == "local") {
      std::cerr << "lmkit: " << name << ": nothing started, its tasks would fail: " << text
                << ". (lmkit batch --dry-run shows the plan.)\n";
      return 2;
    }
    // The cluster's nodes may see other files than this login node (staged data, their own
    // LMKIT_DATA): said, not refused.
    std::cerr << "lmkit: warning: " << name << ": as seen from this machine, " << text
              << ". The tasks fail unless the cluster's nodes have it.\n";
  }
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
