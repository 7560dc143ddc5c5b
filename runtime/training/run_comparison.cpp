#include "runtime/training/run_comparison.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "runtime/core/error.h"
#include "runtime/core/terminal_text.h"
#include "runtime/training/recipe_record.h"
#include "runtime/training/run_store.h"

namespace lmkit::training {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<double> number_at(const json& object, const char* key) {
  const auto it = object.is_object() ? object.find(key) : object.end();
  if (!object.is_object() || it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

void flatten_into(const json& value, const std::string& prefix, json& out) {
  if (value.is_object() && !value.empty()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      flatten_into(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
  } else {
    out[prefix] = value;
  }
}

ComparedRun read_run(const std::string& dir, const std::string& label) {
  ComparedRun run;
  run.label = label;
  run.status = run_status(dir);
  const RunStore store(dir);
  run.settings = flattened_settings(store.read_json("config.json"));
  double last_main = 0;
  for (const auto& record : store.metrics()) {
    if (!record.is_object() || record.value("type", json()) != "epoch") continue;
    const auto epoch = number_at(record, "epoch");
    const auto valid = number_at(record, "valid_ppl");
    if (!epoch || !valid) continue;
    // Finetune epochs count from 1 again: they follow the main ones on the curve.
    const bool finetune = record.value("stage", json()) == "finetune";
    if (!finetune) last_main = std::max(last_main, *epoch);
    run.epochs.push_back(finetune ? last_main + *epoch : *epoch);
    run.valid_ppl.push_back(*valid);
    run.final_valid_ppl = valid;
  }
  if (store.exists("summary.json")) {
    try {
      run.train_ppl = number_at(store.read_json("summary.json"), "train_ppl");
    } catch (const EnvironmentError&) {
      // run_status has said what it could of a damaged summary; the comparison goes on without it.
    }
  }
  return run;
}

// The cells of a recipe's (or a batch's) folder: recipe.json's, in grid order, else cells/'s
// folders by name (a batch whose recipe wrote no record yet).
std::vector<std::string> cell_ids(const fs::path& folder) {
  if (fs::exists(folder / "recipe.json")) return read_recipe_record(folder.string()).cells;
  std::vector<std::string> ids;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(folder / "cells", error)) {
    if (entry.is_directory()) ids.push_back(entry.path().filename().string());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void add_folder(const std::string& dir, std::vector<ComparedRun>& runs) {
  const fs::path path(dir);
  std::error_code error;
  if (!fs::exists(path, error)) throw UsageError("'" + dir + "' does not exist");
  if (!fs::is_directory(path, error)) {
    throw UsageError("'" + dir + "' is a file; give run directories or recipe output folders");
  }
  if (fs::exists(path / "config.json")) {
    runs.push_back(read_run(dir, dir));
    return;
  }
  if (fs::exists(path / "recipe.json") || fs::exists(path / "batch" / "manifest.json")) {
    std::size_t found = 0;
    for (const auto& id : cell_ids(path)) {
      const auto run_dir = path / "cells" / id / "run";
      if (!fs::exists(run_dir / "config.json")) continue;
      runs.push_back(read_run(run_dir.string(), dir + "/" + id));
      ++found;
    }
    if (found == 0) {
      throw UsageError("'" + dir + "' is a recipe's folder whose cells trained no model (no cells/<id>/run " +
                       "with a config.json): its recipe analyses without training, or none of its cells has started");
    }
    return;
  }
  throw UsageError("'" + dir + "' holds no training run: give a run directory (config.json, e.g. " +
                   "runs/quickstart-...) or a recipe's output folder (recipe.json, e.g. runs/gss_grid-tiny)");
}

std::string optional_number(const std::optional<double>& value, int decimals) {
  return value ? fmt::format("{:.{}f}", *value, decimals) : std::string("-");
}

// A setting's value in a table cell: strings bare, the rest as JSON, "-" when the run has none.
std::string setting_text(const json& settings, const std::string& key) {
  const auto it = settings.find(key);
  if (it == settings.end()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// Rows of cells as aligned text: the first row is the header; column 0 left-aligned, the rest right.
void append_table(const std::vector<std::vector<std::string>>& rows, std::vector<std::string>& out) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  for (const auto& row : rows) {
    std::string line = " ";
    for (std::size_t c = 0; c < row.size(); ++c) {
      const auto pad = std::string(widths[c] - display_width(row[c]), ' ');
      line += "  " + (c == 0 ? row[c] + pad : pad + row[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.push_back(line);
  }
}

}  // namespace

json flattened_settings(const json& config) {
  json flat = json::object();
  if (!config.is_object()) return flat;
  json kept = config;
  kept.erase("run_id");
  if (auto train = kept.find("train"); train != kept.end() && train->is_object()) train->erase("run_dir");
  if (auto corpus = kept.find("corpus"); corpus != kept.end() && corpus->is_object()) {
    if (const auto hash = corpus->find("hash"); hash != corpus->end() && hash->is_object()) {
      std::string content;
      for (const char* split : {"train", "valid", "test"}) {
        const auto it = hash->find(split);
        content += (content.empty() ? "" : "/") + (it != hash->end() && it->is_string() ? it->get<std::string>().substr(0, 8) : "?");
      }
      (*corpus)["content"] = content;
    }
    corpus->erase("hash");
    corpus->erase("source");
    corpus->erase("origin");
  }
  flatten_into(kept, "", flat);
  return flat;
}

RunComparison compare_runs(const std::vector<std::string>& dirs) {
  if (dirs.empty()) throw UsageError("give at least one run directory or recipe output folder");
  RunComparison comparison;
  for (const auto& dir : dirs) add_folder(dir, comparison.runs);
  // Every key of any run, then those whose value is not the same in all runs (missing counts as a value).
  std::map<std::string, bool> keys;
  for (const auto& run : comparison.runs) {
    for (auto it = run.settings.begin(); it != run.settings.end(); ++it) keys[it.key()] = true;
  }
  for (const auto& [key, unused] : keys) {
    (void)unused;
    const auto first = comparison.runs.front().settings.find(key);
    const bool first_has = first != comparison.runs.front().settings.end();
    for (const auto& run : comparison.runs) {
      const auto it = run.settings.find(key);
      const bool has = it != run.settings.end();
      if (has != first_has || (has && *it != *first)) {
        comparison.differing.push_back(key);
        break;
      }
    }
  }
  return comparison;
}

std::vector<std::string> comparison_lines(const RunComparison& comparison, std::size_t columns) {
  std::vector<std::string> out;
  const auto& runs = comparison.runs;
  out.push_back(fmt::format("{} run{} compared", runs.size(), runs.size() == 1 ? "" : "s"));
  std::vector<std::vector<std::string>> rows{
      {"run", "state", "epochs", "best valid ppl", "at epoch", "final valid ppl", "train ppl", "test ppl", "s/epoch"}};
  for (const auto& run : runs) {
    const auto& s = run.status;
    rows.push_back({run.label, s.state, s.epochs > 0 ? fmt::format("{}/{}", s.epoch, s.epochs) : fmt::format("{}", s.epoch),
                    optional_number(s.best_valid_ppl, 2), s.best_valid_ppl ? fmt::format("{}", s.best_epoch) : "-",
                    optional_number(run.final_valid_ppl, 2), optional_number(run.train_ppl, 2),
                    optional_number(s.test_ppl, 2), optional_number(s.seconds_per_epoch, 1)});
  }
  append_table(rows, out);
  out.push_back("");
  if (runs.size() < 2) {
    out.push_back("Settings: one run, nothing to compare them with.");
    return out;
  }
  if (comparison.differing.empty()) {
    out.push_back("Settings: the same in every run (config.json; run ids and folders aside).");
    return out;
  }
  out.push_back(fmt::format("Settings that differ ({} of config.json's; the rest are the same in every run):",
                            comparison.differing.size()));
  // As many setting columns per table as fit the width; the run's label starts every table.
  std::size_t label_width = 3;
  for (const auto& run : runs) label_width = std::max(label_width, display_width(run.label));
  std::size_t start = 0;
  while (start < comparison.differing.size()) {
    std::size_t used = 3 + label_width, end = start;
    while (end < comparison.differing.size()) {
      std::size_t width = display_width(comparison.differing[end]);
      for (const auto& run : runs) width = std::max(width, display_width(setting_text(run.settings, comparison.differing[end])));
      if (end > start && columns > 0 && used + 2 + width > columns) break;
      used += 2 + width;
      ++end;
    }
    std::vector<std::vector<std::string>> table{{"run"}};
    for (std::size_t k = start; k < end; ++k) table[0].push_back(comparison.differing[k]);
    for (const auto& run : runs) {
      std::vector<std::string> row{run.label};
      for (std::size_t k = start; k < end; ++k) row.push_back(setting_text(run.settings, comparison.differing[k]));
      table.push_back(row);
    }
    if (start > 0) out.push_back("");
    append_table(table, out);
    start = end;
  }
  return out;
}

}  // namespace lmkit::training
