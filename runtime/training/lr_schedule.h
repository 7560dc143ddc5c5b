// Learning-rate schedules for Transformer training (beside AWD-LSTM's constant rate with its
// per-window seq_len/bptt scaling, which they multiply). A pure function of the optimizer step, so
// a resumed run continues on the same curve. With w = warmup steps, s = steps done (0-based), T = the
// schedule's length in steps and lr, lr_min the training options' rates:
//   warm-up (s < w):  lr·(s + 1)/w
//   "cosine":         lr_min + (lr − lr_min)·(1 + cos(π·min(1, (s − w)/(T − w))))/2
//   "inverse_sqrt":   lr·√(max(w, 1)/(s + 1))            (Vaswani et al. 2017, after the warm-up)
//   "constant":       lr
#pragma once
#include <cstdint>
#include <string>

namespace lmkit::training {

struct LrSchedule {
  std::string kind = "constant";  // "constant", "cosine" or "inverse_sqrt"
  std::int64_t warmup = 0;
  double lr = 1.0;
  double min_lr = 0.0;
  std::int64_t total_steps = 1;  // T (cosine); at least warmup + 1
};

// The rate of step s (0-based: the step about to be taken).
double scheduled_lr(const LrSchedule& schedule, std::int64_t step);

}  // namespace lmkit::training
