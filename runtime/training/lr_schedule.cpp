#include "runtime/training/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace lmkit::training {

double scheduled_lr(const LrSchedule& s, std::int64_t step) {
  const auto done = static_cast<double>(step);
  if (s.warmup > 0 && step < s.warmup) return s.lr * (done + 1) / static_cast<double>(s.warmup);
  if (s.kind == "cosine") {
    const auto span = static_cast<double>(std::max<std::int64_t>(1, s.total_steps - s.warmup));
    const double progress = std::min(1.0, (done - static_cast<double>(s.warmup)) / span);
    return s.min_lr + (s.lr - s.min_lr) * 0.5 * (1 + std::cos(M_PI * progress));
  }
  if (s.kind == "inverse_sqrt") {
    return s.lr * std::sqrt(static_cast<double>(std::max<std::int64_t>(s.warmup, 1)) / (done + 1));
  }
  return s.lr;
}

}  // namespace lmkit::training
