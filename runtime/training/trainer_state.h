// Trainer's private state: the run's objects, its counters (all in the resume state) and the
// steps of the protocol. Included only by the trainer's own files, one concept each:
//   trainer.cpp               the public Trainer, setup, and the run from start to summary
//   trainer_resume_state.cpp  the resume state: save, load (step for step), freezing
//   trainer_loop.cpp          a training step, an epoch, validation, checkpoints, finetuning
//   trainer_summary.cpp       summary.json and the facts it reports
#pragma once
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "runtime/models/run_id.h"
#include "runtime/training/trainer.h"
#include "runtime/core/atomic_file.h"
#include "runtime/core/device.h"
#include "runtime/core/error.h"
#include "runtime/core/file_lock.h"
#include "runtime/core/host_read.h"
#include "runtime/core/version.h"
#include "runtime/data/batching.h"
#include "runtime/data/bptt_sampler.h"
#include "runtime/data/corpus_origin.h"
#include "runtime/models/checkpoint.h"
#include "runtime/training/evaluation.h"
#include "runtime/training/optimizer.h"
#include "runtime/core/interruption.h"
#include "runtime/core/number_text.h"
#include "runtime/core/preemption.h"
#include "runtime/training/progress.h"
#include "runtime/training/run_progress.h"
#include "runtime/training/step_graphs.h"
#include "runtime/training/switch_policy.h"
#include "runtime/runs/tensorboard_writer.h"

namespace lmkit::training {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

// The differences of this run's configuration from a stored config.json, one "\n  key: stored
// X, now Y" line each; keys a resume may change (epochs, max_seconds, ...) are skipped.
std::string describe_differences(const json& stored, const json& now, const std::string& prefix = "");
// Whether two config.json corpus entries differ in content (words, tokens, hashes), not only in
// where the corpus was read from.
bool corpus_content_differs(const json& stored, const json& now);
// "the corpus changed since this run started": the stored and the present corpus entries of
// config.json (words, tokens and hash per split), and the way out.
std::string corpus_changed_message(const std::string& dir, const json& stored, const json& now);
// Refuses a split with fewer tokens than its batch size needs (train: batch_size, valid:
// eval_batch_size, test: test_batch_size when the run tests), naming the split, the option and
// the largest value that fits.
void check_splits_fit_batches(const data::Corpus& corpus, const TrainOptions& options);
// The process's peak resident memory so far.
std::int64_t peak_rss_bytes();

// The run's position, losses, best model, averaging, finetune progress and clocks are parts of
// their own (run_progress.h), each declaring its resumable fields once.
struct Trainer::State : RunPosition, LossTotals, BestModel, AveragingState, FinetuneProgress, RunClocks {
  State(LanguageModel m, data::Corpus c, TrainOptions o, const std::string& dir, TrainCallbacks cb)
      : model(std::move(m)), corpus(std::move(c)), options(std::move(o)), store(dir),
        writer(std::make_unique<FileLock>(store.dir().string(), "training run " + store.dir().string())),
        callbacks(std::move(cb)),
        device(model->embedding().device()),
        progress(Progress::detect_mode(), [this](const std::string& line) { store.append_log(line); }) {}

  LanguageModel model;
  data::Corpus corpus;
  TrainOptions options;
  RunStore store;
  // One writer per run directory, from before this trainer reads or writes anything there until
  // its run() ends: a second lmkit.train, resume or batch task on the directory is refused.
  std::unique_ptr<FileLock> writer;
  std::unique_ptr<TensorBoardWriter> tensorboard;  // with log_tensorboard (or LMKIT_TENSORBOARD=1)
  // The step-level curve's running mean (event files only: not part of the resume state).
  double tensorboard_loss_sum = 0;
  std::int64_t tensorboard_steps = 0;
  TrainCallbacks callbacks;
  torch::Device device;
  Progress progress;
  json config;

  std::vector<std::string> names;       // parameter names, in named_parameters order
  std::vector<torch::Tensor> params;
  torch::Tensor train_source;           // [nbatch, batch_size] on the device
  std::unique_ptr<data::BpttSampler> sampler;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<SwitchPolicy> policy;
  std::vector<EncoderState> hidden;        // one per small-batch chunk

