// The AWD-LSTM training protocol (SPEC §2; Merity et al. 2018 main.py/finetune.py; Yang et al.
// 2018 for gradient accumulation; thesis ch. 4 for ET-ASGD and flooding), one run at a time.
//
// An epoch: BPTT windows from the sampler (bptt_sampler.h); per window every group's lr is scaled
// by seq_len/bptt (the main one and a head's own-lr group: PLIF's slopes at 0.02), the hidden state
// carried (detached), loss = flood(NLL) + AR + TAR, backward, gradient norm clipped to `clip`,
// optimizer step. With small_batch_size < batch_size, the window's columns are processed in chunks
// that each keep their own hidden state and contribute loss·(small/batch) to one step.
// Flooding (Ishida et al. 2020): NLL → |NLL − b| + b on the training NLL only (not AR/TAR).
// After each epoch: validation (averaged weights while averaging), best checkpoint, switch policy
// (switch_policy.h), metrics, callbacks, last checkpoint and resume state. Then an optional
// finetune stage, and a final evaluation of the best model on valid and test.
//
// Stops: `epochs` done; `max_seconds` of wall time (resumable); a callback's stop(); a preemption
// signal (preemption.h: state saved at the step boundary, Preempted thrown); a non-finite loss or
// gradient norm (status "diverged" with a diagnostic naming the parameters, checkpoints of the
// last good epoch kept). summary.json records which.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/data/corpus.h"
#include "runtime/models/language_model.h"
#include "runtime/runs/run_store.h"
#include "runtime/training/train_options.h"

namespace lmkit::training {

// What the Lua layer (or any host) plugs in. The info objects are JSON (documented in
// docs/training.md) so that every host sees the same fields.
struct TrainCallbacks {
  std::function<void(const nlohmann::json&)> on_step;       // every step
  std::function<void(const nlohmann::json&)> on_epoch_end;  // after validation and checkpoints
  std::function<void(const nlohmann::json&)> on_switch;     // when averaging starts
  std::function<void(const nlohmann::json&)> on_eval;       // after every evaluation
  // Host RNG state at every step boundary (captured, stored in resume states, restored).
  std::function<nlohmann::json()> capture_host_state;
  std::function<void(const nlohmann::json&)> restore_host_state;
};

class Trainer {
 public:
  // Prepares the run directory: a fresh run writes config.json; a directory holding an unfinished
  // run of the same configuration is resumed from its state.ckpt (epochs, max_seconds and
  // log_interval may differ); anything else is a UsageError that says what differs.
  Trainer(LanguageModel model, data::Corpus corpus, TrainOptions options, std::string run_dir,
          TrainCallbacks callbacks = {});
  ~Trainer();

  // Runs to the end (see the stops above) and returns summary.json's content.
  nlohmann::json run();

  // For callbacks: stop after the current step (status "stopped"), the main group's lr, freezing.
  void request_stop(const std::string& reason);
  double lr() const;
  void set_lr(double lr);
  // Freezes/unfreezes the parameters whose names start with `prefix` ("encoder.lstm0_", "head.");
  // returns how many matched. Frozen parameters get no gradient and no update.
  std::int64_t set_frozen(const std::string& prefix, bool frozen);
  // A recipe's own numbers, appended to metrics.jsonl as {"type": "recipe", stage, epoch, step,
  // name: value, ...} at the epoch in progress (in on_step) or just finished (in on_epoch_end):
  // `lmkit compare --metric NAME` plots them. UsageError for no values, more than 64, a name that
  // is not an identifier of at most 64 characters or is a record's own (type, run_id, stage, epoch,
  // step, batch), or a value that is not finite (JSON has no NaN).
  void record(const std::map<std::string, double>& values);

  bool resumed() const;
  const RunStore& store() const;
  LanguageModel& model();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// What a training callback may do (lmkit.TrainControl): stop after the current step (reason nil:
// "stopped by a callback"), freeze or unfreeze the parameters under a name prefix (UsageError when
// no name starts with it); both return how many parameters matched.
void stop_training(Trainer& trainer, const std::optional<std::string>& reason);
std::int64_t freeze_parameters(Trainer& trainer, const std::string& prefix);
std::int64_t unfreeze_parameters(Trainer& trainer, const std::string& prefix);

// The resolved configuration a run stores in config.json (model, head, corpus, training).
nlohmann::json run_config(const LanguageModel& model, const data::Corpus& corpus, const TrainOptions& options);

}  // namespace lmkit::training
