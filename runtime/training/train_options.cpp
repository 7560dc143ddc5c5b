#include "runtime/training/train_options.h"

#include <limits>

#include <fmt/format.h>

#include "runtime/config/bound_options.h"
#include "runtime/core/error.h"
#include "runtime/core/number_text.h"
#include "runtime/training/switch_policy.h"

namespace lmkit::training {
namespace {

using config::member;
using config::OptionSpec;
using config::OptionType;
using config::Range;
using nlohmann::json;

const config::BoundOptions<TrainOptions>& bound() {
  static const config::BoundOptions<TrainOptions> table = [] {
    const TrainOptions d;
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(); };
    return config::BoundOptions<TrainOptions>("training", {
        member({"lr", OptionType::Number, d.lr, Range::positive(), "learning rate (SGD, and ASGD after the switch)"},
             &TrainOptions::lr),
        member(OptionSpec("optimizer", OptionType::String, d.optimizer, Range::any(),
                        "\"sgd\" (switches to ASGD by the policy) or \"adam\"")
                 .one_of({"sgd", "adam"}),
             &TrainOptions::optimizer),
        member({"wdecay", OptionType::Number, d.wdecay, Range::non_negative(), "weight decay"}, &TrainOptions::wdecay),
        member({"clip", OptionType::Number, d.clip, Range::non_negative(), "gradient-norm clipping (0: off)"},
             &TrainOptions::clip),
        member(OptionSpec("own_lr", OptionType::Number, opt(d.own_lr), Range::positive(),
                        "learning rate of a head's own-lr parameters (PLIF's slopes); nil: the head's own rate")
                 .or_null(),
             &TrainOptions::own_lr),
        member({"batch_size", OptionType::Integer, d.batch_size, Range::at_least(1), "columns of the training stream"},
             &TrainOptions::batch_size),
        member({"small_batch_size", OptionType::Integer, d.small_batch_size, Range::non_negative(),
              "columns per chunk of gradient accumulation (0: batch_size, no accumulation)"},
             &TrainOptions::small_batch_size),
        member({"bptt", OptionType::Integer, d.bptt, Range::at_least(1), "mean BPTT window length"}, &TrainOptions::bptt),
        member({"max_delta", OptionType::Integer, d.max_delta, Range::any(), "windows are at most bptt + max_delta long"},
             &TrainOptions::max_delta),
        member({"epochs", OptionType::Integer, d.epochs, Range::non_negative(), "epochs of the main stage"},
             &TrainOptions::epochs),
        member(OptionSpec("switch", OptionType::String, d.switch_policy, Range::any(),
                        "when SGD becomes ASGD: \"nt\" (non-monotone trigger), \"et\" (after switch_epoch), \"none\"")
                 .one_of({"nt", "et", "none"}),
             &TrainOptions::switch_policy),
        member({"nonmono", OptionType::Integer, d.nonmono, Range::non_negative(), "NT's window of earlier epochs"},
             &TrainOptions::nonmono),
        member({"switch_epoch", OptionType::Integer, d.switch_epoch, Range::at_least(1), "ET averages after this epoch"},
             &TrainOptions::switch_epoch),
        member({"finetune_epochs", OptionType::Integer, d.finetune_epochs, Range::non_negative(),
              "epochs of the finetune stage (0: none)"},
             &TrainOptions::finetune_epochs),
        member(OptionSpec("flood", OptionType::Number, opt(d.flood), Range::non_negative(),
                        "flood level b of the training NLL (nil: no flooding)")
                 .or_null(),
             &TrainOptions::flood),
        member({"eval_batch_size", OptionType::Integer, d.eval_batch_size, Range::at_least(1), "columns for validation"},
             &TrainOptions::eval_batch_size),
        member({"test_batch_size", OptionType::Integer, d.test_batch_size, Range::at_least(1), "columns for the test"},
             &TrainOptions::test_batch_size),
        member({"log_interval", OptionType::Integer, d.log_interval, Range::at_least(1), "steps between metrics lines"},
             &TrainOptions::log_interval),
        member({"seed", OptionType::Integer, d.seed, Range::non_negative(), "seed of every random draw of the run"},
             &TrainOptions::seed),
        member({"max_seconds", OptionType::Number, d.max_seconds, Range::non_negative(),
              "wall-time budget of the run over all its sessions (0: none)"},
             &TrainOptions::max_seconds),
        member({"test", OptionType::Boolean, d.test, Range::any(), "evaluate the best model on the test split at the end"},
             &TrainOptions::test),
    });
  }();
  return table;
}

}  // namespace

const config::OptionSchema& train_options_schema() { return bound().schema(); }

json to_json(const TrainOptions& o) { return bound().to_json(o); }

TrainOptions train_options_from_json(const json& j) { return bound().from_json(j); }

void check_train_options(const TrainOptions& o) {
  train_options_schema().read(to_json(o));
  const auto small = o.small_batch_size == 0 ? o.batch_size : o.small_batch_size;
  if (o.batch_size % small != 0) {
    throw UsageError("training option 'small_batch_size' (" + integer_text(small) + ") must divide batch_size (" +
                     integer_text(o.batch_size) + ")");
  }
  SwitchPolicy(o.switch_policy, o.nonmono, o.switch_epoch);  // validates
}

std::optional<std::string> switch_warning(const TrainOptions& o) {
  if (o.switch_policy == "et" && o.switch_epoch >= o.epochs) {
    return fmt::format("switch=\"et\" averages from the epoch after switch_epoch={}, but the run has epochs={}: "
                       "it will never switch to ASGD (set switch_epoch below {})",
                       o.switch_epoch, o.epochs, o.epochs);
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
