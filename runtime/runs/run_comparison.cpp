#include "runtime/runs/run_comparison.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "runtime/core/error.h"
#include "runtime/core/terminal_text.h"
#include "runtime/runs/recipe_record.h"
#include "runtime/runs/run_store.h"

namespace lmkit::training {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

void flatten_into(const json& value, const std::string& prefix, json& out) {
  if (value.is_object() && !value.empty()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      flatten_into(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    }
  } else {
    out[prefix] = value;
  }
}

ComparedRun read_run(const std::string& dir, const std::string& label, const std::string& curve_metric) {
  ComparedRun run;
  run.label = label;
  run.status.dir = dir;
  try {
    run.status = run_status(dir, curve_metric);
    run.settings = flattened_settings(RunStore(dir).read_json("config.json"));
  } catch (const EnvironmentError& e) {
    run.status.state = "unreadable";
    run.unreadable = e.what();
  }
  return run;
}

// "runs/grid" for "runs/grid/" (labels join cell ids to it).
std::string without_trailing_slash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

// Whether `path` exists, as what; a path that cannot be examined (a loop of links, no permission)
// is named with the reason.
fs::file_status examined(const fs::path& path, const std::string& shown) {
  std::error_code error;
  const auto status = fs::status(path, error);
  if (error && error != std::errc::no_such_file_or_directory) {
    throw UsageError("'" + shown + "' cannot be examined: " + error.message());
  }
  return status;
}

bool is_file_in(const fs::path& path) {
  std::error_code error;
  return fs::exists(path, error) && !error;
}

// The cells of a recipe's (or a batch's) folder: recipe.json's, in grid order, else cells/'s
// folders by name (a batch whose recipe wrote no record yet).
std::vector<std::string> cell_ids(const fs::path& folder) {
  if (const auto record = find_recipe_record(folder.string(), "`lmkit run` of the recipe with --set out=" + folder.string() +
                                                                  " rewrites it")) {
    return record->cells;
  }
  std::vector<std::string> ids;
  std::error_code error;
  for (fs::directory_iterator it(folder / "cells", error), end; !error && it != end; it.increment(error)) {
    std::error_code kind_error;
    if (it->is_directory(kind_error) && !kind_error) ids.push_back(it->path().filename().string());
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

void add_folder(const std::string& dir, const std::string& curve_metric, RunComparison& comparison) {
  const fs::path path(dir);
  const auto status = examined(path, dir);
  if (!fs::exists(status)) throw UsageError("'" + dir + "' does not exist");
  if (!fs::is_directory(status)) {
    throw UsageError("'" + dir + "' is a file; give run directories or recipe output folders");
  }
  const auto label = without_trailing_slash(dir);
  if (fs::exists(examined(path / "config.json", dir + "/config.json"))) {
    comparison.runs.push_back(read_run(dir, label, curve_metric));
    return;
  }
  if (fs::exists(examined(path / "recipe.json", dir + "/recipe.json")) ||
      fs::exists(examined(path / "batch" / "manifest.json", dir + "/batch/manifest.json"))) {
    const auto ids = cell_ids(path);
    std::size_t found = 0;
    for (const auto& id : ids) {
      const auto run_dir = path / "cells" / id / "run";
      if (!is_file_in(run_dir / "config.json")) continue;
      comparison.runs.push_back(read_run(run_dir.string(), label + "/" + id, curve_metric));
      ++found;
    }
    if (found == 0) {
      throw UsageError("'" + dir + "' is a recipe's folder whose cells trained no model (no cells/<id>/run " +
                       "with a config.json): its recipe analyses without training, or none of its cells has started");
    }
    if (found < ids.size()) {
      comparison.notes.push_back(fmt::format("{}: {} of its {} cells have no training run yet (not started, or their "
                                             "recipe trains nothing there): not shown", label, ids.size() - found, ids.size()));
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
  if (!config.is_object() || config.empty()) return flat;
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
  if (!kept.empty()) flatten_into(kept, "", flat);
  return flat;
}

RunComparison compare_runs(const std::vector<std::string>& dirs, const std::string& curve_metric) {
  if (dirs.empty()) throw UsageError("give at least one run directory or recipe output folder");
  RunComparison comparison;
  for (const auto& dir : dirs) add_folder(dir, curve_metric, comparison);
  // A run given twice (a folder and one of its cells, say) is shown once.
  std::set<std::string> seen;
  std::vector<ComparedRun> unique;
  for (auto& run : comparison.runs) {
    std::error_code error;
    const auto canonical = fs::weakly_canonical(run.status.dir, error);
    const auto key = error ? run.status.dir : canonical.string();
    if (seen.insert(key).second) {
      unique.push_back(std::move(run));
    } else {
      comparison.notes.push_back(run.label + ": given twice, shown once");
    }
  }
  comparison.runs = std::move(unique);
  // Every key of a readable run, then those whose value is not the same in all of them (missing
  // counts as a value).
  std::vector<const ComparedRun*> readable;
  for (const auto& run : comparison.runs) {
    if (run.unreadable.empty()) readable.push_back(&run);
  }
  std::set<std::string> keys;
  for (const auto* run : readable) {
    for (auto it = run->settings.begin(); it != run->settings.end(); ++it) keys.insert(it.key());
  }
  for (const auto& key : readable.empty() ? std::set<std::string>{} : keys) {
    const auto& first_settings = readable.front()->settings;
    const auto first = first_settings.find(key);
    const bool first_has = first != first_settings.end();
    for (const auto* run : readable) {
      const auto it = run->settings.find(key);
      const bool has = it != run->settings.end();
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
  // Text from the runs' files is shown, never obeyed (no line breaks or terminal sequences), and a
  // value longer than a table cell should be is cut.
  const auto cell = [](const std::string& text) { return fit_to_width(printable_text(text), 40); };
  const auto label_of = [&](const ComparedRun& run) {
    // At most half the width (a third of a narrow one), so that a row has room for its numbers.
    return fit_to_width(printable_text(run.label), columns == 0 ? 0 : std::max<std::size_t>(columns / 2, 30));
  };
  const auto fitted = [&](std::vector<std::string> lines) {
    for (auto& line : lines) line = fit_to_width(line, columns);
    out.insert(out.end(), lines.begin(), lines.end());
  };
  out.push_back(fmt::format("{} run{} compared", runs.size(), runs.size() == 1 ? "" : "s"));
  std::vector<std::vector<std::string>> rows{
      {"run", "state", "epochs", "best valid ppl", "at epoch", "final valid ppl", "train ppl", "test ppl", "s/epoch"}};
  for (const auto& run : runs) {
    const auto& s = run.status;
    rows.push_back({label_of(run), cell(s.state),
                    s.epochs > 0 ? fmt::format("{}/{}", s.epoch, s.epochs) : fmt::format("{}", s.epoch),
                    optional_number(s.best_valid_ppl, 2), s.best_valid_ppl ? fmt::format("{}", s.best_epoch) : "-",
                    optional_number(s.last_valid_ppl, 2), optional_number(s.train_ppl, 2),
                    optional_number(s.test_ppl, 2), optional_number(s.seconds_per_epoch, 1)});
  }
  std::vector<std::string> table;
  append_table(rows, table);
  fitted(table);
  for (const auto& run : runs) {
    if (!run.unreadable.empty()) fitted({"  " + label_of(run) + " is unreadable: " + printable_text(run.unreadable)});
    if (!run.status.records_problem.empty()) {
      fitted({"  " + label_of(run) + ": its metrics.jsonl is not this run's record (" +
              printable_text(run.status.records_problem) + "), so its epochs are not shown"});
    }
  }
  for (const auto& note : comparison.notes) fitted({"  " + printable_text(note)});
  out.push_back("");
  std::size_t readable = 0;
  for (const auto& run : runs) readable += run.unreadable.empty() ? 1 : 0;
  if (readable < 2) {
    out.push_back("Settings: fewer than two readable runs, nothing to compare them with.");
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
  for (const auto& run : runs) label_width = std::max(label_width, display_width(label_of(run)));
  std::size_t start = 0;
  while (start < comparison.differing.size()) {
    std::size_t used = 3 + label_width, end = start;
    while (end < comparison.differing.size()) {
      std::size_t width = display_width(cell(comparison.differing[end]));
      for (const auto& run : runs) width = std::max(width, display_width(cell(setting_text(run.settings, comparison.differing[end]))));
      if (end > start && columns > 0 && used + 2 + width > columns) break;
      used += 2 + width;
      ++end;
    }
    std::vector<std::vector<std::string>> settings{{"run"}};
    for (std::size_t k = start; k < end; ++k) settings[0].push_back(cell(comparison.differing[k]));
    for (const auto& run : runs) {
      if (!run.unreadable.empty()) continue;
      std::vector<std::string> row{label_of(run)};
      for (std::size_t k = start; k < end; ++k) row.push_back(cell(setting_text(run.settings, comparison.differing[k])));
      settings.push_back(row);
    }
    if (start > 0) out.push_back("");
    std::vector<std::string> lines;
    append_table(settings, lines);
    fitted(lines);
    start = end;
  }
  return out;
}

}  // namespace lmkit::training
