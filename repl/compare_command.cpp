#include "repl/compare_command.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "repl/script_runner.h"
#include "runtime/core/error.h"
#include "runtime/core/terminal_text.h"
#include "runtime/runs/run_comparison.h"
#include "runtime/runs/run_store.h"

namespace lmkit::repl {

void add_compare_command(CLI::App& app, CompareOptions& options) {
  options.command = app.add_subcommand(
      "compare", "Training runs or recipe folders side by side: each run's state, best and final perplexities, "
                 "the settings that differ, and the validation curves in one plot");
  options.command->add_option("dirs", options.dirs, "Run directories (config.json) or recipe output folders (each cell's run)")
      ->required();
  options.command->add_option("--plot", options.plot,
                              "Where the curves go (.png or .svg; default compare.png here; \"\" for none)");
  options.command->add_option("--metric", options.metric,
                              "The number the curves follow, per epoch: an epoch record's (valid_ppl, train_ppl, "
                              "valid_loss, epoch_seconds, ...) or one a recipe recorded with run:record{name = value} "
                              "(default valid_ppl)");
}

namespace {

// --plot checked before any run is read (a grid's runs take a while): its format, and a folder to
// write it (and its .dat and .gp) into.
void check_plot_path(const std::string& plot) {
  namespace fs = std::filesystem;
  const fs::path path(plot);
  std::string extension = path.extension().string();
  for (auto& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (std::any_of(plot.begin(), plot.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; })) {
    throw UsageError("--plot: the file name holds a control character (a line break?); give a plain name like compare.png");
  }
  if (extension != ".png" && extension != ".svg") {
    throw UsageError("--plot " + plot + ": the figure is a .png or an .svg (e.g. --plot compare.png), or \"\" for none");
  }
  std::error_code error;
  if (fs::is_directory(path, error)) throw UsageError("--plot " + plot + ": that is a folder; give a file name in it");
  const auto folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, error)) {
    throw UsageError("--plot " + plot + ": no folder '" + folder.string() + "' to write it into");
  }
  if (access(folder.c_str(), W_OK) != 0) {
    throw UsageError("--plot " + plot + ": the folder '" + folder.string() + "' is not writable here; give another path " +
                     "(--plot /tmp/compare.png) or --plot \"\" for no plot");
  }
}

// A run's name in the plot's legend: the settings that differ between the runs (their last key part,
// "kind=mos, seed=3"), which is what tells the curves apart, rather than its folder's path; the path
// where nothing differs or a run is unreadable.
std::string legend_label(const training::ComparedRun& run, const std::vector<std::string>& differing) {
  if (!run.unreadable.empty() || differing.empty()) return printable_text(run.label);
  std::string text;
  std::size_t shown = 0;
  for (const auto& key : differing) {
    if (shown == 3) {
      text += ", ...";
      break;
    }
    const auto it = run.settings.find(key);
    const auto value = it == run.settings.end() ? std::string("-") : it->is_string() ? it->get<std::string>() : it->dump();
    const auto dot = key.rfind('.');
    text += (text.empty() ? "" : ", ") + key.substr(dot == std::string::npos ? 0 : dot + 1) + "=" + value;
    ++shown;
  }
  return fit_to_width(printable_text(text), 60);
}

// --metric: a record's field name (letters, digits, _), checked before any run is read.
void check_metric_name(const std::string& metric) {
  if (!training::is_record_name(metric)) {
    throw UsageError("--metric " + printable_text(metric) + ": a number's name in the runs' records (letters, digits " +
                     "and _), e.g. --metric train_ppl, or one a recipe recorded with run:record");
  }
}

// The plot has no curve of the chosen number: say which numbers the runs do record.
std::set<std::string> recorded_numbers(const training::RunComparison& comparison) {
  std::set<std::string> names;
  for (const auto& run : comparison.runs) names.insert(run.status.recorded_metrics.begin(), run.status.recorded_metrics.end());
  return names;
}

std::string no_curve_message(const training::RunComparison& comparison, const std::string& metric) {
  const auto names = recorded_numbers(comparison);
  if (names.empty()) return "no plot: no run has a finished epoch that is its own record";
  std::string list;
  for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
  return "no plot: no run records '" + printable_text(metric) + "' per epoch; their records have " + list +
         " (a recipe records numbers of its own with run:record{name = value} in on_epoch_end; docs/training.md)";
}

}  // namespace

int run_compare(const CompareOptions& options) {
  if (!options.plot.empty()) check_plot_path(options.plot);
  check_metric_name(options.metric);
  const auto comparison = training::compare_runs(options.dirs, options.metric);
  for (const auto& line : training::comparison_lines(comparison, output_columns())) std::cout << line << "\n";
  bool unreadable = false;
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& run : comparison.runs) {
    unreadable = unreadable || !run.unreadable.empty();
    if (run.status.metric_curve.empty()) continue;  // no epoch with that number: no curve
    nlohmann::json epochs = nlohmann::json::array(), values = nlohmann::json::array();
    for (const auto& [epoch, value] : run.status.metric_curve) {
      epochs.push_back(epoch);
      values.push_back(value);
    }
    runs.push_back({{"label", legend_label(run, comparison.differing)}, {"epochs", epochs}, {"values", values}});
  }
  int status = 0;
  if (!options.plot.empty() && runs.empty()) {
    std::cout << no_curve_message(comparison, options.metric) << "\n";
    // A number no run records is a mistake in the command (runs without epochs are not).
    if (!recorded_numbers(comparison).empty()) status = 2;
  } else if (!options.plot.empty()) {
    std::cout << std::flush;
    status = call_lmkit_function("lmkit.recipe", "plot_comparison",
                                 nlohmann::json{{"out", options.plot}, {"metric", options.metric}, {"runs", runs}}, {}, "");
  }
  // An unreadable run was shown as such; the exit status says the comparison is not whole.
  return status != 0 ? status : unreadable ? 1 : 0;
}

}  // namespace lmkit::repl
