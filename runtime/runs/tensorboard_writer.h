// Training metrics as TensorBoard event files, so that curves appear where researchers already look
// (`tensorboard --logdir runs`): a run with log_tensorboard = true (or LMKIT_TENSORBOARD=1) writes
// each metrics.jsonl record's numbers as scalars into run_dir/events.out.tfevents.<time>.<host>.<pid>.
// Tags: a step record's fields under its stage ("train/loss", "train/ppl", "train/lr",
// "train/tokens_per_s"; "finetune/..."), an epoch record's under "<stage>_epoch" ("train_epoch/
// valid_ppl", ...); the step is the record's global step. The records are TFRecord frames (length,
// masked CRC-32C of the length, the serialized Event, masked CRC-32C of it) of the messages in
// tensorboard_event.proto. A resumed run starts a new file beside the first; TensorBoard reads both.
// Beside the records' scalars: a step-level curve of the training loss and rate ("train_steps/loss",
// "train_steps/lr"; about 50 points an epoch), the final perplexities ("final/valid_ppl",
// "final/test_ppl"), and the run's settings for the HPARAMS tab.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lmkit::training {

// Whether this build writes event files (it needs protobuf's compiler and library when configured).
bool tensorboard_available();

// Whether event files are asked for: the option when given, else $LMKIT_TENSORBOARD ("1" or "0";
// unset: no). UsageError naming the variable for another value, and when asked for on a build
// without them (with the packages to install).
bool tensorboard_requested(std::optional<bool> option);

class TensorBoardWriter {
 public:
  // A new event file in the folder `dir`, its first record the file version; EnvironmentError
  // naming the file when it cannot be written, UsageError on a build without event files.
  explicit TensorBoardWriter(const std::filesystem::path& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One event of scalars at `step`, stamped with the wall-clock time.
  void write_scalars(std::int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  // A metrics.jsonl record (type "step" or "epoch") as scalars, tagged as above; other records
  // and records without a step are skipped.
  void write_metrics(const nlohmann::json& record);
  // The run's settings ("train.lr" → 30, "model.head.kind" → "mos": numbers, strings and booleans;
  // other values left out) as the HParams plugin's session start, tag "_hparams_/session_start_info",
  // grouped under `group` (the run's id).
  void write_hparams(const std::vector<std::pair<std::string, nlohmann::json>>& settings, const std::string& group);

  const std::filesystem::path& file() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lmkit::training