  // Steps and tokens since interval_start, for the rates: the interval's loss may span a resume
  // (its sums are part of the saved state), but the clock restarts with each session and epoch.
  std::int64_t timed_steps = 0, timed_tokens = 0;
  json host_state;
  bool skip_capture_once = false;
  std::set<std::string> frozen;

  bool resumed = false;
  bool stop_requested = false;
  std::string stop_reason;
  std::string status;
  std::string diagnostic;
  Clock::time_point interval_start = Clock::now();

  std::int64_t chunk_size() const { return options.small_batch_size == 0 ? options.batch_size : options.small_batch_size; }

  // Where a step's on_step callback is (run:record's record is of that step, not of the steps
  // queued since); none outside on_step.
  struct RecordPosition {
    std::string stage;
    std::int64_t epoch = 0, step = 0;
  };
  std::optional<RecordPosition> recording_at;

  void log(const std::string& line) { progress.line(line); }
  // The run's identity (config.json's run_id; empty for a run created before identities): written
  // into every record and checkpoint the run writes, so that files copied in from another run are
  // told apart on resume and when the best model is read.
  std::string run_id() const { return run_id_in(config); }
  void metric(json record) {
    if (const auto id = run_id(); !id.empty()) record["run_id"] = id;
    store.append_metric(record);
    if (tensorboard) tensorboard->write_metrics(record);
  }

  // ---- setup ----

  std::vector<ParameterGroup> make_groups(double lr);

  void reset_hidden();

  // ---- resume state ----

  // Saves the state as of the last step boundary. host_state must have been captured there (the
  // capture reseeds the host RNG, so capturing twice at one boundary would change its stream).
  // in_loop: saved at the top of a training iteration, right after that boundary's capture; the
  // resumed run must then not capture again before its first window.
  void save_state(bool in_loop = false);

  void load_state();
  // load_state's restoring of this state from the container's header and tensors (an error that
  // is not lmkit's is translated by the caller).
  void restore_from(const nlohmann::json& header, const NamedTensors& tensors, const std::string& source);

  // Every field of state.ckpt's header in one list: the parts' (run_progress.h), then those of the
  // objects with states of their own. in_loop: see save_state.
  ResumableFields resumable_fields(bool in_loop = false);

  std::int64_t apply_frozen(const std::string& prefix, bool freeze);

  // ---- training ----

  // `gradient_squares`: each parameter's ‖∂L/∂p‖² at the step that went wrong (params' order).
  std::string nonfinite_diagnostic(const std::string& what, const std::vector<double>& gradient_squares) const;

  // What a diverged run leaves to go back to, as it is on disk (no claim about files that are not).
  std::string kept_checkpoints() const;

  // A validation loss that is not finite ends the run as a diverged training loss does.
  bool check_validation(const EvalResult& valid);

  // A step whose loss, gradient norm and squared gradient norms per parameter are on their way to
  // the host (DeferredHostRead); its bookkeeping (sums, progress, on_step, the interval line, the
  // divergence check) waits for them.
  struct PendingStep {
    std::int64_t epoch = 0, step = 0, batch = 0;  // the counters when the step began
    double base_lr = 0, lr_scale = 1;
    std::int64_t position = 0, seq_len = 0, tokens = 0;
    DeferredHostRead values;                      // [loss, norm, ‖g_p‖² for each parameter]
  };
  std::deque<PendingStep> in_flight;
  // Whether every step so far had a finite loss and gradient norm: a bool on the device, which
  // gates each update there (Optimizer::step(proceed)), so a non-finite step — seen on the host a
  // step later on a GPU — changes no weight, and neither does any step after it.
  torch::Tensor proceed;
  std::unique_ptr<StepGraphs> graphs;  // unless cuda_graphs = "off"

