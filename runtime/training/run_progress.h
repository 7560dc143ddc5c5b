// Where a training run stands, in cohesive parts, each declaring its resumable fields once
// (ResumableFields): the trainer's state is made of them, so state.ckpt's header is written and
// read from those declarations. Objects with states of their own (the sampler, the switch policy,
// the optimizer, the random generators) are saved by the trainer beside them.
#pragma once
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "runtime/training/resumable_fields.h"

namespace lmkit::training {

// The stage ("train", then "finetune"), its completed epochs, optimizer steps over all stages, and
// windows done in the current epoch.
struct RunPosition {
  std::string stage = "train";
  std::int64_t epoch = 0;
  std::int64_t step = 0;
  std::int64_t batch = 0;

  void declare(ResumableFields& f) { f.add("stage", stage).add("epoch", epoch).add("step", step).add("batch", batch); }
};

// Running sums of the training loss: the log interval's (it may span a resume) and the epoch's, and
// the last finished epoch's mean.
struct LossTotals {
  double interval_loss = 0;
  std::int64_t interval_steps = 0;
  double epoch_loss = 0;
  std::int64_t epoch_steps = 0;
  double last_train_loss = std::numeric_limits<double>::quiet_NaN();

  void declare(ResumableFields& f) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    f.add("interval_loss", interval_loss, nan).add("interval_steps", interval_steps);
    f.add("epoch_loss", epoch_loss, nan).add("epoch_steps", epoch_steps);
    f.add("last_train_loss", last_train_loss, nan);
  }
};

// The best validation loss so far, its epoch, and the training loop's mean loss of that epoch (the
// thesis's "train ppl", SPEC §2).
struct BestModel {
  double best_valid = std::numeric_limits<double>::infinity();
  std::int64_t best_epoch = 0;
  double best_train_loss = std::numeric_limits<double>::quiet_NaN();

  void declare(ResumableFields& f) {
    f.add("best_valid", best_valid, std::numeric_limits<double>::infinity()).add("best_epoch", best_epoch);
    // States written before best_train_loss existed resume without it (the summary then has none).
    f.add("best_train_loss", best_train_loss, std::numeric_limits<double>::quiet_NaN()).optional(nullptr);
  }
};

// ASGD averaging: whether it is on, and the epoch the switch happened after.
struct AveragingState {
  bool averaging = false;
  std::optional<std::int64_t> switched_at;

  void declare(ResumableFields& f) { f.add("averaging", averaging).add("switched_at", switched_at); }
};

// AWD-LSTM's finetune stage: its validation history (the non-monotone criterion), best loss, and
// whether it started and ended.
struct FinetuneProgress {
  std::vector<double> finetune_history;
  double finetune_best = std::numeric_limits<double>::infinity();
  bool finetune_started = false;
  bool finetune_done = false;

  void declare(ResumableFields& f) {
    f.add("finetune_history", finetune_history);
    f.add("finetune_best", finetune_best, std::numeric_limits<double>::infinity());
    f.add("finetune_started", finetune_started).add("finetune_done", finetune_done);
  }
};

// Wall-clock time: of the whole run over its sessions, of the current epoch, of each finished epoch.
// A resumed session adds its own time to what the earlier ones took.
struct RunClocks {
  using Clock = std::chrono::steady_clock;
  double seconds_before = 0;        // wall time of earlier sessions of this run
  double epoch_seconds_before = 0;  // of the current epoch, in earlier sessions
  std::vector<double> epoch_seconds;
  Clock::time_point session_start = Clock::now();
  Clock::time_point epoch_start = Clock::now();

  double seconds() const { return seconds_before + std::chrono::duration<double>(Clock::now() - session_start).count(); }
  double epoch_elapsed() const {
    return epoch_seconds_before + std::chrono::duration<double>(Clock::now() - epoch_start).count();
  }

  void declare(ResumableFields& f) {
    f.add("seconds", [this] { return nlohmann::json(seconds()); },
          [this](const nlohmann::json& j) { seconds_before = j.get<double>(); });
    f.add("epoch_seconds_before", [this] { return nlohmann::json(epoch_elapsed()); },
          [this](const nlohmann::json& j) { epoch_seconds_before = j.get<double>(); });
    f.add("epoch_seconds", epoch_seconds);
  }
};

}  // namespace lmkit::training
