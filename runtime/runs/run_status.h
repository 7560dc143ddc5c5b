// Where a training run stands, read from its directory alone (`lmkit status DIR`): running (its
// directory's lock is held: training_state.h takes it), ended (summary.json's status) or stopped
// without a summary (a killed process; state.ckpt resumes it), with its epochs, best validation
// perplexity and, while it runs, an ETA from the epochs' mean duration.
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace lmkit::training {

struct RunStatus {
  std::string dir;
  // "running", "stopped" (no summary, nobody training) or summary.json's status ("finished",
  // "diverged", "interrupted", "preempted", ...).
  std::string state;
  std::optional<std::string> holder;  // the process training it, when running
  std::optional<std::string> stop_reason;
  // Epochs count on through the finetune stage: a run of 3 epochs and 2 finetune epochs has
  // epochs 1..5, the finetune ones 4 and 5 (metrics.jsonl numbers them 1 and 2 within their stage).
  std::int64_t epoch = 0;   // the last epoch that finished (0: none yet)
  std::int64_t epochs = 0;  // the epochs the run was started for, finetune ones included (0: not recorded)
  std::optional<double> best_valid_ppl, last_valid_ppl, test_ppl, train_ppl;  // train_ppl: the summary's
  std::int64_t best_epoch = 0;
  std::vector<std::pair<std::int64_t, double>> valid_curve;  // (epoch, valid ppl) per finished epoch
  // The curve of one chosen number (run_status's `curve_metric`): (epoch, value) from the epoch
  // records' field of that name, or from the records a recipe wrote with run:record (type
  // "recipe"), the last value of each epoch. `recorded_metrics`: the numbers the records have, by
  // name, for a message when the chosen one is not among them.
  std::vector<std::pair<std::int64_t, double>> metric_curve;
  std::set<std::string> recorded_metrics;
  std::optional<double> seconds_per_epoch;  // the finished epochs' mean
  std::optional<double> eta_seconds;        // running: the epochs left at that rate
  bool resumable = false;                   // not finished, with a state.ckpt: lmkit.resume continues it
  // A head written in Lua ("custom 'extra bias'"), which config.json cannot rebuild: resuming needs
  // the model given again. Empty for a built-in head.
  std::string lua_head;
  // Why metrics.jsonl is not this run's record (another run's lines, lines lmkit did not write, or,
  // for a finished run, epochs summary.json does not count or a cut last line); its numbers are
  // then not shown. Empty when it is.
  std::string records_problem;

  bool done() const { return state == "finished" && records_problem.empty(); }
  bool failed() const { return state == "diverged" || state == "failed" || !records_problem.empty(); }
  // "running: epoch 3 of 40, best valid ppl 81.2 (epoch 3), 12.4 s per epoch, about 7m 25s left" and more
  // lines: what `lmkit status` prints.
  std::vector<std::string> lines() const;
};

// The status of the run directory `dir` (one with a config.json); UsageError naming it otherwise.
// `curve_metric` names the number metric_curve follows (default: the validation perplexity).
RunStatus run_status(const std::string& dir, const std::string& curve_metric = "valid_ppl");

}  // namespace lmkit::training
