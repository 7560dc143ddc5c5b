#include "runtime/training/train_options.h"

#include <limits>

#include <fmt/format.h>

#include "runtime/config/bound_options.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/training/switch_policy.h"

namespace lmkit::training {
namespace {

using config::Range;
using nlohmann::json;

const config::BoundOptions<TrainOptions>& bound() {
  static const config::BoundOptions<TrainOptions> table = [] {
    return config::BoundOptions<TrainOptions>("training", {
        {"lr", &TrainOptions::lr, Range::positive(), "learning rate (SGD, and ASGD after the switch)"},
        {"optimizer", &TrainOptions::optimizer, config::OneOf{{"sgd", "adam", "adamw"}}, "\"sgd\" (switches to ASGD by the policy), \"adam\" or \"adamw\" (decoupled weight decay, none on biases and norms)"},
        {"wdecay", &TrainOptions::wdecay, Range::non_negative(), "weight decay"},
        {"clip", &TrainOptions::clip, Range::non_negative(), "gradient-norm clipping (0: off)"},
        {"own_lr", &TrainOptions::own_lr, Range::positive(), "learning rate of a head's own-lr parameters (PLIF's slopes); nil: the head's own rate under SGD, the main lr under adam/adamw"},
        {"batch_size", &TrainOptions::batch_size, Range::at_least(1), "columns of the training stream"},
        {"small_batch_size", &TrainOptions::small_batch_size, Range::non_negative(), "columns per chunk of gradient accumulation (0: batch_size, no accumulation)"},
        {"bptt", &TrainOptions::bptt, Range::at_least(1), "mean BPTT window length"},
        {"max_delta", &TrainOptions::max_delta, Range::any(), "windows are at most bptt + max_delta long"},
        {"windows", &TrainOptions::windows, config::OneOf{{"variable", "fixed"}}, "\"fixed\": every window bptt tokens (Transformers); nil: AWD-LSTM's random lengths"},
        {"schedule", &TrainOptions::schedule, config::OneOf{{"constant", "cosine", "inverse_sqrt"}}, "learning-rate schedule after the warm-up; nil: constant"},
        {"warmup", &TrainOptions::warmup, Range::non_negative(), "steps of linear learning-rate warm-up (nil: none)"},
        {"min_lr", &TrainOptions::min_lr, Range::non_negative(), "the cosine schedule's final rate (nil: 0)"},
        {"epochs", &TrainOptions::epochs, Range::non_negative(), "epochs of the main stage"},
        {"switch", &TrainOptions::switch_policy, config::OneOf{{"nt", "et", "none"}}, "when SGD becomes ASGD: \"nt\" (non-monotone trigger), \"et\" (after switch_epoch), \"none\""},
        {"nonmono", &TrainOptions::nonmono, Range::non_negative(), "NT's window of earlier epochs"},
        {"switch_epoch", &TrainOptions::switch_epoch, Range::at_least(1), "ET averages after this epoch"},
        {"finetune_epochs", &TrainOptions::finetune_epochs, Range::non_negative(), "epochs of the finetune stage (0: none): AWD-LSTM's finetune.py, ASGD restarted from the best model; needs optimizer \"sgd\""},
        {"finetune_lr", &TrainOptions::finetune_lr, Range::positive(), "learning rate of the finetune stage, constant (no schedule); nil: lr"},
        {"init_from", &TrainOptions::init_from, "a run directory (its best model) or a checkpoint file whose weights start this new run, e.g. to finetune a finished run in a run of its own (epochs = 0, finetune_epochs = N); nil: the model as given"},
        {"flood", &TrainOptions::flood, Range::non_negative(), "flood level b of the training NLL (nil: no flooding)"},
        {"eval_batch_size", &TrainOptions::eval_batch_size, Range::at_least(1), "columns for validation"},
        {"test_batch_size", &TrainOptions::test_batch_size, Range::at_least(1), "columns for the test"},
        {"log_interval", &TrainOptions::log_interval, Range::at_least(1), "steps between metrics lines"},
        {"seed", &TrainOptions::seed, Range::non_negative(), "seed of every random draw of the run"},
        {"max_seconds", &TrainOptions::max_seconds, Range::non_negative(), "wall-time budget of the run over all its sessions (0: none)"},
        {"test", &TrainOptions::test, Range::any(), "evaluate the best model on the test split at the end"},
        {"log_tensorboard", &TrainOptions::log_tensorboard, "the metrics as TensorBoard event files in the run directory too (tensorboard --logdir runs); nil: LMKIT_TENSORBOARD=1 turns them on"},
        {"steps_in_flight", &TrainOptions::steps_in_flight, Range{0.0, 8.0, false, false},
         "steps whose loss and norm may still be on their way to the host while the next runs (nil: 1 on a GPU, 0 on the CPU); results do not depend on it, on_step and a divergence come that many steps later"},
        {"cuda_graphs", &TrainOptions::cuda_graphs, config::OneOf{{"auto", "on", "off", "rehearse"}},
         "CUDA graphs of the training step (default \"off\" until verified on a GPU): \"auto\" replays each window length's captured step where the step qualifies (CUDA, SGD or ASGD, no lr schedule, a head written in C++), \"on\" requires them, \"off\" launches every step; \"rehearse\" replays by running the step's function again, on any device (a check that a step reads only its own buffers); results are the same bits"},
    });
  }();
  return table;
}

}  // namespace

const config::OptionSchema& train_options_schema() { return bound().schema(); }

json to_json(const TrainOptions& o) { return bound().to_json(o); }

TrainOptions train_options_from_json(const json& j) { return bound().from_json(j); }

TrainOptions train_options_for(const LanguageModel& model, const json& given) {
  if (!given.is_object()) return train_options_from_json(given);  // from_json names the problem
  auto options = model->encoder->training_defaults(given);
  for (const auto& item : given.items()) options[item.key()] = item.value();
  return train_options_from_json(options);
}

namespace {

// A rate or coefficient reaches float32 tensors (the weights' dtype, as a rule): beyond float32's
// range it overflows there (Torch: "value cannot be converted to type float without overflow",
// naming no option), and a rate below its smallest normal number trains nothing.
void check_float32_range(const char* name, double value, bool rate) {
  const double largest = std::numeric_limits<float>::max(), smallest = std::numeric_limits<float>::min();
  if (value > largest) {
    throw UsageError(fmt::format("training option '{}' = {} is beyond float32's range (at most {:.7g}), the weights' "
                                 "dtype: give a value the training can compute with",
                                 name, describe_number(value), largest));
  }
  if (rate && value < smallest) {
    throw UsageError(fmt::format("training option '{}' = {} is below float32's smallest normal number ({:.7g}): "
                                 "a step of that rate changes no weight (the run would train nothing)",
                                 name, describe_number(value), smallest));
  }
}

// The finetune stage is AWD-LSTM's finetune.py: averaged SGD restarted from the best weights, with
// SGD's coupled weight decay. After Adam or AdamW it has no defined meaning (which rate, which
// decay, whose moments?), so it is refused rather than run as ASGD with the adaptive run's settings.
void check_finetune_options(const TrainOptions& o) {
  if (o.optimizer == "sgd") return;
  const bool stage = o.finetune_epochs > 0;
  if (!stage && !o.finetune_lr) return;
  throw UsageError(fmt::format(
      "training option '{}' = {} needs optimizer = \"sgd\", and this run's is \"{}\": the finetune stage is "
      "AWD-LSTM's finetune.py (averaged SGD restarted from the best model), which has no meaning after {}. "
      "Train more epochs instead, or finetune its best model in a run of its own: init_from = <this run's "
      "directory>, optimizer = \"sgd\", epochs = 0, finetune_epochs = N, finetune_lr = <an SGD rate>",
      stage ? "finetune_epochs" : "finetune_lr",
      stage ? integer_text(o.finetune_epochs) : describe_number(*o.finetune_lr), o.optimizer,
      o.optimizer == "adam" ? "Adam" : "AdamW"));
}

}  // namespace

void check_train_options(const TrainOptions& o) {
  train_options_schema().read(to_json(o));
  check_float32_range("lr", o.lr, true);
  if (o.own_lr) check_float32_range("own_lr", *o.own_lr, true);
  if (o.finetune_lr) check_float32_range("finetune_lr", *o.finetune_lr, true);
  check_float32_range("wdecay", o.wdecay, false);
  check_float32_range("clip", o.clip, false);
  if (o.min_lr) check_float32_range("min_lr", *o.min_lr, false);
  if (o.flood) check_float32_range("flood", *o.flood, false);
  if (o.min_lr && *o.min_lr > o.lr) {
    throw UsageError(fmt::format("training option 'min_lr' = {} is above lr = {}: the schedule's floor must not exceed "
                                 "its starting rate (the cosine would raise the rate {:.3g}x instead of decaying it)",
                                 describe_number(*o.min_lr), describe_number(o.lr), *o.min_lr / o.lr));
  }
  const auto small = o.small_batch_size == 0 ? o.batch_size : o.small_batch_size;
  if (o.batch_size % small != 0) {
    throw UsageError("training option 'small_batch_size' (" + integer_text(small) + ") must divide batch_size (" +
                     integer_text(o.batch_size) + ")");
  }
  SwitchPolicy(o.switch_policy, o.nonmono, o.switch_epoch);  // validates
  check_finetune_options(o);
}

std::optional<std::string> window_warning(const TrainOptions& o) {
  if (o.windows.value_or("variable") == "variable" && o.bptt < 5) {
    return fmt::format("bptt={} with AWD-LSTM's random window lengths (a normal draw of sd 5 tokens around bptt): "
                       "windows of typically 1 to {} tokens, each step's rate scaled by its length / bptt (up to {}x); for "
                       "windows this short use windows=\"fixed\"",
                       o.bptt, o.bptt + 10, o.bptt + 10);
  }
  return std::nullopt;
}

std::optional<std::string> switch_warning(const TrainOptions& o) {
  if (o.switch_policy == "et" && o.switch_epoch >= o.epochs) {
    // switch_epoch is at least 1: a one-epoch run has no epoch after any switch.
    const auto advice = o.epochs >= 2 ? fmt::format("set switch_epoch below {}", o.epochs)
                                      : std::string("train 2 epochs or more to average, or set switch=\"none\"");
    return fmt::format("switch=\"et\" averages from the epoch after switch_epoch={}, but the run has epochs={}: "
                       "it will never switch to ASGD ({})",
                       o.switch_epoch, o.epochs, advice);
  }
  // NT compares an epoch's loss with more than nonmono earlier ones: its first chance is after
  // epoch nonmono + 2, and averaging then needs one more epoch.
  // (Written so that no sum overflows: nonmono may be any non-negative 64-bit integer.)
  if (o.switch_policy == "nt" && o.nonmono > o.epochs - 3) {
    const std::string first = o.nonmono <= std::numeric_limits<std::int64_t>::max() - 2
                                  ? integer_text(o.nonmono + 2)
                                  : "nonmono + 2";
    return fmt::format("switch=\"nt\" with nonmono={} can first switch after epoch {}, but the run has epochs={}: "
                       "it will never average (lower nonmono, or use switch=\"et\" with a switch_epoch)",
                       o.nonmono, first, o.epochs);
  }
  return std::nullopt;
}

}  // namespace lmkit::training
