#include "runtime/training/divergence_warning.h"

#include <cmath>

#include <fmt/format.h>

#include "runtime/core/number_text.h"

namespace lmkit::training {

std::string divergence_warning(double train_loss, std::int64_t vocab_size, const std::string& epoch_name,
                               const TrainOptions& options, bool head_has_own_rate) {
  // NaN: an epoch without steps (a non-finite step loss stops the run before its epoch ends).
  if (vocab_size < 1 || std::isnan(train_loss)) return "";
  const double uniform = std::log(static_cast<double>(vocab_size));
  if (std::isfinite(train_loss) && train_loss <= uniform + kDivergenceMarginNats) return "";
  const std::string ppl = std::isfinite(train_loss) ? fmt::format("{:.3g}", std::exp(train_loss)) : describe_number(train_loss);
  std::string text = "training is diverging: the " + epoch_name + " train ppl " + ppl +
                     " is more than 100 times the uniform model's (" + integer_text(vocab_size) +
                     ", the vocabulary's size), so the model is far worse than guessing. Ways out: a lower lr (lr = " +
                     fmt::format("{:g}", options.lr / 2) + ", half of " + fmt::format("{:g}", options.lr) + ")";
  text += options.clip > 0 ? ", a tighter clip (clip = " + fmt::format("{:g}", options.clip / 2) + ", now " +
                                 fmt::format("{:g}", options.clip) + ")"
                           : ", gradient clipping (clip = 0.25; it is off)";
  if (head_has_own_rate) {
    text += ", or a lower rate for the head's own parameters (own_lr = " +
            fmt::format("{:g}", options.own_lr.value_or(options.lr) / 10) + ")";
  }
  return text + ". The run goes on; the best model so far is kept in best.ckpt.";
}

}  // namespace lmkit::training
