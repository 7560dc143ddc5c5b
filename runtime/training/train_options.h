// The options of a training run (lmkit.train{...}, config.json's "train"): declared once, in
// train_options.cpp, as a config::OptionSchema bound to TrainOptions' members — the JSON round
// trip, the checks (unknown keys with the nearest name, types, ranges, choices) and the docs all
// come from that one table, with the defaults of the struct below.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/config/option_schema.h"
#include "runtime/models/language_model.h"

namespace lmkit::training {

struct TrainOptions {
  double lr = 30;
  std::string optimizer = "sgd";        // "sgd" (switches to ASGD by policy), "adam" or "adamw"
  double wdecay = 1.2e-6;
  double clip = 0.25;                   // 0: no clipping
  std::optional<double> own_lr;         // lr of the head's own-lr parameters (PLIF slopes); default lr
  std::int64_t batch_size = 80;
  std::int64_t small_batch_size = 0;    // 0: = batch_size (no accumulation)
  std::int64_t bptt = 70;
  std::int64_t max_delta = 40;          // cap on window length: bptt + max_delta (the reference code's 40)
  // Transformer training (docs/training.md). nil everywhere is the AWD-LSTM's protocol, and a run
  // stored before these options existed resumes under it.
  std::optional<std::string> windows;   // "fixed": every window bptt long; nil/"variable": AWD-LSTM's draws
  std::optional<std::string> schedule;  // "cosine" or "inverse_sqrt" (lr_schedule.h); nil/"constant": none
  std::optional<std::int64_t> warmup;   // linear warm-up steps (nil: 0)
  std::optional<double> min_lr;         // the cosine's floor (nil: 0)
  std::int64_t epochs = 1;
  std::string switch_policy = "nt";     // "nt", "et" or "none"
  std::int64_t nonmono = 5;
  std::int64_t switch_epoch = 200;
  std::int64_t finetune_epochs = 0;     // > 0: a finetune stage of at most this many epochs
  // The finetune stage's rate, constant (no schedule), as finetune.py's --lr (the MoS README: 25 after
  // 20 on PTB, 20 after 15 on WikiText-2); nil: lr, as AWD-LSTM's README runs finetune.py.
  std::optional<double> finetune_lr;
  // A run directory (its best.ckpt) or a checkpoint file whose weights this run starts from (a new
  // run: its own history, its own best); nil: the model as given.
  std::optional<std::string> init_from;
  std::optional<double> flood;          // flood level b
  std::int64_t eval_batch_size = 10;
  std::int64_t test_batch_size = 1;
  std::int64_t log_interval = 200;      // steps between metrics lines
  std::uint64_t seed = 141;
  double max_seconds = 0;               // wall-time budget of the run (all sessions); 0: none
  bool test = true;                     // evaluate the best model on the test split at the end
  // The metrics as TensorBoard event files in the run directory too (tensorboard_writer.h); nil:
  // $LMKIT_TENSORBOARD decides (1: yes).
  std::optional<bool> log_tensorboard;
  // Steps whose numbers (loss, norm) may still be on their way to the host while the next runs
  // (nil: 1 on a GPU, 0 on the CPU, where there is nothing to overlap). Results do not depend on it;
  // on_step, the progress line and a divergence are seen that many steps later.
  std::optional<std::int64_t> steps_in_flight;
  // CUDA graphs of the training step (step_graphs.h): "auto" captures each window length's step
  // once and replays it where the step qualifies (a CUDA device, lmkit's CUDA support, SGD or
  // ASGD without an lr schedule, a head written in C++), "on" requires them, "off" launches every step,
  // "rehearse" replays on any device by running the captured step's function again (a check).
  // The default stays "off" until CudaGraphTest has passed on a GPU (issue 37).
  std::string cuda_graphs = "off";
};


// The schema behind the conversions (for docs and front ends).
const config::OptionSchema& train_options_schema();

// Options ⇄ JSON. from_json rejects unknown keys, wrong types and values out of range
// (ConfigError naming the key); null or a missing key is the default.
nlohmann::json to_json(const TrainOptions& options);
TrainOptions train_options_from_json(const nlohmann::json& json);

// The options of a run of `model` as lmkit.train resolves them: those `given` (JSON, as from_json),
// then, for each one not given, the model's encoder's training default
// (EncoderImpl::training_defaults: a Transformer's AdamW protocol), then TrainOptions' own.
TrainOptions train_options_for(const LanguageModel& model, const nlohmann::json& given);

// Options built in C++: the schema's checks (ConfigError) and those across options (UsageError:
// small_batch_size must divide batch_size; a finetune stage needs optimizer "sgd").
void check_train_options(const TrainOptions& options);

// A switch the run's length cannot reach, said before hours are spent; nullopt when it is reachable.
std::optional<std::string> switch_warning(const TrainOptions& options);
// The warning for a bptt below AWD-LSTM's shortest window (5 tokens), or nothing: the shortest
// window is lowered to bptt, but a length drawn with sd 5 still scales the rate several-fold.
std::optional<std::string> window_warning(const TrainOptions& options);

}  // namespace lmkit::training
