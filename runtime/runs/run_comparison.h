// `lmkit compare DIR...`: training runs side by side. Each DIR is a run directory (config.json), or
// a recipe's or a batch's output folder, whose cells' runs (cells/<id>/run) all take part. For each
// run: its state, best and final numbers and its validation curve; across runs: the settings of
// config.json whose values are not the same in all of them (the run's own id, folder and the
// corpus's file paths aside), so that what was varied is seen at once.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/runs/run_status.h"

namespace lmkit::training {

struct ComparedRun {
  std::string label;  // the folder as given, or "<folder>/<cell id>" for a recipe's cell
  RunStatus status;   // its state, epochs, perplexities and validation curve
  nlohmann::json settings;  // config.json flattened: {"model.head.kind": "gss", ...}
  std::string unreadable;   // why its files could not be read ("" when they could): a row says so
};

struct RunComparison {
  std::vector<ComparedRun> runs;
  std::vector<std::string> differing;  // the flattened keys whose values differ among readable runs, in key order
  std::vector<std::string> notes;      // cells without a run, runs given twice
};

// Reads the runs of `dirs`; UsageError naming a folder that does not exist, is a file, or holds
// no run (and what would), and when no folder is given. A run whose files are damaged is kept as
// unreadable, with the reason, so that one bad cell does not hide a grid. Each run's metric_curve
// follows `curve_metric` (run_status).
RunComparison compare_runs(const std::vector<std::string>& dirs, const std::string& curve_metric = "valid_ppl");

// config.json's leaves as "a.b.c" → value; arrays stay whole values. The keys no comparison shows
// (run_id, train.run_dir, corpus.source, corpus.origin, corpus.hash) are left out; corpus.content
// stands for the three splits' hashes (equal exactly when the token streams are).
nlohmann::json flattened_settings(const nlohmann::json& config);

// The comparison as a person reads it: one row per run (state, epochs, best valid ppl and its epoch,
// final valid ppl, train and test ppl, s/epoch), the unreadable runs' reasons and the notes, then
// the settings that differ, one row per run, as columns that fit `columns` characters (a setting
// too wide for one table goes into the next; a line still too wide is cut, 0: no limit). Text read
// from the runs' files is printed with its control characters as '?'.
std::vector<std::string> comparison_lines(const RunComparison& comparison, std::size_t columns);

}  // namespace lmkit::training
