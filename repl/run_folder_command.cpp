#include "repl/run_folder_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "repl/batch_command.h"
#include "repl/script_runner.h"
#include "runtime/core/error.h"
#include "runtime/core/work_progress.h"
#include "runtime/runs/recipe_cells.h"
#include "runtime/runs/recipe_record.h"
#include "runtime/runs/run_status.h"
#include "runtime/runs/run_store.h"

namespace lmkit::repl {
namespace {

namespace fs = std::filesystem;

enum class FolderKind { kBatch, kRecipe, kRun };

// What lmkit wrote the folder as; UsageError naming the three marks otherwise.
FolderKind folder_kind(const std::string& dir) {
  const fs::path path(dir);
  std::error_code error;
  if (!fs::exists(path, error)) throw UsageError("'" + dir + "' does not exist");
  if (!fs::is_directory(path, error)) {
    throw UsageError("'" + dir + "' is a file; give a folder: a batch's or a recipe's output folder, or a training run's directory");
  }
  // One record for a recipe's folder, whichever command made it; a batch's has its batch section.
  if (const auto record = training::find_recipe_record(dir, "`lmkit run` of the recipe with --set out=" + dir + " rewrites it")) {
    return record->batch ? FolderKind::kBatch : FolderKind::kRecipe;
  }
  if (fs::exists(path / "config.json")) return FolderKind::kRun;
  throw UsageError("'" + dir + "' holds none of lmkit's results: no recipe.json (`lmkit run RECIPE` or `lmkit batch RECIPE " +
                   "--set out=DIR` makes one) and no config.json (a training run's directory)");
}

// --set key=value as `lmkit run` reads it back: strings quoted, so that "141" stays a string. The
// parser strips the quotes and unescapes nothing: a string with a quote or a backslash (which no
// number or boolean has) goes bare.
std::string set_argument(const std::string& key, const nlohmann::json& value) {
  if (value.is_string()) {
    const auto text = value.get<std::string>();
    if (text.find_first_of("\"\\") != std::string::npos) return key + "=" + text;
    return key + "=\"" + text + "\"";
  }
  return key + "=" + value.dump();
}

// The --set settings that give a folder's cells back: its resolved settings, or an older batch's
// own --set settings where those are all it recorded.
std::vector<std::string> folder_settings(const training::RecipeRecord& record) {
  if (!record.settings) return record.sets;
  std::vector<std::string> sets;
  for (auto it = record.settings->begin(); it != record.settings->end(); ++it) sets.push_back(set_argument(it.key(), it.value()));
  return sets;
}

int run_folder_status(const std::string& dir) {
  const auto status = training::run_status(dir);
  for (const auto& line : status.lines()) std::cout << line << "\n";
  if (status.done()) return 0;
  return status.failed() ? 1 : 3;
}

int recipe_folder_status(const std::string& dir) {
  const auto record = training::read_recipe_record(dir);
  std::cout << fmt::format("Recipe {} ({}) in {}: {} cell{}\n", record.name, record.recipe.empty() ? "file not recorded" : record.recipe, dir, record.cells.size(),
                           record.cells.size() == 1 ? "" : "s");
  std::size_t done = 0, failed = 0, width = 4;
  for (const auto& id : record.cells) width = std::max(width, id.size());
  std::cout << fmt::format("  {:>4}  {:<{}}  {:<9}  {}\n", "cell", "id", width, "state", "detail");
  for (std::size_t i = 0; i < record.cells.size(); ++i) {
    const auto cell = fs::path(dir) / "cells" / record.cells[i];
    std::string state = "pending", detail;
    if (fs::exists(cell / "result.json")) {
      if (training::read_cell_result(dir, record.cells[i])) {
        state = "done";
        ++done;
      } else {
        state = "damaged";  // the report takes it as missing
        detail = "result.json is not a JSON object: remove the cell's folder to run it again";
      }
    } else if (fs::exists(cell / "run" / "config.json")) {
      const auto run = training::run_status((cell / "run").string());
      state = run.state == "finished" ? "trained" : run.state;  // its result not written yet
      detail = run.epochs > 0 ? fmt::format("epoch {} of {}", run.epoch, run.epochs) : fmt::format("epoch {}", run.epoch);
      if (run.best_valid_ppl) detail += fmt::format(", best valid ppl {:.2f}", *run.best_valid_ppl);
      if (run.eta_seconds) detail += ", about " + format_duration(*run.eta_seconds) + " left";
      if (run.failed()) ++failed;
    } else if (fs::exists(cell / "failed.json")) {
      // The cell's run raised: its message's first line (the file holds it whole, with its traceback).
      state = "failed";
      ++failed;
      try {
        const auto record = training::read_json_object(cell / "failed.json");
        detail = record.value("error", std::string());
        detail = detail.substr(0, detail.find('\n'));
        if (detail.size() > 100) detail = detail.substr(0, 97) + "...";
      } catch (const EnvironmentError&) {
        detail = "failed.json is unreadable";
      }
    } else if (fs::exists(cell)) {
      state = "started";  // made, then stopped before its run began (or a recipe without runs)
    }
    auto line = fmt::format("  {:>4}  {:<{}}  {:<9}  {}", i + 1, record.cells[i], width, state, detail);
    line.erase(line.find_last_not_of(' ') + 1);
    std::cout << line << "\n";
  }
  std::cout << fmt::format("{} of {} cell{} done", done, record.cells.size(), record.cells.size() == 1 ? "" : "s");
  if (done == record.cells.size()) {
    std::cout << fmt::format(": `lmkit report {}` renders the report", dir);
  } else if (!record.recipe.empty()) {
    // The rest runs by running the recipe again with the folder's settings (finished cells are kept).
    std::cout << fmt::format("; the rest: lmkit run {} --set out={}", record.recipe, dir);
    for (const auto& set : folder_settings(record)) std::cout << " --set " << set;
  }
  std::cout << "\n";
  if (done == record.cells.size()) return 0;
  return failed > 0 ? 1 : 3;
}

int run_child(const std::vector<std::string>& arguments) {
  std::vector<char*> argv;
  for (const auto& a : arguments) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  const pid_t pid = ::fork();
  if (pid < 0) throw EnvironmentError(std::string("cannot start the report's lmkit: ") + std::strerror(errno));
  if (pid == 0) {
    ::execv(argv[0], argv.data());
    std::cerr << "cannot run " << arguments[0] << ": " << std::strerror(errno) << "\n";
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// The recipe's report over its finished cells: `lmkit run RECIPE --set <its settings> --set out=DIR
// --set report_only=true` in a child lmkit (a fresh Lua state, as `lmkit run` would have).
int recipe_folder_report(const std::string& dir) {
  const auto record = training::read_recipe_record(dir);
  if (record.recipe.empty() || !fs::exists(record.recipe)) {
    throw UsageError("the recipe of '" + dir + "', " + record.recipe + ", is gone: run `lmkit run RECIPE --set out=" + dir +
                     " --set report_only=true` with the recipe's file and the settings in " + dir + "/recipe.json");
  }
  std::vector<std::string> arguments{fs::read_symlink("/proc/self/exe").string(), "run", record.recipe};
  for (const auto& set : folder_settings(record)) {
    arguments.push_back("--set");
    arguments.push_back(set);
  }
  for (const auto& extra : {"out=" + dir, std::string("report_only=true")}) {
    arguments.push_back("--set");
    arguments.push_back(extra);
  }
  return run_child(arguments);
}

// A training run's report: its status, one line per epoch, and its learning curve beside its files.
int run_folder_report(const std::string& dir) {
  const auto status = training::run_status(dir);
  for (const auto& line : status.lines()) std::cout << line << "\n";
  if (!status.records_problem.empty()) return 1;  // its epochs are not the run's: no table, no curve
  std::cout << fmt::format("  {:>5}  {:>10}  {:>10}  {:>9}\n", "epoch", "train ppl", "valid ppl", "seconds");
  training::RunStore(dir).read_metrics([](std::size_t, const nlohmann::json& record) {
    if (record.find("type") == record.end() || record.at("type") != "epoch") return;
    const auto number = [&](const char* key, int decimals) {
      const auto it = record.find(key);
      return it != record.end() && it->is_number() ? fmt::format("{:.{}f}", it->get<double>(), decimals) : std::string("-");
    };
    const auto stage = record.find("stage");
    std::cout << fmt::format("  {:>5}  {:>10}  {:>10}  {:>9}{}\n", number("epoch", 0), number("train_ppl", 2),
                             number("valid_ppl", 2), number("epoch_seconds", 2),
                             stage != record.end() && *stage == "finetune" ? "  (finetune)" : "");
  });
  if (status.epoch == 0) return 0;
  return call_lmkit_function("lmkit.recipe", "plot_run", nlohmann::json{{"dir", dir}}, {}, "");
}

// Runs the command for the kind of folder `dir` is; a mistake or an unreadable file is said in
// lmkit's words (exit 2).
int for_folder(const std::string& dir, int (*batch)(const std::string&), int (*recipe)(const std::string&),
               int (*run)(const std::string&)) {
  try {
    switch (folder_kind(dir)) {
      case FolderKind::kBatch: return batch(dir);
      case FolderKind::kRecipe: return recipe(dir);
      case FolderKind::kRun: return run(dir);
    }
  } catch (const UsageError& e) {
    std::cerr << "lmkit: " << e.what() << "\n";
  } catch (const EnvironmentError& e) {
    std::cerr << "lmkit: " << e.what() << "\n";
  } catch (const fs::filesystem_error& e) {
    std::cerr << "lmkit: cannot read '" << e.path1().string() << "': " << e.code().message() << "\n";
  } catch (const nlohmann::json::exception& e) {
    // A file lmkit wrote, edited since: an entry of another type than lmkit writes.
    std::cerr << "lmkit: a file in '" << dir << "' has an entry of another type than lmkit writes (" << e.what()
              << "); was it edited? Restore it, or remove the folder's damaged part\n";
  }
  return 2;
}

}  // namespace

int show_folder_status(const std::string& dir) {
  return for_folder(dir, show_batch_status, recipe_folder_status, run_folder_status);
}

int report_folder(const std::string& dir) { return for_folder(dir, report_batch, recipe_folder_report, run_folder_report); }

}  // namespace lmkit::repl
