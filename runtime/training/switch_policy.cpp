#include "runtime/training/switch_policy.h"

#include <algorithm>

#include "runtime/core/error.h"
#include "runtime/core/number_text.h"

namespace lmkit::training {

bool non_monotone_trigger(const std::vector<double>& history, double loss, std::int64_t nonmono) {
  const auto n = static_cast<std::int64_t>(history.size());
  if (n <= nonmono) return false;
  const double best_before = *std::min_element(history.begin(), history.begin() + (n - nonmono));
  return loss > best_before;
}

SwitchPolicy::SwitchPolicy(std::string kind, std::int64_t nonmono, std::int64_t switch_epoch)
    : kind_(std::move(kind)), nonmono_(nonmono), switch_epoch_(switch_epoch) {
  if (kind_ != "nt" && kind_ != "et" && kind_ != "none") {
    throw UsageError("switch: unknown policy '" + kind_ + "' (use \"nt\", \"et\" or \"none\")");
  }
  if (nonmono_ < 0) throw UsageError("nonmono must be ≥ 0, got " + integer_text(nonmono_));
  if (switch_epoch_ < 1) throw UsageError("switch_epoch must be ≥ 1, got " + integer_text(switch_epoch_));
}

bool SwitchPolicy::observe(std::int64_t epoch, double valid_loss) {
  bool fire = false;
  if (kind_ == "nt") fire = non_monotone_trigger(history_, valid_loss, nonmono_);
  if (kind_ == "et") fire = epoch == switch_epoch_;
  history_.push_back(valid_loss);
  return fire;
}

}  // namespace lmkit::training