  // The step's device work on a window — the chunks' forward and backward, the norm, clipping and
  // the gated update — launched without reading anything back; returns [loss, norm, ‖g_p‖²...] on
  // the device. With state_in_place, the carried state is written into hidden's own tensors (a
  // graph's static state) instead of replacing them.
  torch::Tensor launch_step(const torch::Tensor& input, const torch::Tensor& target, bool state_in_place);
  // Every reason why steps of this run cannot be graphs with this optimizer, joined (empty: they
  // can); graph_disqualifier: for the current optimizer. The key of a step's shape when it can.
  std::string graph_obstacles(const std::string& optimizer_kind) const;
  std::string graph_disqualifier() const;
  std::string graph_key(const data::Batch& window) const;
  // The step through its graph: eager the first time its shape comes, captured the second, replayed after.
  torch::Tensor graphed_step(const std::string& key, const data::Batch& window);

  // One optimizer step on one window, launched without waiting for the device; then the
  // bookkeeping of the steps whose values have come back (on a GPU the previous step's, on the CPU
  // this one's). False when the run must stop (non-finite loss or gradient at a step, named).
  bool train_step(const data::Batch& window);
  // The bookkeeping of the pending steps until at most `keep` remain in flight (0: all, waiting for
  // their values). False at a non-finite step: the counters are put back to it, the diagnostic set.
  bool finish_pending(std::size_t keep);
  bool finish_step(PendingStep& pending, const std::vector<double>& values);
  // The learning-rate schedule's factor for the step about to be taken (1 without one).
  double schedule_factor() const;

  void restart_interval_clock();

  // Runs the rest of the current epoch. Returns false when the run stops inside it.
  bool train_epoch();

  EvalResult validate();

  void save_best(double valid_loss);

  // Loads best.ckpt, which the end of the run (and finetuning) needs. When it is missing or
  // unreadable, a run that was to finish ends "failed": summary.json says why and an
  // EnvironmentError names the file, what needed it and the way out — never a "finished" run
  // without the results it promised. A run that stopped for another reason (diverged, stopped)
  // keeps its status, gets the same text as its diagnostic, and false comes back.
  bool load_best(const std::string& needed_for);
  // Whether the run has a best model: an epoch of its own, or the weights it started from (init_from).
  bool has_best() const { return best_epoch > 0 || options.init_from.has_value(); }
  // init_from: the weights of `source` (a run directory's best.ckpt, or a checkpoint file) loaded into
  // the model, checked against its structure, then validated as the run's first best model (epoch 0).
  void start_from(const std::string& source);

  // Where a stored run stands, read from state.ckpt's header alone: nothing of it is restored (a
  // finished run that is refused leaves the caller's model and generators as they were).
  struct StoredPosition {
    std::string stage;
    std::int64_t epoch = 0, best_epoch = 0;
    bool finetune_done = false;
  };
  StoredPosition stored_position() const;
  // Whether the run's options leave epochs to train from `at`: more main epochs before its finetune
  // stage began, or finetune epochs while that stage has not ended.
  bool has_more_epochs(const StoredPosition& at) const;
  // "epochs 3 → 5", "finetune epochs 0 → 4": what continuing a finished run trains.
  std::string more_epochs_text(const StoredPosition& at) const;
  // Why a finished run has nothing left to train, and the ways to train on (more epochs, finetune,
  // a new run from its best model).
  std::string finished_run_message(const StoredPosition& at) const;

  // Validation, checkpoints, switch and metrics after an epoch of the main stage; false when the
  // validation loss diverged (nothing of this epoch is saved then).
  bool end_of_training_epoch();

  void finish_epoch(const EvalResult& valid, double epoch_time, bool best, bool switched);

  // AWD-LSTM's finetune.py: ASGD restarted from the best weights, until the non-monotone
  // criterion fires on the averaged validation loss (or finetune_epochs run out).
  bool finetune();

  json summary_json(const std::optional<EvalResult>& valid, const std::optional<EvalResult>& test) const;

  json write_summary(const std::optional<EvalResult>& valid = std::nullopt, const std::optional<EvalResult>& test = std::nullopt);
};

}  // namespace lmkit::training
